// `memsnap report`: one self-contained HTML page (no network, no libraries) that draws the memory
// timeline, the peak and what was alive at it, the top allocation sites, the segment map and the
// replay curves; or, for two files, the diff view.
//
//   Snapshot ──ReconstructTimeline──> Timeline ──BuildReportData──> JSON ──WriteHtmlPage──> page
//
// The page's data is plain JSON embedded in a <script type="application/json"> element; the page's
// script (src/report/html_report_page.cpp) draws it as inline SVG. The curves are downsampled to a
// fixed number of pixel columns, keeping each column's minimum and maximum, so the page stays small
// and fast on traces of millions of events. As PyTorch's Active Memory Timeline does, the largest
// lifetimes are drawn as stacked bands (allocation order, bottom to top), under one band that
// folds all the others.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/group.h"
#include "memsnap/analysis/timeline.h"
#include "memsnap/model/snapshot.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

struct HtmlReportOptions {
  int columns = 2000;         // pixel columns of the downsampled curves
  int bands = 1000;           // lifetimes drawn as their own band; the rest fold into one
  int top_sites = 25;         // rows of the site tables (the tail folds into "[N others]")
  std::vector<std::string> replay_confs;  // --replay: allocator configurations to simulate
  analysis::GroupOptions group;           // how sites are keyed (frame filters, depth)
};

/// The curves of one device cut into `columns` equal x ranges. x is microseconds since the
/// device's first event when every event has a time, else the event index.
struct CurveColumns {
  bool has_time = false;
  int64_t t0_us = kNoTime;  // time of the first event (has_time)
  double x_lo = 0, x_hi = 0;  // column c covers [x_lo + c*w, x_lo + (c+1)*w), w = (x_hi-x_lo)/n
  std::vector<int64_t> live_min, live_max;          // live requested bytes
  std::vector<int64_t> reserved_min, reserved_max;  // reserved bytes
  /// The device-local event whose state the column's bands show: the one with the most live
  /// bytes in the column (-1: the initial state); for an empty column, the last earlier event.
  std::vector<int64_t> sample_event;
  size_t size() const { return live_min.size(); }
};

/// Cuts the device's curves into min(columns, num_events) columns; empty when it has no events.
CurveColumns DownsampleCurves(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                              int columns);

/// x of device-local event `e` in the units of CurveColumns (e < 0: x_lo).
double EventX(const Snapshot& snap, const analysis::DeviceTimeline& dt, const CurveColumns& cols,
              int64_t e);

/// The lifetimes drawn as their own band: three quarters by bytes x duration, the rest by
/// bytes, at most `n` in all, returned in stacking order (allocation order, then index).
std::vector<uint32_t> SelectBandLifetimes(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                                          const CurveColumns& cols, int n);

/// One band: its lifetime, the columns it covers and its bottom edge per column, run-length
/// encoded as (column, bottom bytes) at each change.
struct Band {
  uint32_t lifetime = 0;
  int first_col = -1, last_col = -1;  // -1: live at no sampled column
  std::vector<std::pair<int, int64_t>> bottoms;
};

/// Stacks the bands from 0 up, in the given order, at each column's sample event; the folded band
/// sits on top of them. `rest` gets, per column, the live bytes of the lifetimes that are not
/// bands (the folded band's height). Invariant: at every column, rest + Σ sizes of the bands live
/// at the sample == live bytes at the sample event (== live_max). A bottom is recorded only when
/// it moves by more than `epsilon` bytes from the last recorded one (an invisible sub-pixel move
/// otherwise costs a point in every column), so drawn bottoms are within `epsilon` of exact.
std::vector<Band> StackBands(const analysis::DeviceTimeline& dt, const CurveColumns& cols,
                             const std::vector<uint32_t>& lifetimes, int64_t epsilon,
                             std::vector<int64_t>& rest);

/// Everything the single-file page draws. Errors only from the analyses (bad filter regex).
absl::StatusOr<nlohmann::ordered_json> BuildReportData(const Snapshot& snap,
                                                       const HtmlReportOptions& options);

/// Everything the diff page draws: both curves, sites before/after/delta, scope totals.
absl::StatusOr<nlohmann::ordered_json> BuildDiffData(const Snapshot& before,
                                                     const Snapshot& after,
                                                     const HtmlReportOptions& options);

/// Writes the page: the template with `data` embedded (made safe for a <script> element).
void WriteHtmlPage(const nlohmann::ordered_json& data, std::ostream& out);

}  // namespace memsnap::report
