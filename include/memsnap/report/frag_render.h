#pragma once

#include <ostream>

#include "memsnap/analysis/frag.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Output options of `memsnap frag` (kept apart from the analysis options).
struct FragRenderOptions {
  int top = 20;           // segment-map rows; 0 = every segment
  int bar_width = 40;     // characters per segment bar
  bool timeline = false;  // print the timeline table instead of the report
};

/// The `frag --json` object: totals, devices, groups, what_fits, histogram, segments (all of
/// them), peaks, timeline, warnings. Byte figures end in _bytes.
nlohmann::ordered_json FragToJson(const analysis::FragReport& report);

/// The human-readable report: totals, free space per pool and stream, what fits, peaks, the
/// free-block histogram and the segment map (`options.top` largest segments).
void RenderFragText(const analysis::FragReport& report, const FragRenderOptions& options,
                    std::ostream& out);

/// The fragmentation timeline as an aligned table.
void RenderFragTimelineText(const analysis::FragReport& report, std::ostream& out);

/// The fragmentation timeline as CSV with a header row.
void RenderFragTimelineCsv(const analysis::FragReport& report, std::ostream& out);

/// The figures object shared by JSON renderers (also used by `check`).
nlohmann::ordered_json FragFiguresToJson(const analysis::FragFigures& figures);

}  // namespace memsnap::report
