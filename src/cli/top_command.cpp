// memsnap top FILE: the largest groups of live memory at a moment (peak by default).
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/top.h"
#include "memsnap/report/top_render.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

namespace {
struct TopCommandOptions {
  std::vector<std::string> files;
  std::string at = "peak";
  GroupFlags group;
  StepFlags steps;
  int top = 20;
  int device = -1;
  bool json = false;
  std::string folded;
};
}  // namespace

RunFn SetupTop(CLI::App& sub) {
  auto opts = std::make_shared<TopCommandOptions>();
  sub.add_option("files", opts->files,
                 "Snapshot file; several files (or a directory of ranks) give a per-rank table")
      ->check(InputPaths())
      ->required();
  sub.add_option("--at", opts->at,
                 "peak | end | event:N | a time since the trace began (+25ms, 1.5s; -5s from its "
                 "end) | a time_us as recorded | step:N (the peak of training step N, from 0; "
                 "step:N:end its end)")
      ->capture_default_str();
  AddStepFlags(sub, opts->steps);
  AddGroupFlags(sub, opts->group, /*grouping=*/true);
  sub.add_option("--top", opts->top,
                 "Rows to show (0 = all); the rest fold into one '[N others]' row (--by module: "
                 "children of each node)")
      ->capture_default_str();
  sub.add_option("--device", opts->device,
                 "Only this device (default: all, each at its own moment)");
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.add_option("--folded", opts->folded,
                 "Write folded stacks (root first, 'a;b;c bytes') to FILE ('-' = stdout) for "
                 "flamegraph.pl, inferno or speedscope")
      ->check(OutputPath());
  sub.footer(
      "Bytes are requested bytes of live blocks. A site is named after the user's frame that\n"
      "allocated (and what it called), backward memory after its autograd node and the forward\n"
      "lines that made such nodes ('DivBackward0 (div) for model.py:12 forward', when C++ frames\n"
      "were recorded); the category says which kind of memory it is (docs/attribution.md). Blocks\n"
      "without a stack are in '[no stack]'.\n\n"
      "Examples:\n"
      "  memsnap top snap.pickle\n"
      "  memsnap top --by category snap.pickle       # parameters, gradients, optimizer state...\n"
      "  memsnap top --by module --depth 2 snap.pickle  # a tree of the model's forward calls\n"
      "  memsnap top --by phase snap.pickle          # forward, backward, optimizer, other\n"
      "  memsnap top --at end --by function --top 10 snap.pickle\n"
      "  memsnap top --at +1.5s snap.pickle       # 1.5 s after the trace began\n"
      "  memsnap top --at step:3 snap.pickle      # the peak of training step 3 (from 0)\n"
      "  memsnap top --python-only --depth 3 snap.pickle\n"
      "  memsnap top --folded - snap.pickle | flamegraph.pl > peak.svg\n"
      "  memsnap top ranks/          # per-rank peak and top site, outliers called out");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    query::TopRequest request;
    ASSIGN_OR_RETURN(request.at,
                     MomentFlag("--at", opts->at, &opts->steps, DeviceFlag(opts->device)));
    ASSIGN_OR_RETURN(request.group, opts->group.Resolve());
    if (opts->top < 0) return absl::InvalidArgumentError("--top: must be >= 0 (0 = all)");
    request.top = static_cast<size_t>(opts->top);
    request.device = DeviceFlag(opts->device);
    request.folded = !opts->folded.empty();
    ASSIGN_OR_RETURN(std::vector<query::InputFile> inputs, query::ExpandInputs(opts->files));
    if (inputs.size() > 1) {
      ASSIGN_OR_RETURN(query::TopRanksResult ranks,
                       query::TopRanksQuery(request, inputs, ReadSettingsOf(ctx)));
      if (opts->json) {
        PrintJson(report::TopRanksToJson(ranks), ctx);
      } else {
        report::RenderTopRanksText(ranks, *ctx.out);
      }
      return ExitCode::kOk;
    }
    ReadAnalysisClock phases;
    ASSIGN_OR_RETURN(query::Session session,
                     OpenSession(inputs[0].path, query::TopNeeds(request), ctx, &phases));
    ASSIGN_OR_RETURN(query::TopResult result, query::TopQuery(request, session));
    if (ctx.timings) phases.Print(*ctx.err, session.timings_note());
    if (request.folded) {
      std::ostringstream folded;
      report::RenderTopFolded(result, folded);
      RETURN_IF_ERROR(WriteOutputFile(opts->folded, folded.str(), ctx));
      if (opts->folded == "-") return ExitCode::kOk;
    }
    if (opts->json) {
      PrintJson(report::TopResultToJson(result), ctx);
    } else {
      report::RenderTopResultText(result, *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
