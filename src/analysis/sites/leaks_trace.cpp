// Single-trace mode of `memsnap leaks`: live memory by site at the end of every detected step, then
// the series verdicts, plus what each step leaves behind (docs/leaks.md).
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "leaks_internal.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::analysis {

namespace {

// Maps every lifetime of `dt` to a site (index into `sites`), keyed like `top`'s rows, and adds
// each lifetime's requested bytes to its site's category.
absl::StatusOr<std::vector<uint32_t>> SiteOfLifetimes(const Snapshot& snap,
                                                      const DeviceTimeline& dt,
                                                      const GroupOptions& group,
                                                      std::vector<LeakSite>& sites) {
  ASSIGN_OR_RETURN(std::unique_ptr<GroupContext> context, GroupContext::Create(snap, group));
  absl::flat_hash_map<std::string, uint32_t> by_key;
  // RowCacheKey (stack, pre-window, ghost, a row-naming rule) -> site, when the key depends on
  // nothing else.
  absl::flat_hash_map<uint64_t, uint32_t> by_stack;
  const bool stack_keyed = context->stack_keyed();
  std::vector<uint32_t> site_of(dt.blocks.size());
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& lt = dt.blocks[i];
    const CategoryVerdict verdict = context->Categorize(dt, lt);
    const uint64_t stack_key = RowCacheKey(lt, verdict.rule);
    auto cached = stack_keyed ? by_stack.find(stack_key) : by_stack.end();
    uint32_t s = 0;
    if (cached != by_stack.end()) {
      s = cached->second;
    } else {
      GroupRow row = context->RowFor(dt, lt);
      auto [it, inserted] = by_key.try_emplace(row.key, static_cast<uint32_t>(sites.size()));
      if (inserted) {
        LeakSite site;
        site.key = std::move(row.key);
        site.info = std::move(row.info);
        site.frames = std::move(row.frames);
        site.synthetic = row.synthetic;
        sites.push_back(std::move(site));  // its series: AnalyzeTraceLeaks, when it may be reported
      }
      s = it->second;
      if (stack_keyed) by_stack.emplace(stack_key, s);
    }
    site_of[i] = s;
    sites[s].category_bytes[static_cast<size_t>(verdict.category)] += lt.requested_size;
  }
  return site_of;
}

}  // namespace

