// `memsnap replay`: feed one device's trace (alloc / free_requested / free_completed, requested
// sizes and streams, in order) to the allocator simulator under one or more configurations, and
// optionally compare the simulator's segment events with the recorded ones (--verify).
// See docs/allocator-model.md §17.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/timeline/device_filter.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/sim/allocator.h"
#include "memsnap/sim/config.h"

namespace memsnap::analysis {

/// One configuration to replay: a label for the column and the settings.
struct ReplayConfig {
  std::string label;  // "recorded", or the conf string the user gave
  sim::AllocatorConfig config;
};

/// Appends each of `confs` applied on top of `recorded` (PYTORCH_CUDA_ALLOC_CONF syntax), labelled
/// with its text. InvalidArgument names the first that does not parse (`--conf "...": why`).
absl::Status AppendConfs(const sim::AllocatorConfig& recorded,
                         const std::vector<std::string>& confs, std::vector<ReplayConfig>& out);

enum class EmptyCacheMode : uint8_t {
  kHeuristic,  // a burst of segment_free/unmap not followed by segment_alloc/map/oom = empty_cache
  kIgnore,
};

struct ReplayOptions {
  DeviceFilter device;  // default: the first device with trace events
  /// Device capacity in bytes; nullopt: implied by the snapshot (an oom entry), else unlimited.
  std::optional<int64_t> device_memory;
  bool verify = false;  // compare the first configuration's segment events with the trace
  bool curve = false;   // keep the reserved-bytes curve
  EmptyCacheMode empty_cache = EmptyCacheMode::kHeuristic;
  /// Start every configuration from the recorded state (FitStart::kRecorded, fit.h: the segments
  /// alive when the trace began, rebuilt from the snapshot), the default of every command; false:
  /// cold (`--start cold`), the blocks alive then allocated first in address order. --verify
  /// always starts from the recorded state when it can.
  bool warm_start = true;
  int max_threads = 0;  // 0: one thread per configuration
};

/// The trace position of cold-start work (blocks allocated before the trace began).
inline constexpr uint32_t kPreexistingEvent = 0xffffffffu;

struct ReplayOom {
  uint32_t event = 0;  // index into the device trace
  int64_t requested = 0;
  int64_t rounded = 0;
  int64_t stream = 0;
  int64_t device_free = 0;
  StackId stack;
  std::string site;  // the stack's site label (attribution.h); empty without a stack
};

/// A point of the reserved-bytes curve: emitted whenever reserved changes.
struct CurvePoint {
  uint32_t event = 0;
  int64_t time_us = kNoTime;
  int64_t reserved = 0;
  int64_t allocated = 0;
};

struct ConfigResult {
  ReplayConfig config;
  int64_t peak_reserved = 0;
  int64_t peak_allocated = 0;
  int64_t peak_active = 0;
  int64_t peak_requested = 0;
  int64_t final_reserved = 0;
  int64_t final_allocated = 0;
  /// State at the reserved peak, at its fullest moment (the most allocated while reserved was
  /// at its peak): what fragmentation cost at the high-water mark.
  uint32_t peak_event = 0;
  int64_t allocated_at_peak = 0;
  int64_t inactive_split_at_peak = 0;
  int64_t peak_inactive_split_bytes = 0;
  int64_t cuda_mallocs = 0;
  int64_t cuda_frees = 0;
  int64_t maps = 0;
  int64_t unmaps = 0;
  int64_t alloc_retries = 0;
  std::vector<ReplayOom> ooms;
  std::vector<CurvePoint> curve;
  /// garbage_collection_threshold is set but acts only under a memory fraction: it did nothing.
  bool gc_threshold_inert = false;
  /// The configuration names backend:cudaMallocAsync; the native allocator was simulated.
  bool backend_not_simulated = false;
  /// 1 - allocated/reserved at the reserved peak (0 when nothing was reserved).
  double FragmentationAtPeak() const;
};

struct SegmentEventRecord {
  sim::SegmentEvent event;
  uint32_t trace_index = 0;  // position in the device trace (the sim: the event it replayed)
};

struct VerifyResult {
  int64_t segment_events = 0;  // recorded segment events compared
  int64_t simulated_events = 0;
  int64_t matched = 0;
  int64_t allocs = 0;          // alloc events replayed
  int64_t allocs_matched = 0;  // ... whose simulated address equals the recorded one
  /// The first alloc placed elsewhere: trace index, recorded and simulated addresses.
  std::optional<uint32_t> first_alloc_mismatch;
  uint64_t mismatch_real_addr = 0;
  uint64_t mismatch_sim_addr = 0;
  /// First divergence: indices into `real` and `simulated` (nullopt: none).
  std::optional<size_t> first_real;
  std::optional<size_t> first_sim;
  bool warm = false;                // started from the segments alive when the trace began
  int64_t real_final_reserved = 0;  // Σ segments of the device in the snapshot
  int64_t sim_final_reserved = 0;
  std::vector<SegmentEventRecord> real;
  std::vector<SegmentEventRecord> simulated;
  bool exact() const {
    return matched == segment_events && segment_events == simulated_events &&
           allocs_matched == allocs;
  }
};

/// What PyTorch itself did, read from the trace and the final segments (not simulated).
struct RecordedFigures {
  int64_t peak_reserved = 0;   // the reserved curve of the trace's segment events
  int64_t final_reserved = 0;  // Σ the device's segments in the snapshot
  int64_t segment_allocs = 0, segment_frees = 0, maps = 0, unmaps = 0;
  int64_t ooms = 0;  // oom entries
};

/// Where ReplayReport::device_memory comes from.
enum class ReplayMemorySource : uint8_t {
  kUnlimited,  // no capacity: nothing fails
  kFlag,       // --device-memory
  kOomEntry,   // the trace's oom entry: device_free + reserved
};

struct ReplayReport {
  std::string file;
  int32_t device = 0;
  int64_t events = 0;  // trace events of the device
  std::optional<int64_t> device_memory;
  ReplayMemorySource device_memory_source = ReplayMemorySource::kUnlimited;
  int64_t preexisting_blocks = 0;  // allocated at t0 (cold start)
  int64_t preexisting_bytes = 0;
  int64_t inferred_empty_cache = 0;
  bool warm_start = false;  // the configurations started warm
  /// Caveats, as facts; report::ReplayNotes writes them in words.
  bool warm_start_refused =
      false;                     // the recorded start asked, but not every segment is cudaMalloc'd
  int64_t warm_segments = 0;     // warm start: the segments alive when the trace began
  bool ring_overflowed = false;  // the trace's ring buffer dropped its oldest events
  int64_t private_pool_segments = 0;  // segments of private pools, replayed into the default ones
  std::vector<ConfigResult> results;
  std::optional<VerifyResult> verify;
  RecordedFigures recorded;
};

/// Replays `device`'s trace under each configuration (in parallel, one thread each).
/// `configs` must be non-empty; the first is the one --verify checks. Errors: no trace for the
/// requested device.
absl::StatusOr<ReplayReport> Replay(const Snapshot& snapshot,
                                    const std::vector<ReplayConfig>& configs,
                                    const ReplayOptions& options);

/// The configuration list for a sweep spec "max_split_size_mb=128,256,512": one conf string per
/// value, each applied on top of `base_conf` ("" for defaults).
absl::StatusOr<std::vector<std::string>> ExpandSweep(std::string_view spec);

}  // namespace memsnap::analysis
