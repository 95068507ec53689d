// memsnap blocks FILE: live blocks at a moment (or every lifetime with --all) as a table.
#include <memory>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/blocks.h"
#include "memsnap/report/blocks_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

namespace {
struct BlocksCommandOptions {
  std::string file;
  std::string at = "end";
  bool all = false;
  std::string min_size, stream, stack;
  GroupFlags filter;
  StepFlags steps;
  int device = -1;
  int limit = 50;
  bool json = false;
};
}  // namespace

RunFn SetupBlocks(CLI::App& sub) {
  auto opts = std::make_shared<BlocksCommandOptions>();
  sub.add_option("file", opts->file, "Snapshot file")->check(InputPaths())->required();
  sub.add_option("--at", opts->at,
                 "peak | end | event:N | a time since the trace began (+25ms, 1.5s; -5s from its "
                 "end) | a time_us as recorded | step:N (the peak of training step N, from 0; "
                 "step:N:end its end)")
      ->capture_default_str();
  AddStepFlags(sub, opts->steps);
  sub.add_flag("--all", opts->all, "Every block lifetime of the trace, not just the live ones");
  sub.add_option("--min-size", opts->min_size,
                 "Only blocks of at least SIZE requested (e.g. 1MiB)");
  sub.add_option("--stream", opts->stream, "Only blocks on this stream (decimal or 0x hex)");
  sub.add_option("--stack", opts->stack,
                 "Only blocks with a frame 'file:line:function' matching REGEX");
  AddGroupFlags(sub, opts->filter, /*grouping=*/false);
  sub.add_option("--device", opts->device, "Only this device");
  sub.add_option("--limit", opts->limit, "Rows to print (0 = all)")->capture_default_str();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.footer(
      "Classes: in-window (alloc and free in the trace), pre-window (only the free), ghost (live "
      "at\n"
      "the end, never in the trace), open (alloc in the trace, live at the end). Events are "
      "indices\n"
      "into the device's trace; t0 = before the trace, end = still live. Each block's site and\n"
      "category (parameter, gradient, optimizer_state, activation, temporary, input, kv_cache,\n"
      "autocast_cache, state, unknown) are explained in docs/attribution.md; --json gives the "
      "rule\n"
      "that decided the category.\n\n"
      "Examples:\n"
      "  memsnap blocks snap.pickle\n"
      "  memsnap blocks --at peak --min-size 100MiB snap.pickle\n"
      "  memsnap blocks --all --stack 'attention' --json snap.pickle");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    query::BlocksRequest request;
    analysis::BlockQuery& q = request.query;
    q.all = opts->all;
    ASSIGN_OR_RETURN(request.at,
                     MomentFlag("--at", opts->at, &opts->steps, DeviceFlag(opts->device)));
    q.at = request.at.moment;
    ASSIGN_OR_RETURN(std::optional<int64_t> min_size, SizeFlag("--min-size", opts->min_size));
    q.min_size = min_size.value_or(0);
    if (!opts->stream.empty()) {
      int64_t s = 0;
      std::string_view text = opts->stream;
      bool ok = text.starts_with("0x") ? absl::SimpleHexAtoi(Sv(text.substr(2)), &s)
                                       : absl::SimpleAtoi(Sv(text), &s);
      if (!ok)
        return absl::InvalidArgumentError(
            absl::StrCat("--stream ", opts->stream, ": expected an integer"));
      q.stream = s;
    }
    q.stack_regex = opts->stack;
    ASSIGN_OR_RETURN(analysis::GroupOptions g, opts->filter.Resolve());
    q.filter = g.filter;
    if (opts->limit < 0) return absl::InvalidArgumentError("--limit: must be >= 0");
    request.device = DeviceFlag(opts->device);
    // The timeline's event pass runs beside the reader, as in `timeline`.
    ASSIGN_OR_RETURN(query::Session session,
                     OpenSession(opts->file, query::BlocksNeeds(request), ctx));
    ASSIGN_OR_RETURN(analysis::BlocksReport rep, query::BlocksQuery(request, session));
    if (opts->json) {
      PrintJson(report::BlocksToJson(rep, static_cast<size_t>(opts->limit)), ctx);
    } else {
      report::RenderBlocksText(rep, static_cast<size_t>(opts->limit), *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
