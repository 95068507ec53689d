// The frag pass: figures per segment, per (pool, stream) group, per device, what fits, a histogram
// of free-block sizes, and with a trace the same figures at the peaks and over time. Definitions:
// docs/fragmentation.md.
#include "memsnap/analysis/allocator/frag.h"

#include <algorithm>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/allocator/frag_layout.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/site.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/sim/sizes.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

using frag_internal::LSegment;

namespace {
using sim::kLargeBuffer;
using sim::kMinBlockSize;
using sim::kSmallBuffer;
using sim::kSmallSize;
constexpr int64_t kNonSplitRounding = kLargeBuffer;  // max_non_split_rounding default

// round_size under the recorded roundup_power2_divisions (the only setting it reads).
int64_t RoundSize(int64_t n, const AllocatorSettings& settings) {
  return sim::RoundSize(n, settings.roundup_power2_divisions);
}

}  // namespace

namespace frag_internal {

// Figures of one segment. Free space left after empty_cache (docs/allocator-model.md §9.2, §12.4):
// pending frees complete first; a segment with no allocated block is released whole; in an
// expandable segment every whole page inside a run of non-allocated blocks is unmapped.
FragFigures SegmentFigures(const LSegment& s) {
  FragFigures f;
  f.segments = 1;
  f.reserved_bytes = s.size;
  int64_t page = s.is_small ? kSmallBuffer : kLargeBuffer;
  int64_t run_begin = -1;  // offset of the current run of non-allocated blocks
  auto close_run = [&](int64_t end) {
    if (run_begin < 0) return;
    int64_t first = sim::RoundUpSaturated(run_begin, page), last = end / page * page;
    if (last > first) f.releasable_bytes += last - first;
    run_begin = -1;
  };
  for (const auto& b : s.blocks) {
    ++f.blocks;
    int64_t offset = static_cast<int64_t>(b.address - s.address);
    switch (b.state) {
      case BlockState::kActiveAllocated:
        f.allocated_bytes += b.size;
        close_run(offset);
        break;
      case BlockState::kActivePendingFree:
        f.pending_free_bytes += b.size;
        if (run_begin < 0) run_begin = offset;
        break;
      case BlockState::kInactive:
        f.free_bytes += b.size;
        ++f.free_blocks;
        f.largest_free_bytes = std::max(f.largest_free_bytes, b.size);
        if (run_begin < 0) run_begin = offset;
        break;
    }
    if (b.state != BlockState::kInactive) {
      f.requested_bytes += b.requested;
      f.internal_waste_bytes += b.size - b.requested;
    }
  }
  if (s.is_expandable) {
    close_run(s.size);
  } else if (f.allocated_bytes == 0) {
    f.releasable_bytes = s.size;
  }
  f.stranded_bytes = f.free_bytes + f.pending_free_bytes - f.releasable_bytes;
  f.free_segments = (f.allocated_bytes == 0 && f.pending_free_bytes == 0) ? 1 : 0;
  return f;
}

}  // namespace frag_internal

