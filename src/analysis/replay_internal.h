// Internals of the replay driver shared by replay.cpp and replay_run.cpp (and the unit tests).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "memsnap/analysis/replay.h"

namespace memsnap::analysis {

enum class OpKind : uint8_t { kAlloc, kFree, kFreeRequested, kFreeCompleted, kEmptyCache };

/// Trace position of the cold-start allocations of blocks alive before the trace began.
inline constexpr uint32_t kPreexisting = kPreexistingEvent;

/// One simulator operation, 32 bytes; `event` indexes the device trace.
struct Op {
  uint64_t addr;
  int64_t size;
  int64_t stream;
  uint32_t event;
  OpKind kind;
};

/// The configuration-independent part of a replay.
struct PreparedTrace {
  std::vector<Op> ops;  // cold-start allocations first, then the trace
  size_t num_events = 0;
  int64_t preexisting_blocks = 0;
  int64_t preexisting_bytes = 0;
  int64_t inferred_empty_cache = 0;
};

/// Builds the operation list: adjacent free_requested/free_completed pairs become one free,
/// blocks freed without an alloc (or alive in the final segments without one) are allocated
/// first in address order, and inferred empty_cache calls are inserted (§17).
PreparedTrace PrepareTrace(const Snapshot& snap, const DeviceTrace& trace, EmptyCacheMode mode);

/// The recorded segment events of a device trace, each with the base of its segment
/// (expandable VA ranges are reconstructed from the map addresses).
std::vector<SegmentEventRecord> RecordedSegmentEvents(const Snapshot& snap,
                                                      const DeviceTrace& trace);

/// device_free + reserved at the first oom entry, or nullopt when the trace has none.
std::optional<int64_t> ImpliedCapacity(const Snapshot& snap, const DeviceTrace& trace);

struct RunOptions {
  int64_t capacity = sim::kUnlimitedCapacity;
  bool curve = false;
  std::span<const TraceEvent> events;  // for time stamps and oom stacks
  bool validation = false;             // reuse recorded addresses and compare
  const std::vector<SegmentEventRecord>* recorded = nullptr;
};

struct RunOutput {
  ConfigResult result;
  std::optional<VerifyResult> verify;
};

/// Replays `prepared` under one configuration.
RunOutput RunConfig(const PreparedTrace& prepared, const ReplayConfig& config,
                    const RunOptions& options);

/// Aligns recorded and simulated segment events (resynchronising after a mismatch) and fills
/// segment_events, simulated_events, matched and the first divergence.
void CompareSegmentEvents(VerifyResult& v);

}  // namespace memsnap::analysis
