// `replay`: the trace replayed through the allocator simulator under the recorded settings and
// other ones (docs/simulator.md); `report`: every analysis behind the HTML page. Both read the
// session's snapshot; the page's figures come from the same timeline functions as every command.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct ReplayRequest {
  /// "native", "expandable", "cudaMallocAsync" or empty: a named allocator to compare with.
  std::string allocator;
  std::vector<std::string> confs;   // PYTORCH_CUDA_ALLOC_CONF strings, each on the recorded ones
  std::vector<std::string> sweeps;  // "max_split_size_mb=64,128,256" (analysis::ExpandSweep)
  analysis::ReplayOptions options;
};

/// The configurations replayed: the recorded settings first, then the allocator, every conf and
/// every sweep value, each applied on top of the recorded settings.
absl::StatusOr<std::vector<analysis::ReplayConfig>> ReplayConfigs(const ReplayRequest& request,
                                                                  const Snapshot& snap);
/// Errors name the file (no trace, a setting that does not parse).
absl::StatusOr<analysis::ReplayReport> ReplayQuery(const ReplayRequest& request, Session& session);

/// The page of one file.
absl::StatusOr<analysis::ReportAnalysis> ReportQuery(const analysis::ReportAnalysisOptions& options,
                                                     Session& session);
/// The diff page of two files.
absl::StatusOr<analysis::DiffReportAnalysis> DiffReportQuery(
    const analysis::ReportAnalysisOptions& options, Session& before, Session& after);

}  // namespace memsnap::query
