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

}  // namespace memsnap::analysis
