// Renderers of `memsnap timeline`, `top` and `blocks`: terminal chart, CSV, JSON, tables, folded.
#pragma once

#include <cstdint>
#include <ostream>
#include <utility>
#include <vector>

#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/window.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The window and its figures are analysis's (analysis/timeline/window.h).
using analysis::EventWindow;
using analysis::WindowFigures;

/// The columns of the terminal chart: per column the max (so short peaks stay visible) and the
/// last value (what an empty column to its right shows: the state persists until the next event)
/// of live requested and reserved bytes. Column 0 includes the start state when w.from is it; a
/// column without events carries the previous column's last values.
struct ChartColumns {
  std::vector<int64_t> live, res, live_last, res_last;
  WindowFigures figures;    // ComputeWindow(dt, w), found from the columns
  bool contiguous = false;  // x never decreased: each column was read as one event range
};
/// The chart columns of a window and its figures (needs the stored live curve). Event e falls in
/// column (x(e) - x(first)) * (plot_w - 1) / span, x = time_us or the event index. When x never
/// decreases over the window, each column is a contiguous event range found by binary search, and
/// the cost is one sequential read of the window's curve and times (to check the order); else
/// one pass over the events computing each one's column.
ChartColumns ComputeChartColumns(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                                 const EventWindow& w, int plot_w);

/// Terminal chart of live requested (blocks) and reserved (dotted line) bytes, `width` columns.
/// Without `show_reserved` the scale fits the live curve alone (when reserved dwarfs it).
void RenderTimelineChart(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                         const EventWindow& w, int width, std::ostream& out,
                         bool show_reserved = true);

/// Past kFullDeviceSections devices (report/device_sections.h) the chart of each is one line:
/// the note saying so, then device, events, live at the start, peak and end of its window, and
/// the reserved peak (ComputeWindow). `devices` pairs each timeline with its window.
void RenderTimelineDevicesTable(
    const std::vector<std::pair<const analysis::DeviceTimeline*, EventWindow>>& devices,
    std::ostream& out);

/// CSV: device,event,time_us,live_requested,live_rounded,reserved and, with a category curve, the
/// live bytes of each category (parameter,...,unknown; they add up to live_requested); one row per
/// event in the window.
/// `categories`: the names of the category columns; nullptr: none.
void RenderTimelineCsvHeader(std::ostream& out, const analysis::CategoryNames* categories);
void RenderTimelineCsv(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                       const EventWindow& w, const analysis::CategoryCurve* categories,
                       std::ostream& out);

/// One object of `timeline --json` `devices`: device, events, has_time, start_bytes, peak_bytes,
/// peak_event_index, peak_time_us (null if absent), end_bytes, reserved figures, lifetime classes;
/// with a category curve, "categories": the bytes of each category at the window's start, peak and
/// end, and "category_series": the same at about `samples` events spread over the window (arrays
/// "event", "time_us" and one per category that holds bytes).
nlohmann::ordered_json DeviceTimelineToJson(const Snapshot& snap,
                                            const analysis::DeviceTimeline& dt,
                                            const EventWindow& w,
                                            const analysis::CategoryCurve* categories = nullptr,
                                            int samples = 100);

/// `top` text table (rows as given; totals from the report).
void RenderGroupText(const analysis::GroupReport& report,
                     const std::vector<analysis::GroupRow>& rows, std::ostream& out);
nlohmann::ordered_json GroupToJson(const analysis::GroupReport& report,
                                   const std::vector<analysis::GroupRow>& rows);
/// {"parameter": bytes, ...}: the non-zero categories, in Category order, named in `names`.
nlohmann::ordered_json CategoriesJson(const analysis::CategoryBytes& bytes,
                                      const analysis::CategoryNames& names);
/// Folded stacks, root first: "frame;frame;frame bytes" (flamegraph.pl, inferno, speedscope).
void RenderFolded(const std::vector<analysis::GroupRow>& rows, std::ostream& out);

/// "+1.234 s" style offset of `t` from `t0`; "event N" when there is no time.
std::string FormatMomentLabel(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                              analysis::TimelinePoint p);

}  // namespace memsnap::report
