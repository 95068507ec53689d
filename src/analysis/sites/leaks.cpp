// Series mode of `memsnap leaks` and the verdicts shared with single-trace mode (docs/leaks.md).
#include "memsnap/analysis/sites/leaks.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>
#include <optional>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "leaks_internal.h"
#include "memsnap/analysis/sites/moved_sites.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::analysis {

std::string_view VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kGrowing:
      return "growing";
    case Verdict::kGrowingThenFlat:
      return "growing_then_flat";
    case Verdict::kGrowingWithPauses:
      return "growing_with_pauses";
    case Verdict::kFluctuating:
      return "fluctuating";
    case Verdict::kShrinking:
      return "shrinking";
    case Verdict::kSteady:
      return "steady";
  }
  return "steady";
}

Verdict ClassifySeries(const std::vector<int64_t>& values, int64_t tolerance) {
  // The walk is ClassifyDeltas', over every difference.
  std::vector<std::pair<size_t, int64_t>> deltas;
  deltas.reserve(values.size());
  for (size_t i = 1; i < values.size(); ++i) deltas.emplace_back(i, values[i] - values[i - 1]);
  return internal::ClassifyDeltas(deltas, values.size(), tolerance);
}

namespace internal {

Verdict ClassifyDeltas(const std::vector<std::pair<size_t, int64_t>>& deltas, size_t points,
                       int64_t tolerance) {
  // Each difference is up, down or flat (within the tolerance); the differences not listed are
  // flat, found between those that are: a flat difference before an up is a pause.
  int ups = 0, downs = 0;
  bool flat_seen = false, up_after_flat = false;
  size_t next = 1;  // the first point whose difference is not accounted for yet
  for (const auto& [i, d] : deltas) {
    if (i < next || i >= points) continue;
    if (i > next) flat_seen = true;  // the points in between changed by 0
    next = i + 1;
    if (d > tolerance) {
      ++ups;
      if (flat_seen) up_after_flat = true;
    } else if (d < -tolerance) {
      ++downs;
    } else {
      flat_seen = true;
    }
  }
  const int steps = points < 2 ? 0 : static_cast<int>(points - 1);
  if (ups == 0 && downs == 0) return Verdict::kSteady;
  if (ups > 0 && downs > 0) return Verdict::kFluctuating;
  if (downs > 0) return Verdict::kShrinking;
  if (ups == steps) return Verdict::kGrowing;
  return up_after_flat ? Verdict::kGrowingWithPauses : Verdict::kGrowingThenFlat;
}

int64_t InferDeviceMemory(const Snapshot& snapshot, const Timeline& timeline) {
  int64_t best = 0;
  for (const DeviceTimeline& dt : timeline.devices) {
    for (uint32_t e = 0; e < dt.num_events; ++e) {
      const TraceEvent& ev = snapshot.events[dt.event_begin + e];
      if (ev.action != Action::kOom) continue;
      // For an OOM the event's addr holds device_free (snapshot.h).
      best = std::max(best, dt.ReservedAt(TimelinePoint::After(e)) + static_cast<int64_t>(ev.addr));
    }
  }
  return best;
}

namespace {

// Leaks: growth desc, then key. Others: |growth| desc, growth desc, key.
bool SiteOrder(const LeakSite& a, const LeakSite& b) {
  if (a.leak != b.leak) return a.leak;
  if (a.leak) {
    if (a.growth() != b.growth()) return a.growth() > b.growth();
    return a.key < b.key;
  }
  const int64_t ga = std::llabs(a.growth()), gb = std::llabs(b.growth());
  if (ga != gb) return ga > gb;
  if (a.growth() != b.growth()) return a.growth() > b.growth();
  return a.key < b.key;
}

// 0-based point index at which `current` + k * per_step first exceeds `capacity`.
std::optional<int64_t> FullAt(int64_t last_index, int64_t current, int64_t per_step,
                              int64_t capacity) {
  if (capacity <= 0 || per_step <= 0) return std::nullopt;
  if (current >= capacity) return last_index;
  const int64_t more = (capacity - current + per_step - 1) / per_step;
  return last_index + more;
}

}  // namespace

void LabelReported(std::vector<LeakSite>& sites, const std::vector<size_t>& reported) {
  // Labels distinct among the whole table are labels distinct among the sites that start from
  // the same label (DistinctLabelStart): label the reported sites with those alone, not every
  // site of the trace (500,000 distinct frames made 250,000 labels for a report of 10; issue 54).
  if (reported.empty()) return;
  std::vector<std::string> starts(sites.size());
  for (size_t i = 0; i < sites.size(); ++i) starts[i] = DistinctLabelStart(sites[i].info);
  absl::flat_hash_set<std::string_view> wanted;
  for (size_t i : reported) wanted.insert(starts[i]);
  std::vector<size_t> subset;
  for (size_t i = 0; i < sites.size(); ++i) {
    if (wanted.contains(starts[i])) subset.push_back(i);
  }
  std::vector<const SiteInfo*> infos;
  infos.reserve(subset.size());
  for (size_t i : subset) infos.push_back(&sites[i].info);
  std::vector<SiteLabel> labels = DistinctSiteLabels(infos);
  for (size_t k = 0; k < subset.size(); ++k) {
    sites[subset[k]].site = labels[k].text;
    sites[subset[k]].label = std::move(labels[k]);
  }
}

LeakReport FinishLeakReport(std::vector<LeakSite> sites, const std::vector<SeriesPoint>& points,
                            const LeakOptions& options) {
  LeakReport report;
  report.options = options;
  for (const SeriesPoint& p : points) {
    report.labels.push_back(p.label);
    report.times.push_back(p.time_us);
    report.live_bytes.push_back(p.live_bytes);
    report.live_counts.push_back(p.live_count);
  }
  const int64_t n = static_cast<int64_t>(points.size());
  const int64_t steps = n - 1;
  report.total_verdict = ClassifySeries(report.live_bytes);

  if (options.device_memory) {
    report.device_memory = *options.device_memory;
    report.device_memory_source = LeakMemorySource::kFlag;
  } else {
    for (const SeriesPoint& p : points) {
      if (p.inferred_device_memory > report.device_memory) {
        report.device_memory = p.inferred_device_memory;
        report.device_memory_source = LeakMemorySource::kOomEntry;
        report.device_memory_file = p.label;
      }
    }
  }

  report.sites_total = static_cast<int64_t>(sites.size());
  const int64_t current = report.live_bytes.empty() ? 0 : report.live_bytes.back();
  for (LeakSite& s : sites) {
    // A site that comes without its series comes classified (see above).
    if (static_cast<int64_t>(s.bytes.size()) == n) s.verdict = ClassifySeries(s.bytes);
    ++report.verdict_counts[static_cast<int>(s.verdict)];
    s.leak = s.verdict == Verdict::kGrowing && steps >= options.min_steps &&
             s.growth() >= options.min_growth;
    if (!s.leak) continue;
    s.bytes_per_step = s.growth() / steps;
    s.full_at_step = FullAt(n - 1, current, s.bytes_per_step, report.device_memory);
    ++report.num_leaks;
    report.leak_bytes_per_step += s.bytes_per_step;
  }
  report.full_at_step = FullAt(n - 1, current, report.leak_bytes_per_step, report.device_memory);
  // The order by index: a site is a large record, and 500,000 of them moved about by the sort
  // cost more than the sort (issue 54).
  std::vector<size_t> order(sites.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return SiteOrder(sites[a], sites[b]); });
  std::vector<size_t> kept;
  size_t others = 0;
  for (size_t i : order) {
    const LeakSite& s = sites[i];
    if (s.leak) {
      kept.push_back(i);
    } else if (std::llabs(s.growth()) >= options.min_growth &&
               (options.top == 0 || others < options.top)) {
      kept.push_back(i);
      ++others;
    }
  }
  LabelReported(sites, kept);
  for (size_t i : kept) report.sites.push_back(std::move(sites[i]));
  if (steps < options.min_steps) {
    report.too_few_steps = steps;
  }
  // Growth read along a series out of time order is not growth: say so (a shell glob orders
  // files by name, not by when they were written).
  for (size_t i = 1; i < report.times.size(); ++i) {
    const int64_t before = report.times[i - 1];
    const int64_t after = report.times[i];
    if (before == kNoTime || after == kNoTime || after >= before) continue;
    report.out_of_order_point = i;
    report.out_of_order_by_us = before - after;
    break;
  }
  return report;
}

}  // namespace internal

