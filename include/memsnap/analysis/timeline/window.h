// A window of one device's timeline (`timeline --from/--to`, resolved from the moment grammar by
// query::ResolveWindow): the points it spans, and its figures (start, peak and end of live bytes,
// the reserved peak).
#pragma once

#include <cstdint>

#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// A slice of one device's timeline: the points from `from` to `to`, inclusive (from = the start
/// includes the initial state). The figures of a window (start/peak/end) are computed over it.
struct EventWindow {
  TimelinePoint from;
  TimelinePoint to;
  /// The first event in the window (0 when it holds the start).
  uint32_t first_event() const { return from.event().value_or(0); }
};

/// Start/peak/end of live requested bytes and peak reserved bytes over a window.
struct WindowFigures {
  int64_t start_bytes = 0, peak_bytes = 0, end_bytes = 0;
  TimelinePoint peak_event;  // the first point of the window that reaches peak_bytes
  int64_t peak_reserved = 0;
  TimelinePoint peak_reserved_event;  // DeviceTimeline::ReservedPeakIn the window
};
/// Needs the stored curve (TimelineOptions::curve).
WindowFigures ComputeWindow(const DeviceTimeline& dt, const EventWindow& w);

/// ComputeWindow's steps, for a caller that reads the window's events its own way (the terminal
/// chart finds each column's maximum): the figures with the start state as the peak; the maximum
/// of the stored curve (relative to its start, DeviceTimeline::live_net) over events [a, b]; and
/// raising the peak to the first event of [a, b] that reaches `top` when it exceeds it (no event
/// before `a` may reach it).
WindowFigures WindowStartFigures(const DeviceTimeline& dt, const EventWindow& w);
int64_t MaxLiveNet(const DeviceTimeline& dt, int64_t a, int64_t b);
void RaiseWindowPeak(const DeviceTimeline& dt, int64_t top, int64_t a, int64_t b, WindowFigures& f);

/// Why a device's trace frees blocks it never allocated. `summary` and `frag` (and the page) say
/// it in the same words (report::TraceStartWarning); docs/figures.md, "Where the trace begins".
enum class TraceStart : uint8_t {
  kMidRun,                // recording began after those blocks were allocated
  kRingOverflowed,        // the file says its ring buffer overflowed (trace_alloc_overflowed)
  kRingLikelyOverflowed,  // the trace is as long as a full ring buffer, and over 1% of it are
                          // frees without an alloc
};

/// The trace holds as many events as a full ring buffer: at least `trace_alloc_max_entries` when
/// the file records it; otherwise a capacity people pass to `_record_memory_history(max_entries=)`
/// (a multiple of 1,000 or a power of two, from 1,000 up). A buffer that overflowed keeps exactly
/// its capacity, so a trace of 22,332 events did not overflow one.
bool TraceFillsRingBuffer(const AllocatorSettings& settings, int64_t trace_entries);

/// What a trace of `trace_entries` events with `frees_without_alloc` frees of blocks it never
/// allocated says about where it begins.
TraceStart ExplainTraceStart(const AllocatorSettings& settings, int64_t trace_entries,
                             int64_t frees_without_alloc);

}  // namespace memsnap::analysis
