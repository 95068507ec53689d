// Shared between leaks.cpp (series mode) and leaks_trace.cpp (single-trace mode): the part of the
// analysis that runs once every site has its bytes and counts per point.
#pragma once

#include <vector>

#include "memsnap/analysis/sites/leaks.h"

namespace memsnap::analysis::internal {

/// The points' labels, times and totals; `sites` have bytes/counts of one value per point, but for
/// a site whose growth cannot reach options.min_growth (> 0), which may come with no bytes, no
/// counts and its `verdict` already set (it is counted, never reported: single-trace mode keeps
/// 500,000 one-lifetime sites without a series of 2,000 steps each, issue 54).
/// Classifies every site, marks leaks, projects the full device, sorts and trims to options.top.
LeakReport FinishLeakReport(std::vector<LeakSite> sites, const std::vector<SeriesPoint>& points,
                            const LeakOptions& options);

/// ClassifySeries of the series whose differences from one point to the next are `deltas`:
/// (point i in 1..points-1, values[i] - values[i-1]), ascending point, one per point at most; the
/// points missing are differences of 0. O(deltas), where the series would be O(points).
Verdict ClassifyDeltas(const std::vector<std::pair<size_t, int64_t>>& deltas, size_t points,
                       int64_t tolerance = 0);

/// Sets the label of each site of `reported` (indices into `sites`): DistinctSiteLabels over them
/// and every site that starts from the same label (DistinctLabelStart), so each gets the label
/// the whole table would give it; the other sites keep none.
void LabelReported(std::vector<LeakSite>& sites, const std::vector<size_t>& reported);

/// Capacity implied by the OOM entries of `snapshot` (reserved at the OOM + device_free, largest
/// over devices and entries), or 0 when it has none.
int64_t InferDeviceMemory(const Snapshot& snapshot, const Timeline& timeline);

}  // namespace memsnap::analysis::internal
