// `diff A B`: live memory by site before and after (at each file's peak when both have a trace,
// else the end), totals per device, pool and stream, settings; and the stacks for a
// differential flame graph.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/analysis/timeline/device_filter.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct DiffRequest {
  analysis::DiffOptions options;
  bool folded = false;  // also diff by whole stacks (for a differential flame graph)
  /// `--step N`: each file at the peak of its own step N (a step moment, ParseMomentArg), in
  /// place of options.at.
  std::optional<MomentArg> step;
  /// --device N: only that device's totals (its scopes and its peak); the sites are those of
  /// every device, as without the flag. nullopt: every device. A device neither file has is an
  /// InvalidArgument naming the flag.
  analysis::DeviceFilter device;
};

struct DiffResult {
  analysis::DiffReport report;
  std::optional<analysis::DiffReport> stacks;  // with `folded`: grouped by stack
};

Needs DiffNeeds(const DiffRequest& request);
/// Compares `before` with `after` (each opened with DiffNeeds).
absl::StatusOr<DiffResult> DiffQuery(const DiffRequest& request, Session& before, Session& after);

}  // namespace memsnap::query
