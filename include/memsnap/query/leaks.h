// `leaks`: memory a site keeps growing and never gives back, across a series of snapshots of one
// run or across the steps of one trace (docs/leaks.md).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct LeaksRequest {
  analysis::LeakOptions options;
  analysis::StepOptions steps;  // single-trace mode
  bool sort_by_time = false;    // series mode: order by the traces' last times
};

/// What the step finder found, in words: why there are fewer than two steps, or what was found
/// instead (empty for StepsFinding::kNone). Errors of step moments and `leaks` both say it.
std::string StepsNote(const analysis::StepInfo& steps);

/// Single-trace mode: the steps of one file's trace.
absl::StatusOr<analysis::LeakReport> LeaksQuery(const LeaksRequest& request, Session& session);

struct LeaksSeriesResult {
  analysis::LeakReport report;
  std::vector<LeftOutFile> skipped;
};
/// Series mode: two or more snapshots of one run.
absl::StatusOr<LeaksSeriesResult> LeaksSeriesQuery(const LeaksRequest& request,
                                                   const std::vector<InputFile>& files,
                                                   const ReadSettings& settings);

}  // namespace memsnap::query
