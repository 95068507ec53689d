// memsnap summary FILE...: counts and totals per device, pool and stream. With several files (one
// per rank, a directory or a glob) they are read in parallel and compared in a per-rank table.
#include <memory>

#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct SummaryCommandOptions {
  std::vector<std::string> files;
  bool json = false;
  bool each = false;  // with several files: print every file's full summary too
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
  sub.footer(
      "One file: also its memory at the peak by category (parameter, gradient, optimizer_state,\n"
      "activation, temporary, input, unknown; docs/attribution.md).\n\n"
      "Examples:\n"
      "  memsnap summary snap.pickle\n"
      "  memsnap summary --json snap.pickle | jq .reserved_bytes\n"
      "  memsnap summary snapshots/          # one file per rank: per-rank table and outliers");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(std::vector<InputFile> inputs, ExpandInputFiles(opts->files));
    if (inputs.size() == 1) {
      // One file: also the categories of the memory live at the peak, from a timeline built
      // while the file is read; the summary's peaks come from the same timeline.
      analysis::TimelineOptions to;
      to.keep = analysis::KeepLifetimes::kLiveAt;
      to.moment = analysis::Moment{analysis::Moment::Kind::kPeak, 0};
      to.curve = true;  // each phase's peak reads the live bytes after every event
      // The timeline's pass also counts what the summary needs (DeviceTimeline::counts).
      ReadAnalysisClock phases;
      ASSIGN_OR_RETURN(SnapshotTimeline loaded, LoadWithTimeline(inputs[0].path, to, ctx, &phases));
      analysis::SummaryOptions so;
      so.threads = ctx.threads;
      so.phase_peaks = true;
      analysis::SummaryReport summary = analysis::Summarize(loaded.snapshot, &loaded.timeline, so);
      ASSIGN_OR_RETURN(std::vector<analysis::DeviceCategories> categories,
                       analysis::CategoriesAt(loaded.snapshot, loaded.timeline, to.moment));
      if (ctx.timings) phases.Print(*ctx.err, loaded.timings_note());
      if (opts->json) {
        nlohmann::ordered_json j = report::SummaryToJson(summary);
        j["categories_at_peak"] = report::CategoriesAtJson(categories);
        PrintJson(j, ctx);
      } else {
        report::RenderSummaryText(summary, *ctx.out);
        report::RenderCategoriesAtText(categories, *ctx.out);
      }
      return ExitCode::kOk;
    }
    analysis::SummaryOptions so;
    so.threads = ThreadsPerFile(ctx, inputs.size());
    LeftOutInputs left_out;
    ASSIGN_OR_RETURN(auto results,
                     AnalyzeEachWithTimeline<analysis::SummaryReport>(
                         inputs, analysis::SummaryTimelineOptions(), ctx,
                         [&](const Snapshot& snap, const absl::StatusOr<analysis::Timeline>& tl)
                             -> absl::StatusOr<analysis::SummaryReport> {
                           return analysis::Summarize(snap, tl.ok() ? &*tl : nullptr, so);
                         },
                         &left_out));
    std::vector<analysis::SummaryReport> reports;
    for (auto& [path, r] : results) reports.push_back(std::move(r));
    const auto& files = reports;
    if (files.size() == 1) {
      if (opts->json) {
        nlohmann::ordered_json j = report::SummaryToJson(reports[0]);
        j["skipped"] = report::LeftOutToJson(left_out.skipped);
        PrintJson(j, ctx);
      } else {
        report::RenderSummaryText(reports[0], *ctx.out, !ctx.quiet);
      }
      return ExitCode::kOk;
    }
    std::vector<analysis::RankFigures> figures;
    for (const auto& r : reports) {
      figures.push_back(analysis::RankFigures{r.source.path, r.totals.reserved_bytes,
                                              r.totals.allocated_bytes, -1, ""});
    }
    analysis::RankTable ranks = analysis::CompareRanks(std::move(figures));
    if (opts->json) {
      nlohmann::ordered_json j;
      j["files"] = nlohmann::ordered_json::array();
      for (const auto& r : reports) j["files"].push_back(report::SummaryToJson(r));
      j["ranks"] = report::RankTableToJson(ranks);
      j["skipped"] = report::LeftOutToJson(left_out.skipped);
      PrintJson(j, ctx);
      return ExitCode::kOk;
    }
    if (opts->each) {
      for (const auto& r : reports) {
        report::RenderSummaryText(r, *ctx.out, !ctx.quiet);
        *ctx.out << "\n";
      }
    }
    report::RenderRankTableText(ranks, *ctx.out);
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
