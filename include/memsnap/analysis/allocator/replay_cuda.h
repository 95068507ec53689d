// `memsnap replay --backend cuda`: replay a device's trace against real device memory. For the
// caching allocator (native / expandable segments) the simulator makes the decisions and every
// segment allocation, free, map and unmap is a real driver call (sim::CudaDeviceMemory); for
// `backend:cudaMallocAsync` the trace's alloc/free go straight to cuMemAllocAsync/cuMemFreeAsync
// on one stream per recorded stream and the default pool's watermarks are read. Each
// configuration reports the driver's view beside the simulator's prediction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/sim/cuda_backend.h"
#include "memsnap/sim/cuda_driver.h"

namespace memsnap::analysis {

struct CudaReplayOptions {
  int gpu = 0;          // CUDA device ordinal
  DeviceFilter device;  // trace device; default: the first with trace events
  double scale = 1.0;   // every request size is multiplied by this (0 < scale <= 1 usually)
  EmptyCacheMode empty_cache = EmptyCacheMode::kHeuristic;
  /// --start warm was asked for: the GPU replay still starts cold (see RunCudaReplay) and says so.
  bool warm_start = false;
  sim::NanoClock clock = sim::SteadyNowNs;  // tests inject a deterministic clock
};

/// One configuration on the GPU.
struct CudaConfigResult {
  ReplayConfig config;
  std::string allocator;  // "native", "expandable" or "cudaMallocAsync"
  /// Driver view: max(total - free) during the replay minus the usage before it
  /// (cuMemGetInfo sampled after every allocation).
  int64_t driver_peak = 0;
  /// Usage left after the replay, before memsnap released everything (cuMemGetInfo after).
  int64_t driver_after = 0;
  /// cudaMallocAsync: CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH / USED_MEM_HIGH of the default pool.
  std::optional<int64_t> pool_reserved_high;
  std::optional<int64_t> pool_used_high;
  /// The caching allocator's own peak reserved on this card (native / expandable).
  std::optional<int64_t> peak_reserved;
  int64_t peak_live = 0;    // Σ sizes of live allocations at most (the floor of any allocator)
  int64_t allocs = 0;       // allocations replayed
  int64_t ooms = 0;         // allocations that failed on this card
  int64_t driver_ooms = 0;  // CUDA_ERROR_OUT_OF_MEMORY results from the driver
  std::vector<sim::CallSummary> calls;
  int64_t alloc_calls_ns = 0;  // Σ time in allocation-side calls (alloc, create, map, ...)
  /// The simulator's prediction for the same (scaled) trace, capacity = free memory before.
  std::optional<int64_t> predicted_peak_reserved;
  std::optional<int64_t> predicted_ooms;
  std::string error;  // a fatal driver error that stopped this configuration
};

struct CudaReplayReport {
  std::string file;
  int32_t trace_device = 0;
  int64_t events = 0;
  int gpu = 0;
  std::string gpu_name;
  int64_t gpu_total = 0;
  int64_t gpu_free_before = 0;
  double scale = 1.0;
  /// Caveats, as facts; report::CudaReplayNotes writes them in words.
  bool warm_start_refused = false;  // --start warm asked: the GPU replay starts cold
  int64_t peak_live = 0;            // the (scaled) trace's most bytes live at once
  /// peak_live exceeds the card's free memory: the scale that would fit it with 10% to spare.
  std::optional<double> suggested_scale;
  std::vector<CudaConfigResult> results;
};

/// Initialises `driver`, opens `options.gpu` and replays every configuration in order on it.
/// Errors (FailedPrecondition): no device, ordinal out of range, no trace for the device, bad
/// scale. A fatal driver error inside one configuration is reported in its `error` field.
absl::StatusOr<CudaReplayReport> RunCudaReplay(const Snapshot& snapshot,
                                               const std::vector<ReplayConfig>& configs,
                                               const CudaReplayOptions& options,
                                               sim::CudaDriver& driver);

/// LoadCudaDriver() then RunCudaReplay; errors are prefixed "--backend cuda: ".
absl::StatusOr<CudaReplayReport> RunCudaReplay(const Snapshot& snapshot,
                                               const std::vector<ReplayConfig>& configs,
                                               const CudaReplayOptions& options);

/// true when the configuration replays on CUDA's stream-ordered pool.
bool IsCudaMallocAsync(const ReplayConfig& config);

}  // namespace memsnap::analysis
