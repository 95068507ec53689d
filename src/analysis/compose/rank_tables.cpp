#include "memsnap/analysis/compose/rank_tables.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

int64_t RewindWarningCount(const FragReport& report) {
  int64_t n = 0;
  for (const RewindCaveats& c : report.rewind) n += c.count();
  return n;
}

}  // namespace

absl::StatusOr<RankProfile> RankProfileAt(const Snapshot& snap, const Timeline& timeline,
                                          const Moment& moment, const CategoryNames& categories) {
  GroupOptions by_site;
  by_site.by = GroupBy::kSite;
  by_site.categories = categories;
  ASSIGN_OR_RETURN(GroupReport g, GroupLive(snap, timeline, moment, by_site));
  RankProfile p;
  p.known = true;
  for (const GroupRow& r : g.rows) {
    for (int c = 0; c < kNumCategories; ++c) p.by_category[c] += r.category_bytes[c];
    p.sites.push_back({r.key, r.site, DominantCategory(r.category_bytes), r.bytes});
  }
  return p;
}

FragRank FragRankOf(const FragReport& report) {
  FragRank rank{report.source.path,         report.totals, report.external_fragmentation,
                RewindWarningCount(report), std::nullopt,  report.costs.size() > 1};
  // The device fragmentation costs the most, relative to what it reserves.
  std::optional<FragAnswer> worst;
  for (const FragCost& c : report.costs) {
    FragAnswer a = FragAnswerOf(c);
    if (!worst || a.stranded_share > worst->stranded_share) worst = a;
  }
  rank.answer = worst;
  return rank;
}

RankTable CompareFragRanks(const std::vector<FragRank>& ranks, const RankOptions& options) {
  RankTable t;
  struct Column {
    const char* name;
    const char* label;
    int64_t FragFigures::*field;  // nullptr: external fragmentation
    bool call_out;
  };
  // Outliers: how much is free, how much of it empty_cache cannot give back, how scattered.
  const Column columns[] = {
      {"reserved_bytes", "reserved", &FragFigures::reserved_bytes, false},
      {"allocated_bytes", "allocated", &FragFigures::allocated_bytes, false},
      {"free_bytes", "free", &FragFigures::free_bytes, true},
      {"stranded_bytes", "stranded", &FragFigures::stranded_bytes, true},
      {"largest_free_bytes", "largest free", &FragFigures::largest_free_bytes, false},
      {"external_fragmentation", "ext frag", nullptr, true},
  };
  for (const Column& c : columns) {
    RankMetric m;
    m.name = c.name;
    m.label = c.label;
    m.unit = c.field == nullptr ? Unit::kRatio : Unit::kBytes;
    m.call_out = c.call_out;
    for (const FragRank& r : ranks) {
      m.values.push_back(c.field == nullptr ? r.external_fragmentation
                                            : static_cast<double>(r.totals.*c.field));
    }
    t.metrics.push_back(std::move(m));
  }
  for (const FragRank& r : ranks) t.files.push_back(r.file);
  t = CompareMetrics(std::move(t), options);
  // The fragmentation ratio is what `frag` is about: its outliers come first.
  std::stable_partition(t.outliers.begin(), t.outliers.end(),
                        [](const Outlier& o) { return o.metric == "external_fragmentation"; });
  return t;
}

bool CheckRanksReport::passed() const {
  return failed_ranks() == 0 && unreadable.empty() && missing.empty();
}

int CheckRanksReport::failures() const {
  int n = 0;
  for (const auto& r : ranks) n += r.report.failures();
  return n;
}

int CheckRanksReport::checks() const {
  int n = 0;
  for (const auto& r : ranks) n += static_cast<int>(r.report.checks.size());
  return n;
}

int CheckRanksReport::failed_ranks() const {
  return static_cast<int>(std::count_if(ranks.begin(), ranks.end(),
                                        [](const CheckRank& r) { return !r.report.passed(); }));
}

CheckRanksReport CompareCheckRanks(std::vector<CheckRank> ranks, std::string baseline,
                                   const RankOptions& options) {
  CheckRanksReport out;
  out.baseline = std::move(baseline);
  out.ranks = std::move(ranks);
  RankTable& t = out.table;
  t.metrics = {{"peak_bytes", "peak", Unit::kBytes, true, {}, -1},
               {"reserved_bytes", "reserved", Unit::kBytes, true, {}, -1},
               {"allocated_bytes", "allocated", Unit::kBytes, true, {}, -1},
               {"stranded_share", "stranded", Unit::kRatio, true, {}, -1}};
  // Each rank's verdict is a note column the renderer adds (report::CheckRanksTable): its words
  // are the failed checks' names.
  for (const CheckRank& r : out.ranks) {
    t.files.push_back(r.report.path);
    const CheckMetrics& m = r.metrics;
    t.metrics[0].values.push_back(m.peak_bytes ? static_cast<double>(*m.peak_bytes) : -1.0);
    t.metrics[1].values.push_back(static_cast<double>(m.reserved_bytes));
    t.metrics[2].values.push_back(static_cast<double>(m.allocated_bytes));
    t.metrics[3].values.push_back(m.stranded_share);
  }
  out.table = CompareMetrics(std::move(t), options);
  return out;
}

TimelineOptions TopRankTimelineOptions(const Moment& moment, DeviceFilter device) {
  TimelineOptions to;
  to.device = device;
  to.keep = KeepLifetimes::kLiveAt;
  to.moment = moment;
  to.curve = false;
  return to;
}

absl::StatusOr<RankFigures> TopRankFigures(const Snapshot& snap, const Moment& moment,
                                           std::string_view at_text, const GroupOptions& options,
                                           DeviceFilter device) {
  return TopRankFigures(snap, ReconstructTimeline(snap, TopRankTimelineOptions(moment, device)),
                        moment, at_text, options);
}

absl::StatusOr<RankFigures> TopRankFigures(const Snapshot& snap, const absl::StatusOr<Timeline>& tl,
                                           const Moment& moment, std::string_view at_text,
                                           const GroupOptions& options) {
  RankFigures f;
  f.file = snap.source.path;
  for (const Segment& seg : snap.segments) {
    f.reserved_bytes += seg.total_size;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (b.state == BlockState::kActiveAllocated) f.allocated_bytes += b.size;
    }
  }
  if (!tl.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(f.file, ": ", tl.status().message()));
  }
  for (const DeviceTimeline& dt : tl->devices) {
    RETURN_IF_ERROR(CheckMoment(snap, dt, moment, "--at", at_text));
    if (dt.num_events > 0) f.peak_bytes = std::max(f.peak_bytes, dt.peak_requested);
  }
  absl::StatusOr<GroupReport> rep = GroupLive(snap, *tl, moment, options);
  if (!rep.ok()) return rep.status();
  for (const GroupRow& r : rep->rows) {  // rows are sorted, largest first
    if (r.synthetic) continue;
    f.top_site = r.site;
    break;
  }
  return f;
}

}  // namespace memsnap::analysis
