// `memsnap report`: one self-contained HTML page (no network) of the finished analyses of
// analysis/compose/report_analysis.h: the zoomable memory timeline with the largest lifetimes as
// bands, the allocator's state at any stored moment, the site tables and the replay curves; or, for
// two files, the diff page.
//
// clang-format off
//   ReportAnalysis ──BuildReportData──> JSON ──WriteHtmlPage──> page (data, chart library, script)
// clang-format on
//
// The page's data is JSON in a <script type="application/json"> element; its large arrays are
// packed as base64 varints (docs/report.md, "The page's data"). The script (web/src/*.js) and the
// chart library (uPlot, from web/node_modules) are inlined at build time (cmake/web_assets.cmake).
#pragma once

#include <ostream>
#include <string>

#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/model/snapshot.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Everything the single-file page draws.
nlohmann::ordered_json BuildReportData(const Snapshot& snap,
                                       const analysis::ReportAnalysis& analysis);

/// Everything the diff page draws: both timelines, sites before/after/delta, scope totals.
/// `top_sites`: site rows shown (twice as many deltas, growth and shrink together).
nlohmann::ordered_json BuildDiffData(const Snapshot& before, const Snapshot& after,
                                     const analysis::DiffReportAnalysis& analysis, int top_sites);

/// Writes the page: the template with `data` embedded (made safe for a <script> element).
void WriteHtmlPage(const nlohmann::ordered_json& data, std::ostream& out);

/// What the budget left out of a device's curve, in the page's words ("To keep the page small,
/// zooming shows down to 1.25 ms per column ..."); empty when lod.reduced is false.
std::string LodReducedNote(const analysis::TimelineLod& lod);
/// What the budget left out of a device's allocator states ("The allocator's state is kept at 50
/// evenly spaced moments (of 200) ..."); empty when every evenly spaced state was kept.
std::string StatesReducedNote(const analysis::AllocatorStates& states);

/// Packs integers as base64 of zigzag LEB128 varints (the page's decoder reads them back).
std::string PackVarints(const std::vector<int64_t>& values);

}  // namespace memsnap::report
