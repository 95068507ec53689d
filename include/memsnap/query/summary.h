// `summary`: counts and totals per device, pool and stream, the peaks, and what the memory live at
// the peak is (categories). Over several files (one per rank): each file's summary and the
// per-rank table.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/analysis/timeline/device_filter.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct SummaryRequest {
  int threads = 0;  // for the summary's own passes; 0 = all cores
  /// --device N: only that device's section and categories (the file's totals stay the file's);
  /// nullopt: every device. A device the file lacks is an InvalidArgument naming the flag.
  analysis::DeviceFilter device;
};

/// One file's summary and the categories of its memory at the peak.
struct SummaryResult {
  analysis::SummaryReport summary;
  std::vector<analysis::DeviceCategories> categories_at_peak;
  analysis::CategoryNames category_names;  // what categories_at_peak's categories are named
};

/// What SummaryQuery needs of its session (the timeline keeps the lifetimes live at the peak).
Needs SummaryNeeds();
absl::StatusOr<SummaryResult> SummaryQuery(const SummaryRequest& request, Session& session);

/// Several files: each file's summary (without categories) and the per-rank table.
struct SummaryRanksResult {
  std::vector<analysis::SummaryReport> files;
  analysis::RankTable ranks;
  std::vector<LeftOutFile> skipped;
};
absl::StatusOr<SummaryRanksResult> SummaryRanksQuery(const std::vector<InputFile>& files,
                                                     const ReadSettings& settings);

}  // namespace memsnap::query