absl::StatusOr<LeakReport> AnalyzeTraceLeaks(const Snapshot& snapshot, const LeakOptions& options,
                                             const StepOptions& step_options) {
  if (snapshot.events.empty()) {
    return absl::InvalidArgumentError(
        "the file has no trace (device_traces is empty): single-trace mode needs one; record "
        "with torch.cuda.memory._record_memory_history(), or give two or more snapshots");
  }
  ASSIGN_OR_RETURN(Timeline timeline, ReconstructTimeline(snapshot));
  ASSIGN_OR_RETURN(StepInfo steps, DetectSteps(snapshot, timeline, step_options));
  const size_t n = steps.ranges.size();
  if (n < 2) {
    LeakReport report;
    report.options = options;
    report.mode = "single-trace";
    if (steps.finding == StepsFinding::kNone) steps.finding = StepsFinding::kFewerThanTwo;
    report.steps = std::move(steps);
    return report;
  }
  const DeviceTimeline& dt = *timeline.Find(steps.device);
  // Each step's first event, and its end (the point of each step) as an index.
  std::vector<int64_t> firsts(n), ends(n);
  for (size_t k = 0; k < n; ++k) {
    firsts[k] = steps.ranges[k].first_event();
    ends[k] = steps.ranges[k].to.index();
  }

  std::vector<LeakSite> sites;
  ASSIGN_OR_RETURN(std::vector<uint32_t> site_of,
                   SiteOfLifetimes(snapshot, dt, options.group, sites));
  // Each lifetime is live at points [first, last): a change of its site's series at both ends,
  // kept as a list (a dense series per site would cost sites x steps: 500,000 one-lifetime sites
  // over 2,000 steps, issue 54). The points' totals are one difference array.
  struct Change {
    uint32_t site;
    uint32_t point;
    int64_t bytes;
    int64_t count;
  };
  std::vector<Change> changes;
  std::vector<std::tuple<uint32_t, uint32_t, int64_t>> retained;  // (site, step, bytes)
  std::vector<int64_t> total_bytes(n + 1), total_count(n + 1);
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& lt = dt.blocks[i];
    const int64_t a = lt.live_from().index();
    const int64_t f = lt.free_completed_event.PointOr(TimelinePoint::FromIndex(kNever)).index();
    const auto first =
        static_cast<uint32_t>(std::lower_bound(ends.begin(), ends.end(), a) - ends.begin());
    const auto last =
        static_cast<uint32_t>(std::lower_bound(ends.begin(), ends.end(), f) - ends.begin());
    const uint32_t s = site_of[i];
    if (first < last) {
      changes.push_back({s, first, lt.requested_size, 1});
      changes.push_back({s, last, -lt.requested_size, -1});
      total_bytes[first] += lt.requested_size, total_bytes[last] -= lt.requested_size;
      total_count[first] += 1, total_count[last] -= 1;
    }
    // Retained: allocated in step k, still live at the end of step k+1.
    if (!lt.alloc_event.seen()) continue;
    const auto it = std::upper_bound(firsts.begin(), firsts.end(), a);
    if (it == firsts.begin()) continue;
    const size_t k = (it - firsts.begin()) - 1;
    if (a <= ends[k] && k + 1 < n && ends[k + 1] < f) {
      retained.emplace_back(s, static_cast<uint32_t>(k), lt.requested_size);
    }
  }
  std::vector<SeriesPoint> points(n);
  for (size_t k = 0; k < n; ++k) {
    points[k].label = absl::StrCat("step ", k);
    points[k].event = steps.ranges[k].to;
    points[k].time_us = dt.TimeOf(snapshot, steps.ranges[k].to);
  }
  points[0].inferred_device_memory = internal::InferDeviceMemory(snapshot, timeline);
  int64_t b = 0, c = 0;
  for (size_t k = 0; k < n; ++k) {
    b += total_bytes[k], c += total_count[k];
    points[k].live_bytes = b, points[k].live_count = c;
  }
  // Each site's series from its changes: whole only for a site whose growth may reach
  // min_growth (only those can be reported); the others are classified from the changes alone.
  std::sort(changes.begin(), changes.end(), [](const Change& x, const Change& y) {
    return std::tie(x.site, x.point) < std::tie(y.site, y.point);
  });
  std::vector<bool> whole(sites.size(), options.min_growth <= 0);
  std::vector<std::pair<size_t, int64_t>> deltas;  // of one site: (point, change of bytes)
  for (size_t at = 0; at < changes.size();) {
    const uint32_t s = changes[at].site;
    size_t end = at;
    while (end < changes.size() && changes[end].site == s) ++end;
    deltas.clear();
    int64_t growth = 0;  // its bytes at the last point minus at the first
    for (size_t j = at; j < end; ++j) {
      const Change& ch = changes[j];
      if (ch.point >= 1 && ch.point < n) growth += ch.bytes;
      if (!deltas.empty() && deltas.back().first == ch.point) {
        deltas.back().second += ch.bytes;
      } else {
        deltas.emplace_back(ch.point, ch.bytes);
      }
    }
    if (std::llabs(growth) >= options.min_growth) whole[s] = true;
    if (whole[s]) {
      LeakSite& site = sites[s];
      site.bytes.assign(n, 0);
      site.counts.assign(n, 0);
      for (size_t j = at; j < end; ++j) {
        if (changes[j].point < n) {
          site.bytes[changes[j].point] += changes[j].bytes;
          site.counts[changes[j].point] += changes[j].count;
        }
      }
      for (size_t k = 1; k < n; ++k) {
        site.bytes[k] += site.bytes[k - 1];
        site.counts[k] += site.counts[k - 1];
      }
    } else {
      sites[s].verdict = internal::ClassifyDeltas(deltas, n);
    }
    at = end;
  }
  for (size_t s = 0; s < sites.size(); ++s) {
    if (!whole[s]) continue;
    sites[s].bytes.resize(n);  // a site never live at a step's end: zeros
    sites[s].counts.resize(n);
    sites[s].retained.assign(n - 1, 0);
  }
  for (const auto& [s, k, bytes] : retained) {
    if (whole[s]) sites[s].retained[k] += bytes;
  }
  LeakReport report = internal::FinishLeakReport(std::move(sites), points, options);
  report.mode = "single-trace";
  if (!options.device_memory && report.device_memory > 0) {
    // The trace's own OOM entry: no file of a series to name.
    report.device_memory_source = LeakMemorySource::kOomEntry;
    report.device_memory_file.clear();
  }
  if (std::optional<LiveCurveRef> curve = dt.live_curve(); curve && steps.method == "periodicity")
    report.layers_suspected = ClimbsAtEveryStepEnd(*curve, steps);
  report.steps = std::move(steps);
  return report;
}

}  // namespace memsnap::analysis
