// Renderers of `memsnap replay --backend cuda`: text (one block per configuration) and JSON.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator/replay_cuda.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `replay --backend cuda --json` object: file, trace_device, events, gpu{ordinal, name,
/// total, free_before}, scale, notes, configs[{label, conf, allocator, driver_peak,
/// driver_after, pool_reserved_high, pool_used_high, peak_reserved, predicted_peak_reserved,
/// peak_live, allocs, ooms, predicted_ooms, driver_ooms, alloc_calls_ns,
/// calls[{name, calls, total_ns, p50_ns, p99_ns}], error}]. Absent values are null.
/// The GPU replay's caveats in words, one sentence each ("note:" lines; `notes` in JSON).
std::vector<std::string> CudaReplayNotes(const analysis::CudaReplayReport& report);

nlohmann::ordered_json CudaReplayToJson(const analysis::CudaReplayReport& report);

/// The GPU and notes, then per configuration: the driver's peak beside the simulator's
/// prediction, OOMs, and a table of call times.
void RenderCudaReplayText(const analysis::CudaReplayReport& report, std::ostream& out);

}  // namespace memsnap::report
