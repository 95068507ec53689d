#include "memsnap/analysis/timeline/window.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <tuple>

namespace memsnap::analysis {

namespace {

LiveCurveRef CurveOf(const DeviceTimeline& dt) {
  std::optional<LiveCurveRef> curve = dt.live_curve();
  if (!curve) {
    std::fprintf(stderr, "memsnap: internal error: a window of device %d without its curve\n",
                 static_cast<int>(dt.device));
    std::abort();
  }
  return *curve;
}

}  // namespace

int64_t MaxLiveNet(const DeviceTimeline& dt, int64_t a, int64_t b) {
  // A plain loop over contiguous memory, nothing else per event.
  const int64_t* net = dt.live_net.data();
  int64_t top = net[a];
  for (int64_t e = a + 1; e <= b; ++e) top = std::max(top, net[e]);
  return top;
}

WindowFigures WindowStartFigures(const DeviceTimeline& dt, const EventWindow& w) {
  WindowFigures f;
  const LiveCurveRef curve = CurveOf(dt);
  f.start_bytes = curve.At(w.from);
  f.end_bytes = curve.At(w.to);
  f.peak_bytes = f.start_bytes;
  f.peak_event = w.from;
  std::tie(f.peak_reserved, f.peak_reserved_event) = dt.ReservedPeakIn(w.from, w.to);
  return f;
}

void RaiseWindowPeak(const DeviceTimeline& dt, int64_t top, int64_t a, int64_t b,
                     WindowFigures& f) {
  if (dt.start_requested + top <= f.peak_bytes) return;
  const int64_t* net = dt.live_net.data();
  f.peak_bytes = dt.start_requested + top;
  f.peak_event =
      TimelinePoint::After(static_cast<uint32_t>(std::find(net + a, net + b + 1, top) - net));
}

WindowFigures ComputeWindow(const DeviceTimeline& dt, const EventWindow& w) {
  WindowFigures f = WindowStartFigures(dt, w);
  const int64_t first = w.first_event(), last = w.to.index();
  if (first <= last) RaiseWindowPeak(dt, MaxLiveNet(dt, first, last), first, last, f);
  return f;
}

bool TraceFillsRingBuffer(const AllocatorSettings& settings, int64_t trace_entries) {
  if (settings.trace_alloc_max_entries) {
    return *settings.trace_alloc_max_entries > 0 &&
           trace_entries >= *settings.trace_alloc_max_entries;
  }
  constexpr int64_t kSmallestRing = 1000;
  const bool power_of_two = (trace_entries & (trace_entries - 1)) == 0;
  return trace_entries >= kSmallestRing && (trace_entries % 1000 == 0 || power_of_two);
}

TraceStart ExplainTraceStart(const AllocatorSettings& settings, int64_t trace_entries,
                             int64_t frees_without_alloc) {
  if (settings.trace_alloc_overflowed.value_or(false)) return TraceStart::kRingOverflowed;
  const bool many = frees_without_alloc * 100 > trace_entries;  // over 1% of the events
  if (many && TraceFillsRingBuffer(settings, trace_entries)) {
    return TraceStart::kRingLikelyOverflowed;
  }
  return TraceStart::kMidRun;
}

}  // namespace memsnap::analysis
