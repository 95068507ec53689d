// `export --format csv|perfetto|folded`: what the exports print of each lifetime, decided here so
// that the writers (report/export_tables.h, report/perfetto.h) only print it. The site and the
// category of a lifetime come from analysis::LifetimeSitesOf, the same GroupContext `top`,
// `summary` and the page categorize with.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/lifetime_sites.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

enum class ExportFormat : uint8_t { kCsv, kPerfetto, kFolded };

struct ExportRequest {
  ExportFormat format = ExportFormat::kCsv;
  analysis::GroupOptions group;  // the frame filter (--hide, --keep); `by` is the query's
  MomentArg at;                  // kFolded: the moment of the folded stacks
  int top_slices = 500;          // kPerfetto: lifetimes drawn as slices per device; 0 = all
};

/// The lifetimes of one device drawn as Perfetto slices.
struct DeviceSlices {
  /// Indices into the device's blocks: the `top_slices` largest by requested size (ties: the
  /// earlier lifetime first), in that order.
  std::vector<uint32_t> lifetimes;
  /// Their sites (labels distinct among this device's slices), categories and filtered stacks,
  /// in the same order.
  analysis::LifetimeSites sites;
};

struct ExportResult {
  /// kCsv: every lifetime, devices in the timeline's order, each device's in order.
  analysis::LifetimeSites lifetimes;
  /// kPerfetto: one per device of the timeline, in its order (empty for devices without events).
  std::vector<DeviceSlices> slices;
  /// kFolded: live memory at the moment grouped by whole stack.
  std::optional<analysis::GroupReport> folded;
};

/// Errors: invalid --hide/--keep regexes, a timeline that could not be rebuilt, a moment outside
/// the trace (kFolded).
absl::StatusOr<ExportResult> ExportQuery(const ExportRequest& request, Session& session);

}  // namespace memsnap::query
