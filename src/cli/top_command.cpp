// memsnap top FILE: the largest groups of live memory at a moment (peak by default).
#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

namespace {
struct TopCommandOptions {
  std::vector<std::string> files;
  std::string at = "peak";
  GroupFlags group;
  int top = 20;
  int device = -1;
  bool json = false;
  std::string folded;
};
// Many files (one per rank): each file's peak and largest site at the moment, then the outliers.
absl::StatusOr<ExitCode> RunTopRanks(const TopCommandOptions& opts,
                                     const std::vector<InputFile>& inputs,
                                     const analysis::Moment& moment,
                                     const analysis::GroupOptions& group, Context& ctx) {
  std::optional<int32_t> device;
  if (opts.device >= 0) device = opts.device;
  LeftOutInputs left_out;
  ASSIGN_OR_RETURN(auto results,
                   AnalyzeEachWithTimeline<analysis::RankFigures>(
                       inputs, analysis::TopRankTimelineOptions(moment, device), ctx,
                       [&](const Snapshot& snap, const absl::StatusOr<analysis::Timeline>& tl)
                           -> absl::StatusOr<analysis::RankFigures> {
                         return analysis::TopRankFigures(snap, tl, moment, opts.at, group);
                       },
                       &left_out));
  std::vector<analysis::RankFigures> figures;
  for (auto& [path, f] : results) figures.push_back(std::move(f));
  analysis::RankTable ranks = analysis::CompareRanks(std::move(figures));
  if (opts.json) {
    nlohmann::ordered_json j;
    j["at"] = opts.at;
    j["by"] = std::string(analysis::GroupByName(group.by));
    j["ranks"] = report::RankTableToJson(ranks);
    j["skipped"] = report::LeftOutToJson(left_out.skipped);
    PrintJson(j, ctx);
  } else {
    report::RenderRankTableText(ranks, *ctx.out);
  }
  return ExitCode::kOk;
}

}  // namespace

RunFn SetupTop(CLI::App& sub) {
  auto opts = std::make_shared<TopCommandOptions>();
  sub.add_option("files", opts->files,
                 "Snapshot file; several files (or a directory of ranks) give a per-rank table")
      ->check(InputPaths())
      ->required();
  sub.add_option("--at", opts->at,
                 "peak | end | event:N | a time since the trace began (+25ms, 1.5s; -5s from its "
                 "end) | a time_us as recorded")
      ->capture_default_str();
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
      "  memsnap top --python-only --depth 3 snap.pickle\n"
      "  memsnap top --folded - snap.pickle | flamegraph.pl > peak.svg\n"
      "  memsnap top ranks/          # per-rank peak and top site, outliers called out");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    ASSIGN_OR_RETURN(analysis::Moment moment, analysis::ParseMoment(opts->at));
    ASSIGN_OR_RETURN(analysis::GroupOptions group, opts->group.Resolve());
    if (opts->top < 0) return absl::InvalidArgumentError("--top: must be >= 0 (0 = all)");
    ASSIGN_OR_RETURN(std::vector<InputFile> inputs, ExpandInputFiles(opts->files));
    if (inputs.size() > 1) return RunTopRanks(*opts, inputs, moment, group, ctx);
    const std::string& file = inputs[0].path;
    analysis::TimelineOptions to;
    if (opts->device >= 0) to.device = opts->device;
    to.keep = analysis::KeepLifetimes::kLiveAt;
    to.moment = moment;
    to.curve = false;
    ReadAnalysisClock phases;
    ASSIGN_OR_RETURN(SnapshotTimeline loaded, LoadWithTimeline(file, to, ctx, &phases));
    const Snapshot& snap = loaded.snapshot;
    RETURN_IF_ERROR(CheckMomentFlag("--at", opts->at, moment, snap, loaded.timeline));
    ASSIGN_OR_RETURN(analysis::GroupReport rep,
                     analysis::GroupLive(snap, loaded.timeline, moment, group));
    if (ctx.timings) phases.Print(*ctx.err, loaded.timings_note());
    if (!opts->folded.empty()) {
      // Flame graphs need whole stacks, whatever the table is grouped by.
      analysis::GroupReport stacks = rep;
      if (group.by != analysis::GroupBy::kStack) {
        analysis::GroupOptions by_stack = group;
        by_stack.by = analysis::GroupBy::kStack;
        ASSIGN_OR_RETURN(stacks, analysis::GroupLive(snap, loaded.timeline, moment, by_stack));
      }
      std::ostringstream folded;
      report::RenderFolded(stacks.rows, folded);
      RETURN_IF_ERROR(WriteOutputFile(opts->folded, folded.str(), ctx));
      if (opts->folded == "-") return ExitCode::kOk;
    }
    std::vector<analysis::GroupRow> rows = rep.rows;
    if (opts->top > 0) {
      // A module tree keeps the largest children of each node (and its structure).
      if (group.by == analysis::GroupBy::kModule) {
        analysis::CollapseTreeTail(rows, static_cast<size_t>(opts->top));
      } else {
        analysis::CollapseTail(rows, static_cast<size_t>(opts->top));
      }
    }
    if (opts->json) {
      nlohmann::ordered_json j;
      j["file"] = file;
      j["at"] = opts->at;
      j.update(report::GroupToJson(rep, rows));
      PrintJson(j, ctx);
    } else {
      report::RenderGroupText(rep, rows, *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