namespace {

using frag_internal::SegmentFigures;

using GroupKey = std::tuple<int32_t, PoolId, int64_t, bool>;  // device, pool, stream, small

struct Aggregates {
  FragFigures totals;
  std::map<int32_t, FragFigures> devices;
  std::map<GroupKey, PoolStreamFrag> groups;
  std::map<GroupKey, std::vector<int64_t>> free_sizes;  // inactive block sizes per group
};

Aggregates Aggregate(const std::vector<LSegment>& layout, std::vector<SegmentFrag>* segments) {
  Aggregates a;
  for (const LSegment& s : layout) {
    FragFigures f = SegmentFigures(s);
    a.totals += f;
    a.devices[s.device] += f;
    GroupKey key{s.device, s.pool, s.stream, s.is_small};
    PoolStreamFrag& g = a.groups[key];
    g.device = s.device;
    g.pool = s.pool;
    g.stream = s.stream;
    g.is_small = s.is_small;
    ++g.segments;
    g.reserved_bytes += f.reserved_bytes;
    g.free_bytes += f.free_bytes;
    g.pending_free_bytes += f.pending_free_bytes;
    g.free_blocks += f.free_blocks;
    g.largest_free_bytes = std::max(g.largest_free_bytes, f.largest_free_bytes);
    auto& sizes = a.free_sizes[key];
    for (const auto& b : s.blocks) {
      if (b.state == BlockState::kInactive) sizes.push_back(b.size);
    }
    if (segments) {
      SegmentFrag sf{s.device,   s.address,
                     s.stream,   s.pool,
                     s.is_small, s.is_expandable,
                     f,          ExternalFragmentation(f.free_bytes, f.largest_free_bytes),
                     {}};
      sf.spans.reserve(s.blocks.size());
      for (const auto& b : s.blocks) sf.spans.push_back(BlockSpan{b.size, b.state});
      segments->push_back(std::move(sf));
    }
  }
  for (auto& [key, g] : a.groups) {
    g.external_fragmentation = ExternalFragmentation(g.free_bytes, g.largest_free_bytes);
  }
  return a;
}

// 1 - Σ_groups largest / Σ free over the groups of all devices (device: nullopt), and of each
// device, in one pass over the groups (sorted by device first: GroupKey).
struct GroupFragmentations {
  double all = 0;
  std::map<int32_t, double> devices;
};
GroupFragmentations GroupFragmentation(const Aggregates& a) {
  GroupFragmentations out;
  int64_t free = 0, largest = 0, device_free = 0, device_largest = 0;
  for (auto it = a.groups.begin(); it != a.groups.end(); ++it) {
    const PoolStreamFrag& g = it->second;
    free += g.free_bytes;
    largest += g.largest_free_bytes;
    device_free += g.free_bytes;
    device_largest += g.largest_free_bytes;
    if (std::next(it) == a.groups.end() || std::next(it)->second.device != g.device) {
      out.devices.emplace_hint(out.devices.end(), g.device,
                               ExternalFragmentation(device_free, device_largest));
      device_free = device_largest = 0;
    }
  }
  out.all = ExternalFragmentation(free, largest);
  return out;
}

// Largest n with RoundSize(n) <= limit (RoundSize is monotone); 0 when even 1 byte does not fit.
int64_t LargestRequestUpTo(int64_t limit, const AllocatorSettings& settings) {
  if (limit < kMinBlockSize) return 0;
  int64_t lo = 1, hi = limit;  // RoundSize(lo) <= limit holds
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (RoundSize(mid, settings) <= limit) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Largest large-pool request one stream's cached blocks serve (docs/allocator-model.md §7): best
// fit takes the smallest block >= s, then the oversize rules may reject it (a miss).
int64_t LargeFit(std::vector<int64_t> sizes, const AllocatorSettings& settings) {
  std::sort(sizes.begin(), sizes.end());
  int64_t mss = settings.max_split_size;
  for (auto it = sizes.rbegin(); it != sizes.rend(); ++it) {
    int64_t n = LargestRequestUpTo(*it, settings);
    int64_t s = RoundSize(std::max<int64_t>(n, 1), settings);
    if (n == 0 || s <= kSmallSize) break;
    int64_t fit = *std::lower_bound(sizes.begin(), sizes.end(), s);
    bool miss = mss >= 0 && ((s < mss && fit >= mss) || (s >= mss && fit >= s + kNonSplitRounding));
    if (!miss) return n;
  }
  return 0;
}

void FillFromLayout(const std::vector<LSegment>& layout, const AllocatorSettings& settings,
                    FragReport& r) {
  Aggregates a = Aggregate(layout, &r.segments);
  r.totals = a.totals;
  const GroupFragmentations frag = GroupFragmentation(a);
  r.external_fragmentation = frag.all;
  for (const auto& [device, f] : a.devices) {
    auto it = frag.devices.find(device);
    r.devices.push_back(
        DeviceFrag{device, f, it == frag.devices.end() ? 0.0 : it->second, false, -1, kNoTime});
  }
  // The segments that cost memory first (most stranded bytes), then the largest: a segment full
  // of live blocks, or entirely free, says nothing about fragmentation.
  std::sort(r.segments.begin(), r.segments.end(), [](const SegmentFrag& x, const SegmentFrag& y) {
    return std::tuple(-x.figures.stranded_bytes, -x.figures.reserved_bytes,
                      -x.figures.allocated_bytes, x.device,
                      x.address) < std::tuple(-y.figures.stranded_bytes, -y.figures.reserved_bytes,
                                              -y.figures.allocated_bytes, y.device, y.address);
  });
  std::map<std::tuple<int32_t, PoolId, int64_t>, WhatFits> fits;
  std::map<int, FreeSizeBucket> buckets;
  for (const auto& [key, g] : a.groups) {
    r.groups.push_back(g);
    const auto& [device, pool, stream, is_small] = key;
    WhatFits& w = fits[{device, pool, stream}];
    w.device = device;
    w.pool = pool;
    w.stream = stream;
    const auto& sizes = a.free_sizes.at(key);
    if (is_small) {
      w.small_pool_bytes = LargestRequestUpTo(std::min(g.largest_free_bytes, kSmallSize), settings);
    } else {
      w.large_pool_bytes = LargeFit(sizes, settings);
    }
    w.largest_bytes = std::max(w.small_pool_bytes, w.large_pool_bytes);
    for (int64_t size : sizes) {
      int log2 =
          static_cast<int>(std::bit_width(static_cast<uint64_t>(std::max<int64_t>(size, 1)))) - 1;
      FreeSizeBucket& b = buckets[log2];
      b.log2 = log2;
      ++b.blocks;
      b.bytes += size;
    }
  }
  for (const auto& [key, w] : fits) r.fits.push_back(w);
  for (const auto& [log2, b] : buckets) r.histogram.push_back(b);
}

}  // namespace

namespace frag_internal {

FragSample SampleOf(const std::vector<LSegment>& layout, int32_t device, int64_t index,
                    int64_t time_us) {
  Aggregates a = Aggregate(layout, nullptr);
  return FragSample{device, index, time_us, a.totals, GroupFragmentation(a).all};
}

int64_t FindAllocatedPeak(const Snapshot& snap, const DeviceTrace& trace) {
  auto events = snap.EventsOf(trace);
  const int64_t n = static_cast<int64_t>(events.size());
  int64_t peak_a = n - 1;
  DeviceRewind rw(snap, trace.device);
  int64_t best_a = rw.allocated();
  for (int64_t i = n - 1; i >= 0; --i) {
    rw.Undo(events[i]);  // now the state after event i - 1
    if (rw.allocated() >= best_a) {
      best_a = rw.allocated();
      peak_a = i - 1;
    }
  }
  return peak_a;
}

RewindCaveats CaveatsOf(const DeviceRewind& rw, int32_t device, const AllocatorSettings& settings,
                        int64_t trace_entries) {
  RewindCaveats c;
  c.device = device;
  std::tie(c.pre_window_blocks, c.pre_window_bytes) = rw.PreWindowBlocks();
  c.trace_start = ExplainTraceStart(settings, trace_entries, c.pre_window_blocks);
  c.problems = rw.problems();
  return c;
}

}  // namespace frag_internal

namespace {

using frag_internal::SampleOf;

// Where the allocated block at an address came from: its stack, and whether it was allocated
// before the trace began (a stack without frames then reads "[allocated before recording
// started]"); `known` false: freed in the trace but allocated before it (no stack at all).
struct PinSource {
  StackId stack;
  bool before_trace = false;
  bool known = true;
};

// The segments of `layout` with stranded bytes (only they are pinned).
std::vector<LSegment> StrandedSegments(const std::vector<LSegment>& layout, int32_t device) {
  std::vector<LSegment> out;
  for (const LSegment& s : layout) {
    if (s.device == device && frag_internal::SegmentFigures(s).stranded_bytes > 0) {
      out.push_back(s);
    }
  }
  return out;
}

// The same of one device's segments.
std::vector<LSegment> StrandedSegments(const std::vector<const LSegment*>& segments) {
  std::vector<LSegment> out;
  for (const LSegment* s : segments) {
    if (frag_internal::SegmentFigures(*s).stranded_bytes > 0) out.push_back(*s);
  }
  return out;
}

// The sites whose allocated blocks sit in segments with stranded bytes: each such segment counts
// for every site with a block in it (docs/fragmentation.md, "The answer"). `top` most first.
std::vector<StrandedPin> NamePins(const std::vector<LSegment>& stranded,
                                  const absl::flat_hash_map<uint64_t, PinSource>& sources, int top,
                                  SiteNamer& namer) {
  std::map<std::string, StrandedPin> by_site;
  for (const LSegment& s : stranded) {
    const int64_t bytes = frag_internal::SegmentFigures(s).stranded_bytes;
    std::set<std::string> here;
    for (const auto& b : s.blocks) {
      if (b.state != BlockState::kActiveAllocated) continue;
      auto it = sources.find(b.address);
      std::string site;
      bool synthetic = true;
      Category category = Category::kUnknown;
      if (it == sources.end() || !it->second.known) {
        site = std::string(kPreWindowRow);
      } else {
        site = namer.Label(it->second.stack, it->second.before_trace);
        synthetic = namer.IsSynthetic(it->second.stack);
        category = namer.CategoryOf(it->second.stack, 0);
      }
      StrandedPin& p = by_site[site];
      if (p.site.empty()) {
        p.site = site;
        p.synthetic = synthetic || site.empty();
        p.category = category;
      }
      ++p.blocks;
      p.allocated_bytes += b.size;
      if (here.insert(site).second) {
        ++p.segments;
        p.stranded_bytes += bytes;
      }
    }
  }
  std::vector<StrandedPin> out;
  for (auto& [site, p] : by_site) out.push_back(std::move(p));
  std::stable_sort(out.begin(), out.end(), [](const StrandedPin& a, const StrandedPin& b) {
    return std::tuple(-a.stranded_bytes, -a.allocated_bytes) <
           std::tuple(-b.stranded_bytes, -b.allocated_bytes);
  });
  if (out.size() > static_cast<size_t>(std::max(0, top))) out.resize(std::max(0, top));
  return out;
}

// The stacks of the blocks of `stranded` live after device-local event `at`: the latest alloc at
// or before `at` at their address; a block the trace never allocates is older than the trace and
// has the final snapshot's stack; one freed in the trace without an alloc has none.
absl::flat_hash_map<uint64_t, PinSource> SourcesAtEvent(const Snapshot& snap,
                                                        const DeviceTrace& trace,
                                                        std::span<const uint32_t> own, int64_t at,
                                                        const std::vector<LSegment>& stranded) {
  absl::flat_hash_map<uint64_t, PinSource> out;
  absl::flat_hash_map<uint64_t, bool> wanted;  // address -> allocated anywhere in the trace
  for (const LSegment& s : stranded) {
    for (const auto& b : s.blocks) {
      if (b.state == BlockState::kActiveAllocated) wanted.emplace(b.address, false);
    }
  }
  if (wanted.empty()) return out;
  auto events = snap.EventsOf(trace);
  for (int64_t i = static_cast<int64_t>(events.size()) - 1; i >= 0; --i) {
    const TraceEvent& e = events[i];
    if (e.action != Action::kAlloc) continue;
    auto it = wanted.find(e.addr);
    if (it == wanted.end()) continue;
    it->second = true;
    if (i <= at) out.try_emplace(e.addr, PinSource{e.stack, false, true});
  }
  for (uint32_t s : own) {
    const Segment& seg = snap.segments[s];
    for (const Block& b : snap.BlocksOf(seg)) {
      auto it = wanted.find(b.address);
      if (b.is_active() && it != wanted.end() && !it->second) {
        out.try_emplace(b.address, PinSource{b.stack, true, true});
      }
    }
  }
  for (const auto& [address, in_trace] : wanted)
    out.try_emplace(address, PinSource{{}, true, false});
  return out;
}

// The stacks of the blocks of the snapshot's own segments (a device without a trace).
absl::flat_hash_map<uint64_t, PinSource> SourcesAtEnd(const Snapshot& snap,
                                                      const SegmentsByDevice& by_device,
                                                      int32_t device) {
  absl::flat_hash_map<uint64_t, PinSource> out;
  for (uint32_t s : by_device.Of(device)) {
    const Segment& seg = snap.segments[s];
    for (const Block& b : snap.BlocksOf(seg)) {
      if (b.is_active()) out.try_emplace(b.address, PinSource{b.stack, true, true});
    }
  }
  return out;
}

// Rewinds one device's trace once: computes the figures at the peaks and at the timeline samples
// and, when asked, the layout at the chosen moment. The allocated peak is found on the way (the
// first moment with the most allocated bytes, as FindAllocatedPeak defines it: going back, each
// moment at or above the best so far becomes the candidate), and each candidate's figures are
// taken as it is passed, instead of a rewind of its own to find it first (issue 37: the rewind was
// a sixth of `frag`). Candidates' layouts cost at most about one rewind's work in all; past that
// the peak is found the old way, by a second rewind.
// `at_event`: the chosen moment's device-local event when the options name one (kMoment);
// `peak_r`: the timeline's reserved peak (-1: before the first event).
// `own`: the device's segments (SegmentsByDevice::Of).
void RewindDevice(const Snapshot& snap, const DeviceTrace& trace, std::span<const uint32_t> own,
                  const FragOptions& options, int64_t at_event, int64_t peak_r, FragReport& r,
                  std::vector<LSegment>* layout_at, DeviceFrag* where, SiteNamer* namer) {
  auto events = snap.EventsOf(trace);
  const int64_t n = static_cast<int64_t>(events.size());
  auto time_after = [&](int64_t i) { return i < 0 ? kNoTime : events[i].time_us; };
  // The reserved peak is the timeline's (one definition: docs/figures.md); the allocated peak,
  // a figure of frag's own, comes from the rewind.
  const bool at_peak_a = options.at == FragMoment::kPeakAllocated;
  int64_t chosen = options.at == FragMoment::kMoment ? at_event : peak_r;
  std::set<int64_t> wanted = {peak_r};
  if (!at_peak_a) wanted.insert(chosen);
  std::set<int64_t> samples;
  if (options.timeline_samples > 0) {
    int64_t k = std::min<int64_t>(options.timeline_samples, n + 1);
    for (int64_t j = 0; j < k; ++j) samples.insert(k == 1 ? n - 1 : -1 + j * n / (k - 1));
    wanted.insert(samples.begin(), samples.end());
  }
  DevicePeaks peaks;
  peaks.device = trace.device;
  peaks.trace_start_us = n > 0 ? events[0].time_us : kNoTime;
  std::vector<FragSample> series;
  std::vector<LSegment> stranded_at_peak;  // the segments the answer's pins come from
  // The allocated peak's candidate: its figures and, for `--at peak-allocated`, its layout.
  int64_t peak_a = n - 1;
  int64_t best_a = 0;
  FragSample sample_a;
  std::vector<LSegment> layout_a;
  int64_t capture_budget = n + 1024;  // layout entries the candidates may cost
  bool captured = true;
  frag_internal::DeviceRewind rw(snap, trace.device, own);
  for (int64_t i = n - 1; i >= -1; --i) {  // the state is the one after event i
    std::optional<std::vector<LSegment>> layout;
    auto layout_now = [&]() -> std::vector<LSegment>& {
      if (!layout) layout = rw.Layout();
      return *layout;
    };
    if (i == n - 1 || rw.allocated() >= best_a) {
      best_a = rw.allocated();
      peak_a = i;
      if (captured) {
        std::vector<LSegment>& l = layout_now();
        for (const LSegment& seg : l) capture_budget -= 1 + static_cast<int64_t>(seg.blocks.size());
        captured = capture_budget >= 0;
        if (captured) {
          sample_a = SampleOf(l, trace.device, i, time_after(i));
          if (at_peak_a && layout_at) layout_a = l;
        }
      }
    }
    if (wanted.count(i)) {
      std::vector<LSegment>& l = layout_now();
      FragSample s = SampleOf(l, trace.device, i, time_after(i));
      if (i == peak_r && namer != nullptr) stranded_at_peak = StrandedSegments(l, trace.device);
      if (i == peak_r) peaks.peak_reserved = s;
      if (samples.count(i)) series.push_back(s);
      if (!at_peak_a && layout_at && i == chosen) {
        for (auto& seg : l) layout_at->push_back(std::move(seg));
        where->event_index = i;
        where->time_us = time_after(i);
      }
    }
    if (i >= 0) rw.Undo(events[i]);
  }
  if (!captured) {
    // Too many candidates to keep each one's layout: rewind again to the peak now known.
    frag_internal::DeviceRewind again(snap, trace.device, own);
    for (int64_t i = n - 1; i > peak_a; --i) again.Undo(events[i]);
    std::vector<LSegment> l = again.Layout();
    sample_a = SampleOf(l, trace.device, peak_a, time_after(peak_a));
    if (at_peak_a && layout_at) layout_a = std::move(l);
  }
  peaks.peak_allocated = sample_a;
  if (at_peak_a && layout_at) {
    for (auto& seg : layout_a) layout_at->push_back(std::move(seg));
    where->event_index = peak_a;
    where->time_us = time_after(peak_a);
  }
  if (peaks.peak_reserved.figures.reserved_bytes > 0) {
    peaks.peak_overhead = 1.0 - static_cast<double>(peaks.peak_allocated.figures.allocated_bytes) /
                                    static_cast<double>(peaks.peak_reserved.figures.reserved_bytes);
  }
  std::reverse(series.begin(), series.end());
  r.timeline.insert(r.timeline.end(), series.begin(), series.end());
  FragCost cost;
  cost.device = trace.device;
  cost.at_peak = true;
  cost.event_index = peaks.peak_reserved.event_index;
  cost.time_us = peaks.peak_reserved.time_us;
  cost.trace_start_us = peaks.trace_start_us;
  cost.figures = peaks.peak_reserved.figures;
  cost.verdict = JudgeFragmentation(cost.figures.stranded_bytes, cost.figures.reserved_bytes);
  if (namer != nullptr) {
    cost.pins =
        NamePins(stranded_at_peak, SourcesAtEvent(snap, trace, own, peak_r, stranded_at_peak),
                 options.pins, *namer);
  }
  r.costs.push_back(std::move(cost));
  r.peaks.push_back(peaks);
  r.rewind.push_back(frag_internal::CaveatsOf(rw, trace.device, snap.settings, trace.size()));
}

}  // namespace

FragFigures& FragFigures::operator+=(const FragFigures& o) {
  segments += o.segments;
  blocks += o.blocks;
  reserved_bytes += o.reserved_bytes;
  allocated_bytes += o.allocated_bytes;
  pending_free_bytes += o.pending_free_bytes;
  free_bytes += o.free_bytes;
  requested_bytes += o.requested_bytes;
  internal_waste_bytes += o.internal_waste_bytes;
  free_blocks += o.free_blocks;
  largest_free_bytes = std::max(largest_free_bytes, o.largest_free_bytes);
  stranded_bytes += o.stranded_bytes;
  releasable_bytes += o.releasable_bytes;
  free_segments += o.free_segments;
  return *this;
}

std::string_view FragVerdictName(FragVerdict v) {
  switch (v) {
    case FragVerdict::kNone:
      return "none";
    case FragVerdict::kSmall:
      return "small";
    case FragVerdict::kModerate:
      return "moderate";
    case FragVerdict::kLarge:
      return "large";
  }
  return "none";
}

FragVerdict JudgeFragmentation(int64_t stranded, int64_t reserved) {
  if (stranded <= 0 || reserved <= 0) return FragVerdict::kNone;
  if (stranded < kFragMinBytes) return FragVerdict::kSmall;
  const double share = static_cast<double>(stranded) / static_cast<double>(reserved);
  if (share < kFragModerateShare) return FragVerdict::kSmall;
  if (share < kFragLargeShare) return FragVerdict::kModerate;
  return FragVerdict::kLarge;
}

FragAnswer FragAnswerOf(const FragCost& c) {
  FragAnswer a;
  a.device = c.device;
  a.verdict = c.verdict;
  a.stranded_bytes = c.figures.stranded_bytes;
  a.stranded_share = c.figures.reserved_bytes <= 0
                         ? 0.0
                         : static_cast<double>(c.figures.stranded_bytes) /
                               static_cast<double>(c.figures.reserved_bytes);
  a.at_peak = c.at_peak;
  a.event_index = c.event_index;
  return a;
}

double ExternalFragmentation(int64_t free_bytes, int64_t largest_free_bytes) {
  if (free_bytes <= 0) return 0.0;
  return 1.0 - static_cast<double>(largest_free_bytes) / static_cast<double>(free_bytes);
}

absl::StatusOr<FragReport> AnalyzeFragmentation(const Snapshot& snap, const FragOptions& options,
                                                const Timeline* timeline) {
  FragReport r;
  r.source = snap.source;
  r.categories = options.categories;
  r.at = options.at;
  r.moment = options.moment;
  r.max_split_size = snap.settings.max_split_size;
  // --device N: the other devices' segments and traces are left out of every figure.
  auto wanted = [&](int32_t device) { return !options.device || *options.device == device; };
  if (options.device) {
    const std::vector<int32_t> devices = snap.Devices();
    if (std::find(devices.begin(), devices.end(), *options.device) == devices.end()) {
      std::string have;
      for (size_t i = 0; i < devices.size() && i < 16; ++i) {
        absl::StrAppend(&have, i == 0 ? "" : ", ", devices[i]);
      }
      if (devices.size() > 16) absl::StrAppend(&have, ", ... ", devices.size() - 16, " more");
      return absl::InvalidArgumentError(absl::StrCat(
          snap.source.path, ": --device ", *options.device,
          ": no such device in this file (devices: ", have.empty() ? "none" : have, ")"));
    }
  }
  bool has_trace = false;
  for (const DeviceTrace& t : snap.traces) has_trace |= t.size() > 0 && wanted(t.device);
  if (options.at != FragMoment::kEnd && !has_trace) {
    const std::string named = !options.at_text.empty()                   ? options.at_text
                              : options.at == FragMoment::kMoment        ? "a time or event:N"
                              : options.at == FragMoment::kPeakAllocated ? "peak-allocated"
                                                                         : "peak";
    return absl::InvalidArgumentError(absl::StrCat(
        snap.source.path, ": --at ", Sv(named),
        " needs a trace (device_traces); this file has none, so only --at end can be reported "
        "(the moments: end, peak, peak-reserved, peak-allocated, event:N, a time)"));
  }
  // The timeline gives the reserved peak of each device, and resolves a moment given as a time
  // or an event index as `top --at` does.
  std::optional<Timeline> built;
  if (has_trace && timeline == nullptr) {
    TimelineOptions to;
    to.keep = KeepLifetimes::kNone;
    to.curve = false;
    absl::StatusOr<Timeline> tl = ReconstructTimeline(snap, to);
    if (!tl.ok()) return tl.status();
    built = std::move(*tl);
    timeline = &*built;
  }
  std::optional<SiteNamer> namer;
  if (options.pins > 0) namer.emplace(snap, options.categories);
  std::vector<LSegment> layout;
  std::map<int32_t, DeviceFrag> where;
  const SegmentsByDevice by_device(snap);  // one sort for every device (issue 54)
  for (const DeviceTrace& t : snap.traces) {
    if (t.size() == 0 || !wanted(t.device)) continue;
    bool use = options.at != FragMoment::kEnd;
    int64_t at_event = static_cast<int64_t>(t.size()) - 1;
    int64_t peak_r = at_event;
    if (const DeviceTimeline* dt = timeline->Find(t.device)) {
      peak_r = dt->peak_reserved_event.index();  // the rewind's numbering
      if (options.at == FragMoment::kMoment) {
        at_event = ResolveMoment(snap, *dt, options.moment).index();
      }
    }
    RewindDevice(snap, t, by_device.Of(t.device), options, at_event, peak_r, r,
                 use ? &layout : nullptr, &where[t.device], namer ? &*namer : nullptr);
  }
  if (options.at == FragMoment::kEnd) {
    layout = frag_internal::LayoutFromSnapshot(snap);
  } else {
    // Devices without a trace keep their final state.
    for (auto& seg : frag_internal::LayoutFromSnapshot(snap)) {
      if (snap.TraceOf(seg.device) == nullptr || snap.TraceOf(seg.device)->size() == 0) {
        layout.push_back(std::move(seg));
      }
    }
  }
  // Devices without a trace: the answer describes the end of the snapshot, all that is known.
  // Their segments are grouped by device once (100,000 devices must not each scan them all).
  auto untraced = [&](int32_t device) {
    const DeviceTrace* t = snap.TraceOf(device);
    return t == nullptr || t->size() == 0;
  };
  if (options.device) {
    std::erase_if(layout, [&](const LSegment& s) { return s.device != *options.device; });
  }
  std::vector<LSegment> end_layout;
  std::map<int32_t, std::vector<const LSegment*>> end_segments;  // of each untraced device
  if (std::any_of(snap.segments.begin(), snap.segments.end(),
                  [&](const Segment& seg) { return untraced(seg.device) && wanted(seg.device); })) {
    end_layout = frag_internal::LayoutFromSnapshot(snap);
    for (const LSegment& s : end_layout) {
      if (untraced(s.device) && wanted(s.device)) end_segments[s.device].push_back(&s);
    }
  }
  std::set<int32_t> costed;
  for (const FragCost& c : r.costs) costed.insert(c.device);
  for (const auto& [device, segments] : end_segments) {
    if (costed.count(device) != 0) continue;
    FragCost cost;
    cost.device = device;
    for (const LSegment* s : segments) cost.figures += frag_internal::SegmentFigures(*s);
    cost.verdict = JudgeFragmentation(cost.figures.stranded_bytes, cost.figures.reserved_bytes);
    if (namer) {
      cost.pins = NamePins(StrandedSegments(segments), SourcesAtEnd(snap, by_device, device),
                           options.pins, *namer);
    }
    r.costs.push_back(std::move(cost));
  }
  std::sort(r.costs.begin(), r.costs.end(),
            [](const FragCost& a, const FragCost& b) { return a.device < b.device; });
  FillFromLayout(layout, snap.settings, r);
  for (DeviceFrag& d : r.devices) {
    auto it = where.find(d.device);
    if (options.at != FragMoment::kEnd && it != where.end()) {
      d.reconstructed = true;
      d.event_index = it->second.event_index;
      d.time_us = it->second.time_us;
    }
  }
  return r;
}

}  // namespace memsnap::analysis
