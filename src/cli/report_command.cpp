// memsnap report FILE [-o report.html]: one self-contained HTML page of the snapshot (zoomable
// timeline with stacked bands, the allocator's state at any moment, sites, replay). With two
// files: the diff page. Flags -> options -> analysis::AnalyzeForReport -> report::BuildReportData.
#include <functional>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/report/html_report.h"
#include "memsnap/util/format.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

namespace {
struct ReportCommandOptions {
  std::vector<std::string> files;
  std::string output;  // default: report.html, or diff.html for two files
  analysis::ReportAnalysisOptions report;
  GroupFlags group;
  bool json = false;
};
}  // namespace

RunFn SetupReport(CLI::App& sub) {
  auto opts = std::make_shared<ReportCommandOptions>();
  sub.add_option("files", opts->files, "One snapshot, or two (before and after) for the diff page")
      ->check(InputPaths())
      ->required()
      ->expected(1, 2);
  sub.add_option("-o,--output", opts->output,
                 "The HTML file to write ('-' = stdout; default report.html, diff.html for two "
                 "files)")
      ->check(OutputPath());
  sub.add_option("--columns", opts->report.lod.columns,
                 "Columns of the whole-trace curve (each keeps its minimum and maximum); every "
                 "zoom level has as many")
      ->capture_default_str()
      ->check(CLI::Range(16, 100000));
  sub.add_option("--bands", opts->report.lod.bands,
                 "Largest lifetimes drawn as their own band (by bytes x duration) in each stretch "
                 "of the trace; the rest fold into one")
      ->capture_default_str()
      ->check(CLI::Range(0, 5000));
  sub.add_option("--states", opts->report.states.samples,
                 "Moments at which the allocator's state (segment map) is kept, besides the "
                 "peaks and OOMs")
      ->capture_default_str()
      ->check(CLI::Range(2, 5000));
  sub.add_option("--top", opts->report.top_sites, "Rows of the site tables (0 = all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  // One value per --replay, so `--replay A --replay B FILE` leaves FILE to the positionals.
  sub.add_option("--replay", opts->report.replay_confs,
                 "Also replay the trace under this PYTORCH_CUDA_ALLOC_CONF string and draw its "
                 "reserved curve (repeat the flag for more)")
      ->allow_extra_args(false);
  AddGroupFlags(sub, opts->group, /*grouping=*/false);
  sub.add_flag("--json", opts->json, "Print the page's data as JSON instead of writing HTML");
  sub.footer(
      "The page needs no network: open it from disk in any browser. Zoom with the wheel or a\n"
      "drag, double-click to reset; hover a band for its size, lifetime and stack; click the\n"
      "timeline to see the allocator's segments at that moment.\n\n"
      "Examples:\n"
      "  memsnap report snap.pickle -o report.html\n"
      "  memsnap report before.pickle after.pickle -o diff.html\n"
      "  memsnap report snap.pickle --bands 500 --python-only\n"
      "  memsnap report snap.pickle --replay expandable_segments:True --replay "
      "max_split_size_mb:128");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(opts->report.group, opts->group.Resolve());
    const bool diff = opts->files.size() == 2;
    if (diff && !opts->report.replay_confs.empty()) {
      return absl::InvalidArgumentError("--replay: only with one file");
    }
    ProgressOptions popts = ProgressOptions::Default();
    popts.enabled = !ctx.quiet;
    Context quiet_ctx = ctx;
    quiet_ctx.progress = false;  // this command draws its own progress line
    ProgressBar bar(absl::StrCat("report: reading ", opts->files[0]), 0, popts);
    bar.StartTicker();
    std::vector<query::Session> sessions;
    for (const std::string& path : opts->files) {
      bar.SetLabel(absl::StrCat("report: reading ", path));
      ScopedTimer timer("read");
      ASSIGN_OR_RETURN(query::Session session, OpenSession(path, query::Needs{}, quiet_ctx));
      sessions.push_back(std::move(session));
    }
    std::vector<std::reference_wrapper<const Snapshot>> snaps;
    for (const query::Session& s : sessions) snaps.push_back(s.snapshot());
    bar.SetLabel("report: analyzing");
    nlohmann::ordered_json data;
    {
      ScopedTimer timer("analyze");
      if (diff) {
        ASSIGN_OR_RETURN(
            analysis::DiffReportAnalysis a,
            analysis::AnalyzeDiffForReport(snaps[0].get(), snaps[1].get(), opts->report));
        data = report::BuildDiffData(snaps[0].get(), snaps[1].get(), a, opts->report.top_sites);
      } else {
        ASSIGN_OR_RETURN(analysis::ReportAnalysis a,
                         analysis::AnalyzeForReport(snaps[0].get(), opts->report));
        data = report::BuildReportData(snaps[0].get(), a);
      }
    }
    bar.Finish();
    if (opts->json) {
      PrintJson(data, ctx);
      return ExitCode::kOk;
    }
    std::string output = opts->output.empty() ? (diff ? "diff.html" : "report.html") : opts->output;
    int64_t written = 0;
    {
      ScopedTimer timer("write");
      RETURN_IF_ERROR(WriteOutput(
          output, ctx,
          [&](std::ostream& out) {
            std::streampos begin = out.tellp();
            report::WriteHtmlPage(data, out);
            if (begin >= 0) written = static_cast<int64_t>(out.tellp() - begin);
            return absl::OkStatus();
          },
          "--output"));
    }
    if (!ctx.quiet && output != "-") {
      if (!ctx.quiet) *ctx.err << "wrote " << output << " (" << FormatBytes(written) << ")\n";
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
