// memsnap summary FILE...: counts and totals per device, pool and stream.
#include <memory>

#include "memsnap/analysis/summary.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct SummaryCommandOptions {
  std::vector<std::string> files;
  bool json = false;
};
}  // namespace

RunFn SetupSummary(CLI::App& sub) {
  auto opts = std::make_shared<SummaryCommandOptions>();
  sub.add_option("files", opts->files, "Snapshot files (pickle, JSON, HTML, gzip) or directories")
      ->required();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.footer(
      "Examples:\n"
      "  memsnap summary snap.pickle\n"
      "  memsnap summary --json snap.pickle | jq .reserved_bytes");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(std::vector<std::string> files, ExpandInputs(opts->files));
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    for (size_t i = 0; i < files.size(); ++i) {
      ASSIGN_OR_RETURN(Snapshot snap, LoadSnapshot(files[i], ctx));
      analysis::SummaryReport report = analysis::Summarize(snap);
      if (opts->json) {
        all.push_back(report::SummaryToJson(report));
      } else {
        if (i > 0) *ctx.out << "\n";
        report::RenderSummaryText(report, *ctx.out);
      }
    }
    if (opts->json) PrintJson(files.size() == 1 ? all[0] : all, ctx);
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
