// memsnap summary FILE...: counts and totals per device, pool and stream. With several files (one
// per rank, a directory or a glob) they are read in parallel and compared in a per-rank table.
#include <memory>

#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/query/summary.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct SummaryCommandOptions {
  std::vector<std::string> files;
  bool json = false;
  bool each = false;  // with several files: print every file's full summary too
  int device = -1;    // --device N (DeviceFlag)
};
}  // namespace

RunFn SetupSummary(CLI::App& sub) {
  auto opts = std::make_shared<SummaryCommandOptions>();
  sub.add_option("files", opts->files,
                 "Snapshot files (pickle, JSON, HTML, gzip) or directories of them")
      ->check(InputPaths())
      ->required();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.add_flag("--each", opts->each, "With several files, also print each file's full summary");
  sub.add_option("--device", opts->device,
                 "Only this device's section (past 64 devices the text prints one line per "
                 "device instead of a section each)");
  sub.footer(
      "One file: also its memory at the peak by category (parameter, gradient, optimizer_state,\n"
      "activation, temporary, input, kv_cache, autocast_cache, state, unknown;\n"
      "docs/attribution.md). Past 64 devices the text prints one line per device (segments,\n"
      "reserved, allocated, events, peaks, OOMs) instead of a section each; --device N prints\n"
      "that device's section (--json keeps every device).\n\n"
      "Examples:\n"
      "  memsnap summary snap.pickle\n"
      "  memsnap summary --json snap.pickle | jq .reserved_bytes\n"
      "  memsnap summary --device 3 snap.pickle   # one device's full section\n"
      "  memsnap summary snapshots/          # one file per rank: per-rank table and outliers");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(std::vector<query::InputFile> inputs, query::ExpandInputs(opts->files));
    if (inputs.size() == 1) {
      ReadAnalysisClock phases;
      ASSIGN_OR_RETURN(query::Session session,
                       OpenSession(inputs[0].path, query::SummaryNeeds(), ctx, &phases));
      query::SummaryRequest request;
      request.threads = ctx.threads;
      request.device = DeviceFlag(opts->device);
      ASSIGN_OR_RETURN(query::SummaryResult result, query::SummaryQuery(request, session));
      if (ctx.timings) phases.Print(*ctx.err, session.timings_note());
      if (opts->json) {
        PrintJson(report::SummaryResultToJson(result), ctx);
      } else {
        report::RenderSummaryResultText(result, *ctx.out);
      }
      return ExitCode::kOk;
    }
    if (opts->device >= 0) {
      return absl::InvalidArgumentError(
          "--device: takes one file (the per-rank table has no "
          "device sections)");
    }
    ASSIGN_OR_RETURN(query::SummaryRanksResult result,
                     query::SummaryRanksQuery(inputs, ReadSettingsOf(ctx)));
    if (opts->json) {
      PrintJson(report::SummaryRanksToJson(result), ctx);
    } else {
      report::RenderSummaryRanksText(result, opts->each, !ctx.quiet, *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
