#include "memsnap/query/summary.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

namespace {

// --device N: the one device's section and categories, or an error naming the devices there are.
absl::Status KeepDevice(int32_t device, SummaryResult& r) {
  std::vector<analysis::DeviceSummary>& devices = r.summary.devices;
  auto it = std::find_if(devices.begin(), devices.end(),
                         [&](const analysis::DeviceSummary& d) { return d.device == device; });
  if (it == devices.end()) {
    std::string have;
    for (size_t i = 0; i < devices.size() && i < 16; ++i) {
      absl::StrAppend(&have, i == 0 ? "" : ", ", devices[i].device);
    }
    if (devices.size() > 16) absl::StrAppend(&have, ", ... ", devices.size() - 16, " more");
    return absl::InvalidArgumentError(absl::StrCat(
        r.summary.source.path, ": --device ", device,
        ": no such device in this file (devices: ", have.empty() ? "none" : have, ")"));
  }
  analysis::DeviceSummary kept = std::move(*it);
  devices.clear();
  devices.push_back(std::move(kept));
  std::erase_if(r.categories_at_peak,
                [&](const analysis::DeviceCategories& c) { return c.device != device; });
  return absl::OkStatus();
}

}  // namespace

Needs SummaryNeeds() {
  // The categories of the memory live at the peak need the lifetimes live then; the summary's
  // peaks and counts come from the same timeline (DeviceTimeline::counts).
  analysis::TimelineOptions to;
  to.keep = analysis::KeepLifetimes::kLiveAt;
  to.moment = analysis::Moment{analysis::Moment::Kind::kPeak, 0};
  to.curve = true;  // each phase's and each step's peak read the live bytes after every event
  return NeedsTimeline(to);
}

absl::StatusOr<SummaryResult> SummaryQuery(const SummaryRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl, session.TimelineFor(*SummaryNeeds().timeline));
  analysis::SummaryOptions so;
  so.threads = request.threads;
  so.phase_peaks = true;
  so.workload = true;
  SummaryResult r;
  r.summary = analysis::Summarize(session.snapshot(), tl, so);
  ASSIGN_OR_RETURN(r.categories_at_peak,
                   analysis::CategoriesAt(session.snapshot(), *tl,
                                          analysis::Moment{analysis::Moment::Kind::kPeak, 0},
                                          session.categories()));
  r.category_names = session.categories();
  if (request.device) RETURN_IF_ERROR(KeepDevice(*request.device, r));
  return r;
}

absl::StatusOr<SummaryRanksResult> SummaryRanksQuery(const std::vector<InputFile>& files,
                                                     const ReadSettings& settings) {
  analysis::SummaryOptions so;
  so.threads = ThreadsPerFile(settings, files.size());
  // The peaks, and the lifetimes live at the dump: what each rank's memory is made of, which
  // says what makes an outlier differ from the median rank (ExplainOutliers).
  analysis::TimelineOptions to = analysis::SummaryTimelineOptions();
  to.keep = analysis::KeepLifetimes::kLiveAt;
  to.moment = analysis::Moment{analysis::Moment::Kind::kEnd, 0};
  struct Rank {
    analysis::SummaryReport summary;
    analysis::RankProfile profile;
  };
  LeftOut left_out;
  ASSIGN_OR_RETURN(
      PerFile<Rank> results,
      ForEachFile<Rank>(
          files, NeedsTimeline(to), settings,
          [&](Session& s) -> absl::StatusOr<Rank> {
            const auto& tl = s.timeline_status();
            Rank r{analysis::Summarize(s.snapshot(), tl.ok() ? &*tl : nullptr, so), {}};
            if (tl.ok()) {
              auto p = analysis::RankProfileAt(s.snapshot(), *tl, to.moment, s.categories());
              if (p.ok()) r.profile = std::move(*p);
            }
            return r;
          },
          &left_out));
  SummaryRanksResult r;
  std::vector<analysis::RankProfile> profiles;
  for (auto& [path, rank] : results) {
    r.files.push_back(std::move(rank.summary));
    profiles.push_back(std::move(rank.profile));
  }
  std::vector<analysis::RankFigures> figures;
  for (const auto& f : r.files) {
    figures.push_back(analysis::RankFigures{f.source.path, f.totals.reserved_bytes,
                                            f.totals.allocated_bytes, -1, ""});
  }
  r.ranks = analysis::CompareRanks(std::move(figures));
  r.ranks.categories = settings.categories;  // every rank was read with these
  analysis::ExplainOutliers(r.ranks, profiles);
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
