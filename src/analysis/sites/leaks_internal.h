// Shared between leaks.cpp (series mode) and leaks_trace.cpp (single-trace mode): the part of the
// analysis that runs once every site has its bytes and counts per point.
#pragma once

#include <vector>

#include "memsnap/analysis/sites/leaks.h"

namespace memsnap::analysis::internal {

/// The points' labels, times and totals; `sites` have bytes/counts of one value per point.
/// Classifies every site, marks leaks, projects the full device, sorts and trims to options.top.
LeakReport FinishLeakReport(std::vector<LeakSite> sites, const std::vector<SeriesPoint>& points,
                            const LeakOptions& options);

/// Sets every site's label (DistinctLabels over the sites).
void LabelSites(std::vector<LeakSite>& sites);

/// Capacity implied by the OOM entries of `snapshot` (reserved at the OOM + device_free, largest
/// over devices and entries), or 0 when it has none.
int64_t InferDeviceMemory(const Snapshot& snapshot, const Timeline& timeline);

}  // namespace memsnap::analysis::internal
