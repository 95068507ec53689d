#include "memsnap/analysis/summary.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"

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

// Matches allocs and frees by address over one device's trace to count frees whose alloc is
// older than the window and live blocks whose alloc was never seen (ghosts).
void CountWindowEffects(const Snapshot& snap, const DeviceTrace& trace, DeviceSummary& dev) {
  absl::flat_hash_map<uint64_t, int32_t> live;  // addr -> allocs seen and not yet freed
  for (const TraceEvent& e : snap.EventsOf(trace)) {
    if (e.action == Action::kAlloc) {
      ++live[e.addr];
    } else if (e.action == Action::kFreeCompleted) {
      auto it = live.find(e.addr);
      if (it == live.end() || it->second == 0) {
        ++dev.frees_without_alloc;
      } else {
        --it->second;
      }
    }
  }
  for (const Segment& seg : snap.segments) {
    if (seg.device != dev.device) continue;
    for (const Block& b : snap.BlocksOf(seg)) {
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

SummaryReport Summarize(const Snapshot& snap, const SummaryOptions&) {
  SummaryReport report;
  report.source = snap.source;
  report.unique_stacks = static_cast<int64_t>(snap.stacks.size()) - 1;  // minus the empty stack
  report.unique_frames = static_cast<int64_t>(snap.frames.size());
  report.annotations = static_cast<int64_t>(snap.annotations.size());
  report.settings = snap.settings;

  std::map<int32_t, DeviceSummary> devices;
  std::map<int32_t, std::map<std::pair<PoolId, bool>, Totals>> pools;
  std::map<int32_t, std::map<int64_t, Totals>> streams;
  for (const Segment& seg : snap.segments) {
    Totals t = SegmentTotals(snap, seg);
    DeviceSummary& dev = devices[seg.device];
    dev.device = seg.device;
    dev.totals += t;
    if (seg.is_expandable) ++dev.segments_expandable;
    pools[seg.device][{seg.pool, seg.is_small}] += t;
    streams[seg.device][seg.stream] += t;
  }
  for (const DeviceTrace& trace : snap.traces) {
    if (trace.size() == 0) continue;
    DeviceSummary& dev = devices[trace.device];
    dev.device = trace.device;
    for (const TraceEvent& e : snap.EventsOf(trace)) {
      ++dev.totals.trace_entries;
      ++dev.totals.actions[static_cast<int>(e.action)];
      if (e.has_time()) {
        if (dev.first_time_us == kNoTime || e.time_us < dev.first_time_us) dev.first_time_us = e.time_us;
        if (dev.last_time_us == kNoTime || e.time_us > dev.last_time_us) dev.last_time_us = e.time_us;
      }
    }
    CountWindowEffects(snap, trace, dev);
  }
  for (auto& [device, dev] : devices) {
    for (const auto& [key, totals] : pools[device]) {
      dev.pools.push_back(PoolSummary{key.first, key.second, totals});
    }
    for (const auto& [stream, totals] : streams[device]) {
      dev.streams.push_back(StreamSummary{stream, totals});
    }
    report.totals += dev.totals;
    if (dev.frees_without_alloc > 0) {
      report.warnings.push_back(absl::StrCat(
          "device ", device, ": ", dev.frees_without_alloc,
          " free(s) whose alloc is not in the trace (the trace began mid-run or the ring buffer "
          "overflowed)"));
    }
    if (dev.ghost_blocks > 0 && dev.totals.trace_entries > 0) {
      report.warnings.push_back(absl::StrCat("device ", device, ": ", dev.ghost_blocks,
                                             " live block(s) (", FormatBytes(dev.ghost_bytes),
                                             ") were allocated before the trace began"));
    }
    report.devices.push_back(std::move(dev));
  }
  if (snap.settings.trace_alloc_overflowed.value_or(false)) {
    report.warnings.push_back(
        "allocator_settings.trace_alloc_overflowed is set: the trace ring buffer overflowed and "
        "lost its oldest events");
  } else {
    for (const DeviceSummary& dev : report.devices) {
      if (dev.frees_without_alloc > 0 && dev.frees_without_alloc * 100 > dev.totals.trace_entries) {
        report.warnings.push_back(absl::StrCat(
            "device ", dev.device, ": the trace ring buffer likely overflowed (",
            FormatPercent(static_cast<double>(dev.frees_without_alloc) /
                          static_cast<double>(std::max<int64_t>(1, dev.totals.trace_entries))),
            " of events are frees without an alloc)"));
      }
    }
  }
  return report;
}

}  // namespace memsnap::analysis
