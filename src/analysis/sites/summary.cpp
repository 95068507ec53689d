#include "memsnap/analysis/sites/summary.h"

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/analysis/sites/site.h"
#include "memsnap/analysis/timeline/addr_table.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/util/format.h"
#include "memsnap/util/parallel.h"

namespace memsnap::analysis {

Totals& Totals::operator+=(const Totals& o) {
  segments += o.segments;
  blocks += o.blocks;
  reserved_bytes += o.reserved_bytes;
  allocated_bytes += o.allocated_bytes;
  active_bytes += o.active_bytes;
  requested_bytes += o.requested_bytes;
  inactive_bytes += o.inactive_bytes;
  trace_entries += o.trace_entries;
  for (int i = 0; i < kNumActions; ++i) actions[i] += o.actions[i];
  return *this;
}

namespace {

Totals SegmentTotals(const Snapshot& snap, const Segment& seg) {
  Totals t;
  t.segments = 1;
  t.reserved_bytes = seg.total_size;
  for (const Block& b : snap.BlocksOf(seg)) {
    ++t.blocks;
    if (b.state == BlockState::kActiveAllocated) t.allocated_bytes += b.size;
    if (b.is_active()) {
      t.active_bytes += b.size;
      t.requested_bytes += b.requested_size;
    } else {
      t.inactive_bytes += b.size;
    }
  }
  return t;
}

// What a run of one address's events does to the allocs seen and not yet freed: from a count of
// 0, `unmatched` frees find none (their alloc is older than the run) and `count` allocs are left.
// From a count of c instead, max(0, unmatched - c) frees find none and count + max(0, c -
// unmatched) are left: runs of consecutive parts join in order without rescanning them.
struct AddrRun {
  int64_t unmatched = 0;
  int64_t count = 0;
};

// Everything Summarize takes from a part of one device's events, in one pass over it: the trace is
// the largest array of the model, and each pass over it costs its whole size in memory traffic.
struct EventPart {
  std::array<int64_t, kNumActions> actions{};
  int64_t first_time_us = kNoTime, last_time_us = kNoTime;
  std::vector<uint32_t> ooms;  // device-local indices of the oom entries
  AddrTable<AddrRun> addrs;
  /// `events`: how many the part holds. The table starts at most 4096 addresses large: sized so
  /// for every part, it zeroed 200 KB per device whatever its trace (20 GB for 100,000 devices of
  /// one event each; issue 54).
  explicit EventPart(size_t events) : addrs(std::min<size_t>(events, 4096)) {}
};

// Adds events [begin, end) of `ev` to `part`; `index_base` + i is event i's device-local index.
void ScanPart(std::span<const TraceEvent> ev, size_t begin, size_t end, EventPart& part,
              size_t index_base = 0) {
  std::array<int64_t, kNumActions> actions{};
  int64_t first = part.first_time_us, last = part.last_time_us;
  for (size_t i = begin; i < end; ++i) {
    const TraceEvent& e = ev[i];
    ++actions[static_cast<int>(e.action)];
    if (e.has_time()) {
      if (first == kNoTime || e.time_us < first) first = e.time_us;
      if (last == kNoTime || e.time_us > last) last = e.time_us;
    }
    switch (e.action) {
      case Action::kAlloc:
        ++part.addrs[e.addr].count;
        break;
      case Action::kFreeCompleted: {
        AddrRun& a = part.addrs[e.addr];
        if (a.count == 0) {
          ++a.unmatched;
        } else {
          --a.count;
        }
        break;
      }
      case Action::kOom:
        part.ooms.push_back(static_cast<uint32_t>(index_base + i));
        break;
      default:
        break;
    }
  }
  for (int a = 0; a < kNumActions; ++a) part.actions[a] += actions[a];
  part.first_time_us = first;
  part.last_time_us = last;
}

// The oom entries (device-local indices into `ev`) as the report shows them.
void AddOom(const Snapshot& snap, std::span<const TraceEvent> ev, std::span<const uint32_t> ooms,
            DeviceSummary& dev, std::optional<SiteNamer>& namer) {
  for (uint32_t i : ooms) {
    const TraceEvent& e = ev[i];
    SummaryOom o;
    o.event = i;
    o.time_us = e.time_us;
    o.requested = e.size;
    o.device_free = static_cast<int64_t>(e.addr);
    o.stream = snap.StreamOf(e);
    if (!namer) namer.emplace(snap, CategoryNames());  // labels only
    o.site = namer->Label(e.stack);
    dev.ooms.push_back(std::move(o));
  }
}

// Joins the parts of a device's events, in order, into `dev` and `live`.
void JoinParts(const Snapshot& snap, std::span<const TraceEvent> ev,
               std::span<const EventPart> parts, const SummaryOptions& options, DeviceSummary& dev,
               absl::flat_hash_map<uint64_t, int64_t>& live, std::optional<SiteNamer>& namer) {
  for (const EventPart& part : parts) {
    for (int a = 0; a < kNumActions; ++a) dev.totals.actions[a] += part.actions[a];
    if (part.first_time_us != kNoTime &&
        (dev.first_time_us == kNoTime || part.first_time_us < dev.first_time_us)) {
      dev.first_time_us = part.first_time_us;
    }
    if (part.last_time_us != kNoTime &&
        (dev.last_time_us == kNoTime || part.last_time_us > dev.last_time_us)) {
      dev.last_time_us = part.last_time_us;
    }
    // Sums over addresses: the order of the table does not matter.
    part.addrs.ForEach([&](uint64_t addr, const AddrRun& run) {
      int64_t& c = live[addr];
      dev.frees_without_alloc += std::max<int64_t>(0, run.unmatched - c);
      c = run.count + std::max<int64_t>(0, c - run.unmatched);
    });
    if (options.peaks) AddOom(snap, ev, part.ooms, dev, namer);
  }
  dev.totals.trace_entries += static_cast<int64_t>(ev.size());
}

// The same from the counts the timeline took in its pass over the device's whole trace.
void JoinTimelineCounts(const Snapshot& snap, std::span<const TraceEvent> ev,
                        const DeviceTimeline& dt, const SummaryOptions& options, DeviceSummary& dev,
                        absl::flat_hash_map<uint64_t, int64_t>& live,
                        std::optional<SiteNamer>& namer) {
  const DeviceTimeline::TraceCounts& c = dt.counts;
  for (int a = 0; a < kNumActions; ++a) dev.totals.actions[a] += c.actions[a];
  dev.first_time_us = c.min_time_us;
  dev.last_time_us = c.max_time_us;
  dev.frees_without_alloc += c.unmatched_frees;
  live.reserve(c.live_allocs.size());
  for (const auto& [addr, n] : c.live_allocs) live[addr] = n;
  if (options.peaks) {
    std::vector<uint32_t> ooms;
    ooms.reserve(dt.oom_moments.size());
    for (const DeviceTimeline::OomMoment& m : dt.oom_moments) ooms.push_back(m.event);
    AddOom(snap, ev, ooms, dev, namer);
  }
  dev.totals.trace_entries += static_cast<int64_t>(ev.size());
}

// A device's counts, time span, oom entries and frees without an alloc, its events scanned in up
// to `threads` parts side by side. `live` gets, per address, the allocs seen and not yet freed at
// the end (for CountGhosts). The same figures whatever the number of parts.
void ScanEvents(const Snapshot& snap, const DeviceTrace& trace, const SummaryOptions& options,
                DeviceSummary& dev, absl::flat_hash_map<uint64_t, int64_t>& live,
                std::optional<SiteNamer>& namer) {
  std::span<const TraceEvent> ev = snap.EventsOf(trace);
  const size_t parts = std::max<size_t>(
      1, std::min<size_t>(ThreadsFor(options.threads),
                          ev.size() / std::max<size_t>(1, options.min_events_per_thread)));
  std::vector<EventPart> scanned;
  scanned.reserve(parts);
  for (size_t p = 0; p < parts; ++p) scanned.emplace_back(ev.size() / parts + 1);
  ParallelFor(
      parts,
      [&](size_t p) {
        ScanPart(ev, ev.size() * p / parts, ev.size() * (p + 1) / parts, scanned[p]);
      },
      parts);
  JoinParts(snap, ev, scanned, options, dev, live, namer);
}

// Live blocks at the end of device `dev` whose alloc the trace never saw (ghosts).
void CountGhosts(const Snapshot& snap, const SegmentsByDevice& by_device,
                 const absl::flat_hash_map<uint64_t, int64_t>& live, DeviceSummary& dev) {
  for (uint32_t s : by_device.Of(dev.device)) {
    for (const Block& b : snap.BlocksOf(snap.segments[s])) {
      if (!b.is_active()) continue;
      auto it = live.find(b.address);
      if (it == live.end() || it->second == 0) {
        ++dev.ghost_blocks;
        dev.ghost_bytes += b.size;
      }
    }
  }
}

}  // namespace

std::vector<SettingText> DescribeSettings(const AllocatorSettings& s) {
  std::vector<SettingText> out;
  if (!s.present) return out;
  auto flag = [](bool b) { return std::string(b ? "true" : "false"); };
  out.push_back({"PYTORCH_CUDA_ALLOC_CONF", absl::StrCat("\"", s.conf, "\""), s.conf.empty()});
  out.push_back({"max_split_size",
                 s.max_split_size < 0 ? std::string("unlimited") : FormatBytes(s.max_split_size),
                 s.max_split_size < 0});
  out.push_back({"expandable_segments", flag(s.expandable_segments), !s.expandable_segments});
  out.push_back({"garbage_collection_threshold",
                 s.garbage_collection_threshold > 0
                     ? absl::StrFormat("%g", s.garbage_collection_threshold)
                     : std::string("off"),
                 s.garbage_collection_threshold <= 0});
  std::string div;
  for (size_t i = 0; i < s.roundup_power2_divisions.size(); ++i) {
    if (s.roundup_power2_divisions[i] == 0) continue;
    // Bucket 0 holds sizes below 2 MiB, bucket i sizes from 2^(20+i).
    absl::StrAppend(&div, div.empty() ? "" : ", ",
                    i == 0 ? std::string("<2 MiB") : ">=" + FormatBytes(int64_t{1} << (20 + i)),
                    ": ", s.roundup_power2_divisions[i]);
  }
  out.push_back({"roundup_power2_divisions", div.empty() ? "none" : div, div.empty()});
  out.push_back({"release_lock_on_cudamalloc", flag(s.release_lock_on_cudamalloc),
                 !s.release_lock_on_cudamalloc});
  out.push_back({"pinned_use_cuda_host_register", flag(s.pinned_use_cuda_host_register),
                 !s.pinned_use_cuda_host_register});
  out.push_back({"pinned_num_register_threads", absl::StrCat(s.pinned_num_register_threads),
                 s.pinned_num_register_threads <= 1});
  return out;
}

std::vector<PhasePeak> PhasePeaks(const Snapshot& snap, const DeviceTimeline& dt) {
  std::vector<PhasePeak> out;
  const std::optional<LiveCurveRef> curve = dt.live_curve();
  if (!curve || dt.num_events == 0) return out;
  Attribution attribution(snap, nullptr);
  LifetimeCategorizer phases(attribution, dt);
  if (!phases.ModelRan()) return out;
  std::array<std::optional<PhasePeak>, kNumStepPhases> best;
  for (uint32_t e = 0; e < dt.num_events; ++e) {
    const StepPhase phase = phases.PhaseAtEvent(e);
    const TimelinePoint point = TimelinePoint::After(e);
    const int64_t live = curve->At(point);
    std::optional<PhasePeak>& b = best[static_cast<size_t>(phase)];
    if (!b || live > b->live_bytes) b = PhasePeak{phase, live, point, kNoTime};
  }
  for (std::optional<PhasePeak>& b : best) {
    if (!b) continue;
    b->time_us = dt.TimeOf(snap, b->event);
    out.push_back(*b);
  }
  return out;
}

std::vector<StepPeak> StepPeaks(const Snapshot& snap, const DeviceTimeline& dt,
                                std::string* method) {
  std::vector<StepPeak> out;
  const std::optional<LiveCurveRef> curve = dt.live_curve();
  if (!curve || dt.num_events == 0) return out;
  StepInfo steps;
  if (!StepsByPhases(snap, dt, steps) || steps.ranges.size() < 2) return out;
  if (method != nullptr) *method = steps.method;
  for (const StepRange& range : steps.ranges) {
    StepPeak p;
    p.range = range;
    p.live_bytes = -1;
    for (uint32_t e = range.first_event(); e < range.end_event(); ++e) {
      const TimelinePoint point = TimelinePoint::After(e);
      if (const int64_t live = curve->At(point); live > p.live_bytes) {
        p.live_bytes = live;
        p.event = point;
      }
    }
    p.time_us = dt.TimeOf(snap, p.event);
    out.push_back(p);
  }
  return out;
}

TimelineOptions SummaryTimelineOptions() {
  TimelineOptions to;
  to.keep = KeepLifetimes::kNone;  // the peaks only
  to.curve = false;
  return to;
}

SummaryReport Summarize(const Snapshot& snap, const SummaryOptions& options) {
  if (!options.peaks) return Summarize(snap, nullptr, options);
  absl::StatusOr<Timeline> tl = ReconstructTimeline(snap, SummaryTimelineOptions());
  return Summarize(snap, tl.ok() ? &*tl : nullptr, options);
}

SummaryReport Summarize(const Snapshot& snap, const Timeline* timeline,
                        const SummaryOptions& options) {
  SummaryReport report;
  report.source = snap.source;
  report.unique_stacks = static_cast<int64_t>(snap.stacks.size()) - 1;  // minus the empty stack
  report.unique_frames = static_cast<int64_t>(snap.frames.size());
  report.annotations = static_cast<int64_t>(snap.annotations.size());
  report.settings = snap.settings;
  report.read_warnings = snap.diagnostics.Shown();

  // The devices with a segment or a trace event, ascending, each found by binary search in a
  // flat array: a tree of 100,000 devices cost a cache miss per level per lookup (issue 54).
  std::vector<int32_t> ids;
  ids.reserve(snap.segments.size() + snap.traces.size());
  for (const Segment& seg : snap.segments) ids.push_back(seg.device);
  for (const DeviceTrace& trace : snap.traces) {
    if (trace.size() > 0) ids.push_back(trace.device);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  auto slot = [&](int32_t device) {
    return static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), device) - ids.begin());
  };
  std::vector<DeviceSummary> devices(ids.size());
  for (size_t k = 0; k < ids.size(); ++k) devices[k].device = ids[k];
  std::vector<std::map<std::pair<PoolId, bool>, Totals>> pools(ids.size());
  std::vector<std::map<int64_t, Totals>> streams(ids.size());
  std::optional<SiteNamer> namer;
  for (const Segment& seg : snap.segments) {
    Totals t = SegmentTotals(snap, seg);
    const size_t k = slot(seg.device);
    DeviceSummary& dev = devices[k];
    dev.totals += t;
    if (seg.is_expandable) ++dev.segments_expandable;
    pools[k][{seg.pool, seg.is_small}] += t;
    streams[k][seg.stream] += t;
  }
  const SegmentsByDevice by_device(snap);  // one sort for every device (issue 54)
  for (const DeviceTrace& trace : snap.traces) {
    if (trace.size() == 0) continue;
    DeviceSummary& dev = devices[slot(trace.device)];
    absl::flat_hash_map<uint64_t, int64_t> live;  // addr -> allocs seen and not yet freed
    // The timeline counted what the pass would, in its own pass over this device's trace.
    const DeviceTimeline* counted = nullptr;
    if (timeline != nullptr && !options.own_pass) {
      const DeviceTimeline* dt = timeline->Find(trace.device);
      if (dt != nullptr && dt->event_begin == trace.begin && dt->num_events == trace.size()) {
        counted = dt;
      }
    }
    if (counted != nullptr) {
      JoinTimelineCounts(snap, snap.EventsOf(trace), *counted, options, dev, live, namer);
    } else {
      ScanEvents(snap, trace, options, dev, live, namer);
    }
    CountGhosts(snap, by_device, live, dev);
  }
  if (options.peaks && timeline != nullptr) {
    for (const DeviceTimeline& dt : timeline->devices) {
      const size_t k = slot(dt.device);
      if (k == ids.size() || ids[k] != dt.device || dt.num_events == 0) continue;
      DeviceSummary* it = &devices[k];
      TracePeaks p;
      p.live_bytes = dt.peak_requested;
      p.live_event = dt.peak_event;
      p.live_time_us = dt.TimeOf(snap, dt.peak_event);
      p.reserved_bytes = dt.peak_reserved;
      p.reserved_event = dt.peak_reserved_event;
      p.reserved_time_us = dt.TimeOf(snap, dt.peak_reserved_event);
      it->peaks = p;
      DeviceSummary::Unexplained& u = it->unexplained;
      u.unplaced_frees = dt.unplaced_frees;
      u.unplaced_free_bytes = dt.unplaced_free_bytes;
      if (std::optional<uint32_t> e = dt.first_unplaced_free.index()) u.first_unplaced_free = *e;
      u.beyond_end_blocks = dt.open_without_block;
      u.beyond_end_bytes = dt.beyond_end_requested_bytes;
      u.unreconciled_bytes = dt.unreconciled_requested_bytes;
      u.live_over_reserved = dt.MaxLiveOverReserved();
      if (options.phase_peaks) {
        it->phase_peaks = PhasePeaks(snap, dt);
        it->step_peaks = StepPeaks(snap, dt, &it->steps_method);
        it->one_forward_pass = it->step_peaks.empty() && HoldsOneForwardPass(snap, dt);
      }
      for (SummaryOom& o : it->ooms) {
        std::optional<int64_t> live;
        for (const DeviceTimeline::OomMoment& m : dt.oom_moments) {
          if (m.event == o.event) live = m.live_rounded;
        }
        if (!live) continue;
        o.live_bytes = live;
        o.capacity = dt.ReservedAt(TimelinePoint::After(o.event)) + o.device_free;
      }
    }
  }
  report.devices.reserve(devices.size());
  for (size_t k = 0; k < devices.size(); ++k) {
    DeviceSummary& dev = devices[k];
    for (const auto& [key, totals] : pools[k]) {
      dev.pools.push_back(PoolSummary{key.first, key.second, totals});
    }
    for (const auto& [stream, totals] : streams[k]) {
      dev.streams.push_back(StreamSummary{stream, totals});
    }
    report.totals += dev.totals;
    report.devices.push_back(std::move(dev));
  }
  if (options.workload) {
    Attribution attribution(snap, nullptr);
    for (WorkloadEvidence& w : DetectWorkloads(attribution)) {  // both ascending by device
      auto it = std::lower_bound(
          report.devices.begin(), report.devices.end(), w.device,
          [](const DeviceSummary& d, int32_t device) { return d.device < device; });
      if (it != report.devices.end() && it->device == w.device) it->workload = std::move(w);
    }
  }
  report.ring_overflowed = snap.settings.trace_alloc_overflowed.value_or(false);
  for (DeviceSummary& dev : report.devices) {
    dev.trace_start =
        ExplainTraceStart(snap.settings, dev.totals.trace_entries, dev.frees_without_alloc);
  }
  return report;
}

}  // namespace memsnap::analysis
