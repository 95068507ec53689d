#pragma once

#include <ostream>

#include "memsnap/analysis/summary.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `summary --json` object: segments, blocks, reserved_bytes, allocated_bytes, active_bytes,
/// requested_bytes, trace_entries, actions, unique_stacks, unique_frames, devices[...].
nlohmann::ordered_json SummaryToJson(const analysis::SummaryReport& report);

/// Human-readable summary with aligned columns.
/// `warnings` = false (-q) leaves out the warnings section.
void RenderSummaryText(const analysis::SummaryReport& report, std::ostream& out,
                       bool warnings = true);

/// Shared by renderers: the JSON form of allocator settings and pool ids.
nlohmann::ordered_json SettingsToJson(const AllocatorSettings& settings);
std::string PoolName(const PoolId& pool);

}  // namespace memsnap::report
