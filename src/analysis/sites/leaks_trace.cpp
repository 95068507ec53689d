// Single-trace mode of `memsnap leaks`: live memory by site at the end of every detected step, then
// the series verdicts, plus what each step leaves behind (docs/leaks.md).
#include <algorithm>
#include <limits>

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
                                                      const GroupOptions& group, size_t points,
                                                      std::vector<LeakSite>& sites) {
  ASSIGN_OR_RETURN(std::unique_ptr<GroupContext> context, GroupContext::Create(snap, group));
  absl::flat_hash_map<std::string, uint32_t> by_key;
  // (StackId, pre-window) -> site, when the key depends on nothing else.
  absl::flat_hash_map<uint64_t, uint32_t> by_stack;
  const bool stack_keyed = context->stack_keyed();
  std::vector<uint32_t> site_of(dt.blocks.size());
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& lt = dt.blocks[i];
    const uint64_t stack_key = RowCacheKey(lt);
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
        site.bytes.assign(points, 0);
        site.counts.assign(points, 0);
        site.retained.assign(points > 0 ? points - 1 : 0, 0);
        sites.push_back(std::move(site));
      }
      s = it->second;
      if (stack_keyed) by_stack.emplace(stack_key, s);
    }
    site_of[i] = s;
    sites[s].category_bytes[static_cast<size_t>(context->Categorize(dt, lt).category)] +=
        lt.requested_size;
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
                   SiteOfLifetimes(snapshot, dt, options.group, n, sites));
  // Difference arrays over points: a lifetime is live at points [first, last).
  std::vector<std::vector<int64_t>> dbytes(sites.size()), dcount(sites.size());
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& lt = dt.blocks[i];
    const int64_t a = lt.live_from().index();
    const int64_t f = lt.free_completed_event.PointOr(TimelinePoint::FromIndex(kNever)).index();
    const size_t first = std::lower_bound(ends.begin(), ends.end(), a) - ends.begin();
    const size_t last = std::lower_bound(ends.begin(), ends.end(), f) - ends.begin();
    const uint32_t s = site_of[i];
    if (first < last) {
      if (dbytes[s].empty()) dbytes[s].assign(n + 1, 0), dcount[s].assign(n + 1, 0);
      dbytes[s][first] += lt.requested_size, dbytes[s][last] -= lt.requested_size;
      dcount[s][first] += 1, dcount[s][last] -= 1;
    }
    // Retained: allocated in step k, still live at the end of step k+1.
    if (!lt.alloc_event.seen()) continue;
    const auto it = std::upper_bound(firsts.begin(), firsts.end(), a);
    if (it == firsts.begin()) continue;
    const size_t k = (it - firsts.begin()) - 1;
    if (a <= ends[k] && k + 1 < n && ends[k + 1] < f) sites[s].retained[k] += lt.requested_size;
  }
  std::vector<SeriesPoint> points(n);
  for (size_t k = 0; k < n; ++k) {
    points[k].label = absl::StrCat("step ", k);
    points[k].event = steps.ranges[k].to;
    points[k].time_us = dt.TimeOf(snapshot, steps.ranges[k].to);
  }
  points[0].inferred_device_memory = internal::InferDeviceMemory(snapshot, timeline);
  for (size_t s = 0; s < sites.size(); ++s) {
    if (dbytes[s].empty()) continue;
    int64_t b = 0, c = 0;
    for (size_t k = 0; k < n; ++k) {
      b += dbytes[s][k], c += dcount[s][k];
      sites[s].bytes[k] = b, sites[s].counts[k] = c;
      points[k].live_bytes += b, points[k].live_count += c;
    }
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
