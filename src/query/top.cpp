#include "memsnap/query/top.h"

#include <utility>

#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs TopNeeds(const TopRequest& request) {
  analysis::TimelineOptions to;
  to.device = request.device;
  to.keep = analysis::KeepLifetimes::kLiveAt;  // only the lifetimes live at the moment
  to.moment = request.at.moment;
  to.curve = false;
  return NeedsTimeline(to);
}

absl::StatusOr<TopResult> TopQuery(const TopRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl, session.TimelineFor(*TopNeeds(request).timeline));
  const Snapshot& snap = session.snapshot();
  RETURN_IF_ERROR(ResolveMomentArg(request.at, snap, *tl).status());
  TopResult r;
  r.file = session.path();
  r.at = request.at;
  ASSIGN_OR_RETURN(r.report, analysis::GroupLive(snap, *tl, request.at.moment, request.group));
  if (request.folded) {
    // Flame graphs need whole stacks, whatever the table is grouped by.
    if (request.group.by == analysis::GroupBy::kStack) {
      r.stacks = r.report;
    } else {
      analysis::GroupOptions by_stack = request.group;
      by_stack.by = analysis::GroupBy::kStack;
      ASSIGN_OR_RETURN(r.stacks, analysis::GroupLive(snap, *tl, request.at.moment, by_stack));
    }
  }
  r.rows = r.report.rows;
  if (request.top > 0) analysis::CollapseTail(r.rows, request.top);
  return r;
}

absl::StatusOr<TopRanksResult> TopRanksQuery(const TopRequest& request,
                                             const std::vector<InputFile>& files,
                                             const ReadSettings& settings) {
  LeftOut left_out;
  ASSIGN_OR_RETURN(
      PerFile<analysis::RankFigures> results,
      ForEachFile<analysis::RankFigures>(
          files, NeedsTimeline(analysis::TopRankTimelineOptions(request.at.moment, request.device)),
          settings,
          [&](Session& s) -> absl::StatusOr<analysis::RankFigures> {
            return analysis::TopRankFigures(s.snapshot(), s.timeline_status(), request.at.moment,
                                            request.at.text, request.group);
          },
          &left_out));
  TopRanksResult r;
  r.at = request.at;
  r.by = request.group.by;
  std::vector<analysis::RankFigures> figures;
  for (auto& [path, f] : results) figures.push_back(std::move(f));
  r.ranks = analysis::CompareRanks(std::move(figures));
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
