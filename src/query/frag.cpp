#include "memsnap/query/frag.h"

#include <utility>

#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs FragNeeds() {
  analysis::TimelineOptions to;
  to.keep = analysis::KeepLifetimes::kNone;
  to.curve = false;
  return NeedsTimeline(to);
}

absl::StatusOr<analysis::FragReport> FragQuery(const FragRequest& request, Session& session) {
  const Snapshot& snap = session.snapshot();
  const analysis::Timeline* tl = nullptr;
  if (!snap.events.empty()) {
    ASSIGN_OR_RETURN(tl, session.TimelineFor(*FragNeeds().timeline));
  }
  analysis::FragOptions options = request.options;
  options.categories = session.categories();
  ASSIGN_OR_RETURN(analysis::FragReport report, analysis::AnalyzeFragmentation(snap, options, tl));
  // The answer's `fix` line: each candidate setting replayed on every device's trace (on a dump
  // without one, the dumped state placed on the device: the fit oom and check give).
  if (request.replay && request.options.timeline_samples == 0 &&
      (!report.peaks.empty() || !snap.segments.empty())) {
    analysis::FragFixOptions fo;
    fo.candidates = request.candidates;
    fo.start = request.start;
    fo.max_threads = request.threads;
    ASSIGN_OR_RETURN(report.fixes, analysis::FindFragFixes(snap, fo));
    if (const analysis::DeviceFilter device = request.options.device) {
      std::erase_if(report.fixes, [&](const analysis::FragFix& f) { return f.device != *device; });
    }
  }
  return report;
}

absl::StatusOr<FragRanksResult> FragRanksQuery(const FragRequest& request,
                                               const std::vector<InputFile>& files,
                                               const ReadSettings& settings) {
  if (request.options.timeline_samples > 0) {
    return absl::InvalidArgumentError("--timeline takes one file, not several");
  }
  ASSIGN_OR_RETURN(
      PerFile<analysis::FragRank> results,
      ForEachFile<analysis::FragRank>(
          files, FragNeeds(), settings, [&](Session& s) -> absl::StatusOr<analysis::FragRank> {
            const auto& tl = s.timeline_status();
            analysis::FragOptions options = request.options;
            options.categories = s.categories();
            ASSIGN_OR_RETURN(analysis::FragReport report,
                             analysis::AnalyzeFragmentation(
                                 s.snapshot(), options,
                                 tl.ok() && !s.snapshot().events.empty() ? &*tl : nullptr));
            return analysis::FragRankOf(report);
          }));
  std::vector<analysis::FragRank> ranks;
  for (auto& [path, r] : results) ranks.push_back(std::move(r));
  FragRanksResult r;
  r.at = request.options.at_text;
  r.moment = request.options.at;
  r.table = analysis::CompareFragRanks(ranks);
  r.ranks = std::move(ranks);
  return r;
}

}  // namespace memsnap::query
