#include "memsnap/query/summary.h"

#include <utility>

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs SummaryNeeds() {
  // The categories of the memory live at the peak need the lifetimes live then; the summary's
  // peaks and counts come from the same timeline (DeviceTimeline::counts).
  analysis::TimelineOptions to;
  to.keep = analysis::KeepLifetimes::kLiveAt;
  to.moment = analysis::Moment{analysis::Moment::Kind::kPeak, 0};
  to.curve = false;
  return NeedsTimeline(to);
}

absl::StatusOr<SummaryResult> SummaryQuery(const SummaryRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl, session.TimelineFor(*SummaryNeeds().timeline));
  analysis::SummaryOptions so;
  so.threads = request.threads;
  SummaryResult r;
  r.summary = analysis::Summarize(session.snapshot(), tl, so);
  ASSIGN_OR_RETURN(r.categories_at_peak,
                   analysis::CategoriesAt(session.snapshot(), *tl,
                                          analysis::Moment{analysis::Moment::Kind::kPeak, 0}));
  return r;
}

absl::StatusOr<SummaryRanksResult> SummaryRanksQuery(const std::vector<InputFile>& files,
                                                     const ReadSettings& settings) {
  analysis::SummaryOptions so;
  so.threads = ThreadsPerFile(settings, files.size());
  LeftOut left_out;
  ASSIGN_OR_RETURN(PerFile<analysis::SummaryReport> results,
                   ForEachFile<analysis::SummaryReport>(
                       files, NeedsTimeline(analysis::SummaryTimelineOptions()), settings,
                       [&](Session& s) -> absl::StatusOr<analysis::SummaryReport> {
                         const auto& tl = s.timeline_status();
                         return analysis::Summarize(s.snapshot(), tl.ok() ? &*tl : nullptr, so);
                       },
                       &left_out));
  SummaryRanksResult r;
  for (auto& [path, rep] : results) r.files.push_back(std::move(rep));
  std::vector<analysis::RankFigures> figures;
  for (const auto& f : r.files) {
    figures.push_back(analysis::RankFigures{f.source.path, f.totals.reserved_bytes,
                                            f.totals.allocated_bytes, -1, ""});
  }
  r.ranks = analysis::CompareRanks(std::move(figures));
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
