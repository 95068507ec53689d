// `top`: the largest groups of live memory at a moment (the peak by default), and the folded
// stacks behind them. Over several files: each rank's peak and largest site, with the outliers.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/stale_gradients.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct TopRequest {
  MomentArg at;
  analysis::GroupOptions group;
  analysis::DeviceFilter device;  // nullopt: every device, each at its own moment
  size_t top = 20;                // rows kept; the rest fold into one "[N others]" row; 0: all
  bool folded = false;            // also group by whole stacks (for a flame graph)
};

struct TopResult {
  std::string file;
  MomentArg at;
  analysis::GroupReport report;                 // every row
  std::vector<analysis::GroupRow> rows;         // the rows shown: report.rows with the tail folded
  std::optional<analysis::GroupReport> stacks;  // with `folded`: grouped by stack
  /// Per device whose moment lies in a forward pass: last step's gradients still alive then
  /// (analysis::FindStaleGradients), the memory zero_grad(set_to_none=True) before it frees.
  std::vector<analysis::StaleGradients> stale_gradients;
};

Needs TopNeeds(const TopRequest& request);
absl::StatusOr<TopResult> TopQuery(const TopRequest& request, Session& session);

struct TopRanksResult {
  MomentArg at;
  analysis::GroupBy by = analysis::GroupBy::kSite;
  analysis::RankTable ranks;
  std::vector<LeftOutFile> skipped;
};
absl::StatusOr<TopRanksResult> TopRanksQuery(const TopRequest& request,
                                             const std::vector<InputFile>& files,
                                             const ReadSettings& settings);

}  // namespace memsnap::query
