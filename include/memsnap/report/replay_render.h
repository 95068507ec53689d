// Renderers of `memsnap replay`: a side-by-side text table, JSON, the reserved-bytes CSV.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator/replay.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The replay's caveats in words, one sentence each: what `replay` prints as "note:" lines and
/// the JSON and the page carry as `notes`.
std::vector<std::string> ReplayNotes(const analysis::ReplayReport& report);

/// The `replay --json` object: file, device, events, device_memory, preexisting_blocks,
/// inferred_empty_cache, notes, configs[{label, conf, peak_reserved, ...}], and `verify`
/// ({segment_events, matched, simulated_events, allocs, allocs_matched, match_rate,
/// first_divergence}) when --verify ran.
nlohmann::ordered_json ReplayToJson(const analysis::ReplayReport& report, const Snapshot& snap);

/// One column per configuration, one row per metric; then OOMs and the verify section.
void RenderReplayText(const analysis::ReplayReport& report, const Snapshot& snap,
                      std::ostream& out);

/// Long-format CSV: config,event,time_us,reserved_bytes,allocated_bytes (one row per change).
std::string ReplayCurveCsv(const analysis::ReplayReport& report);

}  // namespace memsnap::report
