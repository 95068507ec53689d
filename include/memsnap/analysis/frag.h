// `memsnap frag`: fragmentation figures of the caching allocator's segments, at the end of the
// snapshot or at a peak reconstructed from the trace. Every figure is defined in
// docs/fragmentation.md; the names below follow it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// Which allocator state the detailed report describes.
enum class FragMoment : uint8_t {
  kEnd,            // the `segments` of the snapshot (the default)
  kPeakReserved,   // per device, the moment of peak reserved (most allocated among ties)
  kPeakAllocated,  // per device, the first moment of peak allocated
  kMoment,         // per device, the state after FragOptions::moment (an event or a time)
};

struct FragOptions {
  FragMoment at = FragMoment::kEnd;
  /// kMoment: the moment (Moment::Kind::kEvent or kTime), resolved per device as `top --at`.
  Moment moment;
  /// Number of evenly spaced samples for the fragmentation timeline; 0 = no timeline.
  int timeline_samples = 0;
};

/// Figures over a set of segments. Value type: `+=` sums, except largest_free_bytes (max).
/// Invariant per segment (and so for every sum): reserved = allocated + pending_free + free.
struct FragFigures {
  int64_t segments = 0;
  int64_t blocks = 0;
  int64_t reserved_bytes = 0;
  int64_t allocated_bytes = 0;       // active_allocated blocks
  int64_t pending_free_bytes = 0;    // active_pending_free blocks (freed, waiting on stream events)
  int64_t free_bytes = 0;            // inactive blocks ("external free")
  int64_t requested_bytes = 0;       // requested bytes of active blocks
  int64_t internal_waste_bytes = 0;  // Σ size - requested over active blocks
  int64_t free_blocks = 0;
  int64_t largest_free_bytes = 0;  // largest inactive block
  int64_t stranded_bytes = 0;      // free bytes empty_cache cannot release
  int64_t releasable_bytes = 0;    // bytes empty_cache would return to the driver
  int64_t free_segments = 0;       // segments with no active block
  FragFigures& operator+=(const FragFigures& o);
};

/// 1 - largest / free, 0 when nothing is free.
double ExternalFragmentation(int64_t free_bytes, int64_t largest_free_bytes);

/// One block of a segment in address order (for the segment map).
struct BlockSpan {
  int64_t size = 0;
  BlockState state = BlockState::kInactive;
};

struct SegmentFrag {
  int32_t device = 0;
  uint64_t address = 0;
  int64_t stream = 0;
  PoolId pool;
  bool is_small = false;
  bool is_expandable = false;
  FragFigures figures;
  double external_fragmentation = 0;
  std::vector<BlockSpan> spans;
};

/// Free space of one (device, pool, stream, small/large) group: blocks of one group can only serve
/// requests of that group, so this is where fragmentation is measured.
struct PoolStreamFrag {
  int32_t device = 0;
  PoolId pool;
  int64_t stream = 0;
  bool is_small = false;
  int64_t segments = 0;
  int64_t reserved_bytes = 0;
  int64_t free_bytes = 0;
  int64_t pending_free_bytes = 0;
  int64_t free_blocks = 0;
  int64_t largest_free_bytes = 0;
  double external_fragmentation = 0;
};

/// The largest request (in bytes, as passed to the allocator) that would be served from cached
/// free blocks of one (device, pool, stream), without reserving new memory. 0: none would.
struct WhatFits {
  int32_t device = 0;
  PoolId pool;
  int64_t stream = 0;
  int64_t small_pool_bytes = 0;  // requests that round to <= 1 MiB
  int64_t large_pool_bytes = 0;  // requests that round to > 1 MiB
  int64_t largest_bytes = 0;     // max of the two
};

/// Free blocks whose size is in [2^log2, 2^(log2+1)).
struct FreeSizeBucket {
  int log2 = 0;
  int64_t blocks = 0;
  int64_t bytes = 0;
};

struct DeviceFrag {
  int32_t device = 0;
  FragFigures figures;
  /// 1 - Σ_groups largest free / Σ free, over the device's (pool, stream, small/large) groups.
  double external_fragmentation = 0;
  /// False: the snapshot's segments. True: reconstructed from the trace as the state after event
  /// `event_index` of the device's trace (-1 = before its first event).
  bool reconstructed = false;
  int64_t event_index = -1;
  int64_t time_us = kNoTime;
};

/// One row of the fragmentation timeline.
struct FragSample {
  int32_t device = 0;
  int64_t event_index = -1;  // the state after this event; -1 = before the first event
  int64_t time_us = kNoTime;
  FragFigures figures;
  double external_fragmentation = 0;
};

/// Figures at a device's peaks, reconstructed from its trace.
struct DevicePeaks {
  int32_t device = 0;
  int64_t trace_start_us = kNoTime;  // time of the device's first event
  FragSample peak_reserved;
  FragSample peak_allocated;
  /// 1 - peak allocated / peak reserved (the utilization-style ratio of GMLake and STAlloc);
  /// 0 when nothing was reserved.
  double peak_overhead = 0;
};

struct FragReport {
  SourceInfo source;
  FragMoment at = FragMoment::kEnd;
  Moment moment;  // kMoment: the moment asked for
  FragFigures totals;
  double external_fragmentation = 0;  // over all groups, as in DeviceFrag
  std::vector<DeviceFrag> devices;    // ascending device
  /// Sorted by reserved desc, allocated desc, device, address.
  std::vector<SegmentFrag> segments;
  std::vector<PoolStreamFrag> groups;     // sorted by device, pool, stream, large first
  std::vector<WhatFits> fits;             // sorted by device, pool, stream
  std::vector<FreeSizeBucket> histogram;  // ascending log2, empty buckets left out
  std::vector<DevicePeaks> peaks;         // devices that have a trace
  std::vector<FragSample> timeline;       // by device, then event index
  int64_t max_split_size = -1;            // from allocator_settings; -1 = unlimited
  /// Events the reconstruction could not undo consistently (ring-buffer gaps, estimates...).
  std::vector<std::string> warnings;
};

/// Computes the fragmentation report. Fails only when options ask for a moment that needs a
/// trace and the snapshot has none (InvalidArgument naming the file).
absl::StatusOr<FragReport> AnalyzeFragmentation(const Snapshot& snapshot,
                                                const FragOptions& options = {});

}  // namespace memsnap::analysis
