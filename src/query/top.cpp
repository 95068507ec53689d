#include "memsnap/query/top.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs TopNeeds(const TopRequest& request) {
  analysis::TimelineOptions to;
  to.device = request.device;
  to.keep = analysis::KeepLifetimes::kLiveAt;  // only the lifetimes live at the moment
  to.moment = request.at.moment;
  to.curve = false;
  return NeedsTimeline(TimelineOptionsAt(request.at, to));
}

absl::StatusOr<TopResult> TopQuery(const TopRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl, session.TimelineFor(*TopNeeds(request).timeline));
  const Snapshot& snap = session.snapshot();
  analysis::GroupOptions group = request.group;
  group.categories = session.categories();  // decided and named in the session's categories
  ASSIGN_OR_RETURN(ResolvedMoment at, ResolveMomentArg(request.at, snap, *tl));
  TopResult r;
  r.file = session.path();
  r.at = at.arg;  // a step is now the point it names
  ASSIGN_OR_RETURN(r.report, analysis::GroupLive(snap, *tl, r.at.moment, group));
  r.report.moment_described = r.at.described;
  {  // what kind of run each device's stacks show, said above its rows
    analysis::Attribution attribution(snap, nullptr);
    absl::flat_hash_map<int32_t, analysis::DeviceMoment*> by_device;
    for (analysis::DeviceMoment& dm : r.report.devices) by_device[dm.device] = &dm;
    for (analysis::WorkloadEvidence& w : analysis::DetectWorkloads(attribution)) {
      if (auto it = by_device.find(w.device); it != by_device.end()) it->second->workload = w;
    }
  }
  // Last step's gradients alive in this forward pass: the lever is zero_grad before it.
  ASSIGN_OR_RETURN(std::unique_ptr<analysis::GroupContext> context,
                   analysis::GroupContext::Create(snap, group));
  for (const analysis::DeviceMoment& dm : r.report.devices) {
    const analysis::DeviceTimeline* dt = tl->Find(dm.device);
    if (dt == nullptr) continue;
    if (auto stale = analysis::FindStaleGradients(*context, *dt, dm.event)) {
      r.stale_gradients.push_back(std::move(*stale));
    }
  }
  if (request.folded) {
    // Flame graphs need whole stacks, whatever the table is grouped by.
    if (group.by == analysis::GroupBy::kStack) {
      r.stacks = r.report;
    } else {
      analysis::GroupOptions by_stack = group;
      by_stack.by = analysis::GroupBy::kStack;
      ASSIGN_OR_RETURN(r.stacks, analysis::GroupLive(snap, *tl, r.at.moment, by_stack));
    }
  }
  r.rows = r.report.rows;
  if (request.top > 0) {
    // A module tree keeps the largest children of each node (and its structure).
    if (r.report.options.by == analysis::GroupBy::kModule) {
      analysis::CollapseTreeTail(r.rows, request.top);
    } else {
      analysis::CollapseTail(r.rows, request.top);
    }
  }
  return r;
}

absl::StatusOr<TopRanksResult> TopRanksQuery(const TopRequest& request,
                                             const std::vector<InputFile>& files,
                                             const ReadSettings& settings) {
  if (request.at.step) {
    return absl::InvalidArgumentError(absl::StrCat(
        request.at.flag, " ", request.at.text,
        ": a step moment needs one file (each rank's steps are its own): give one rank"));
  }
  LeftOut left_out;
  ASSIGN_OR_RETURN(
      PerFile<analysis::RankFigures> results,
      ForEachFile<analysis::RankFigures>(
          files, NeedsTimeline(analysis::TopRankTimelineOptions(request.at.moment, request.device)),
          settings,
          [&](Session& s) -> absl::StatusOr<analysis::RankFigures> {
            analysis::GroupOptions group = request.group;
            group.categories = s.categories();
            return analysis::TopRankFigures(s.snapshot(), s.timeline_status(), request.at.moment,
                                            request.at.text, group);
          },
          &left_out));
  TopRanksResult r;
  r.at = request.at;
  r.by = request.group.by;
  std::vector<analysis::RankFigures> figures;
  for (auto& [path, f] : results) figures.push_back(std::move(f));
  r.ranks = analysis::CompareRanks(std::move(figures));
  r.ranks.categories = settings.categories;  // every rank was read with these
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