absl::StatusOr<SeriesPoint> SeriesPointOf(const Snapshot& snapshot, const LeakOptions& options) {
  ASSIGN_OR_RETURN(Timeline timeline, ReconstructTimeline(snapshot));
  GroupOptions group = options.group;
  // Site keys without lines as well, to pair the sites an edit moved (AnalyzeSeries).
  group.unlined_keys = options.pair_moved && group.by == GroupBy::kSite && !group.ignore_lines;
  ASSIGN_OR_RETURN(GroupReport grouped,
                   GroupLive(snapshot, timeline, Moment{Moment::Kind::kEnd, 0}, group));
  SeriesPoint point;
  point.label = snapshot.source.path;
  for (const TraceEvent& ev : snapshot.events) {
    if (ev.has_time()) point.time_us = std::max(point.time_us, ev.time_us);
  }
  point.rows = std::move(grouped.rows);
  point.live_bytes = grouped.total_bytes;
  point.live_count = grouped.total_count;
  point.inferred_device_memory = internal::InferDeviceMemory(snapshot, timeline);
  return point;
}

namespace {

// Where one site's rows are: the first and the last (point, row index) that added to it, and its
// distinct keys in the order met.
struct SiteRows {
  size_t first_point = 0, first_row = 0;
  size_t last_point = 0, last_row = 0;
  std::vector<std::string_view> keys;
};

// "dir/file.py:118→120" -> ("dir/file.py", 118): moves read by file, then line.
std::pair<std::string_view, int64_t> MoveOrder(std::string_view move) {
  const size_t colon = move.rfind(':');
  int64_t line = 0;
  for (size_t i = colon + 1; i < move.size() && move[i] >= '0' && move[i] <= '9'; ++i) {
    line = line * 10 + (move[i] - '0');
  }
  return {move.substr(0, colon), line};
}

// The moves of each step's applied pairs (LeakReport::moves).
std::vector<LineMoves> CollectMoves(const std::vector<SeriesPoint>& points,
                                    const std::vector<std::vector<MovedPair>>& applied) {
  std::vector<LineMoves> out;
  for (size_t step = 0; step < applied.size(); ++step) {
    if (applied[step].empty()) continue;
    LineMoves m;
    m.from = step;
    m.sites = static_cast<int64_t>(applied[step].size());
    for (const MovedPair& p : applied[step]) {
      MovedInfo(points[step].rows[p.before].info, points[step + 1].rows[p.after].info, m.moves);
    }
    std::sort(m.moves.begin(), m.moves.end(), [](const std::string& a, const std::string& b) {
      return std::pair(MoveOrder(a), std::string_view(a)) <
             std::pair(MoveOrder(b), std::string_view(b));
    });
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

LeakReport AnalyzeSeries(std::vector<SeriesPoint> points, const LeakOptions& options) {
  const size_t n = points.size();
  std::vector<LeakSite> sites;
  std::vector<SiteRows> where;
  absl::flat_hash_map<std::string_view, size_t> index;  // key -> site (views into points' rows)
  std::vector<std::vector<size_t>> site_of(n);          // point -> row -> site
  std::vector<std::vector<MovedPair>> applied(n > 0 ? n - 1 : 0);
  for (size_t i = 0; i < n; ++i) {
    std::vector<GroupRow>& rows = points[i].rows;
    // Rows of this point that continue a site of the previous point across moved lines.
    std::vector<std::optional<size_t>> moved_from(rows.size());
    if (i > 0 && options.pair_moved) {
      for (const MovedPair& p : PairMovedSites(points[i - 1].rows, rows)) {
        moved_from[p.after] = p.before;
      }
    }
    site_of[i].resize(rows.size());
    for (size_t r = 0; r < rows.size(); ++r) {
      const GroupRow& row = rows[r];
      std::optional<size_t> s;
      bool paired = false;
      if (auto it = index.find(row.key); it != index.end()) {
        s = it->second;  // a key met before names the site, as without pairing
      } else if (moved_from[r]) {
        s = site_of[i - 1][*moved_from[r]];
        paired = true;
      }
      // Two rows of one point never share a site: the second starts its own.
      if (s && where[*s].last_point == i) {
        s.reset();
        paired = false;
      }
      if (paired) applied[i - 1].push_back({*moved_from[r], r});
      if (!s) {
        s = sites.size();
        LeakSite site;
        site.synthetic = row.synthetic;
        site.bytes.assign(n, 0);
        site.counts.assign(n, 0);
        sites.push_back(std::move(site));
        where.push_back({i, r, i, r, {}});
      }
      index[row.key] = *s;
      site_of[i][r] = *s;
      LeakSite& site = sites[*s];
      SiteRows& w = where[*s];
      if (std::find(w.keys.begin(), w.keys.end(), row.key) == w.keys.end()) {
        w.keys.push_back(row.key);
      }
      w.last_point = i;
      w.last_row = r;
      site.bytes[i] += row.bytes;
      site.counts[i] += row.count;
      for (int c = 0; c < kMaxCategories; ++c) site.category_bytes[c] += row.category_bytes[c];
    }
  }
  // Name every site by its first row, or a site paired across moved lines by its last row with
  // the moves shown.
  for (size_t s = 0; s < sites.size(); ++s) {
    LeakSite& site = sites[s];
    const SiteRows& w = where[s];
    const GroupRow& last = points[w.last_point].rows[w.last_row];
    const GroupRow& first = points[w.first_point].rows[w.first_row];
    if (w.keys.size() == 1) {
      site.key = first.key;
      site.info = first.info;
      site.frames = first.frames;
      continue;
    }
    site.key = last.key;
    site.info = MovedInfo(first.info, last.info, site.moved);
    site.frames = last.frames;
    for (std::string_view k : w.keys) {
      if (k != last.key) site.earlier_keys.emplace_back(k);
    }
  }
  std::vector<LineMoves> moves = CollectMoves(points, applied);
  const int64_t sites_moved = std::count_if(
      sites.begin(), sites.end(), [](const LeakSite& s) { return !s.earlier_keys.empty(); });
  for (SeriesPoint& p : points) p.rows.clear();
  LeakReport report = internal::FinishLeakReport(std::move(sites), points, options);
  report.mode = "series";
  report.sites_moved = sites_moved;
  report.moves = std::move(moves);
  return report;
}

}  // namespace memsnap::analysis
