// `memsnap frag`: fragmentation figures of the caching allocator's segments, at the end of the
// snapshot or at a peak reconstructed from the trace. Every figure is defined in
// docs/fragmentation.md; the names below follow it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/fit.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/timeline/device_filter.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/window.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// Which allocator state the detailed report describes.
enum class FragMoment : uint8_t {
  kEnd,            // the `segments` of the snapshot (the default)
  kPeakReserved,   // per device, the timeline's reserved peak (docs/figures.md)
  kPeakAllocated,  // per device, the first moment of peak allocated
  kMoment,         // per device, the state after FragOptions::moment (an event or a time)
};

struct FragOptions {
  FragMoment at = FragMoment::kEnd;
  /// kMoment: the moment (Moment::Kind::kEvent or kTime), resolved per device as `top --at`.
  Moment moment;
  /// The moment as the user wrote it (`--at peak-allocated`), echoed by errors; empty: the
  /// errors name `at` instead.
  std::string at_text;
  /// Number of evenly spaced samples for the fragmentation timeline; 0 = no timeline.
  int timeline_samples = 0;
  /// Sites named per device in FragCost::pins; 0 = none (the sites are not named at all).
  int pins = 3;
  /// The session's categories (GroupOptions::categories): the pins' kinds.
  CategoryNames categories;
  /// --device N: only that device's segments and trace (the totals, groups, histogram and
  /// segment map are that device's); nullopt: every device. A device the file lacks is an
  /// InvalidArgument naming the flag.
  DeviceFilter device;
};

struct FragFixOptions {
  /// Settings to try, each applied on top of the recorded ones; empty: DefaultOomCandidates
  /// (oom.h), the candidates of every fit answer.
  std::vector<std::string> candidates;
  FitStart start = FitStart::kRecorded;  // where every replay starts (fit.h)
  int max_threads = 0;                   // replays in parallel (0: all cores)
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

/// How much fragmentation costs a device, judged on stranded / reserved at the moment of the
/// answer (docs/fragmentation.md, "The answer"): kNone 0, kSmall below 5% (or below
/// kFragMinBytes, whatever the share), kModerate 5% to 15%, kLarge 15% and more.
enum class FragVerdict : uint8_t { kNone, kSmall, kModerate, kLarge };
/// Stranded bytes below this are small whatever their share: too little to matter on any GPU.
inline constexpr int64_t kFragMinBytes = int64_t{128} << 20;
/// The stranded shares (of reserved bytes) from which the verdict is moderate, then large.
inline constexpr double kFragModerateShare = 0.05;
inline constexpr double kFragLargeShare = 0.15;
/// "none", "small", "moderate", "large".
std::string_view FragVerdictName(FragVerdict v);
/// The verdict of `stranded` bytes out of `reserved` (the thresholds above).
FragVerdict JudgeFragmentation(int64_t stranded, int64_t reserved);

/// The answer of one device in a few typed figures: the verdict and the stranded memory it rests
/// on, at the moment judged (a file's headline in `frag` over many files).
struct FragAnswer {
  int32_t device = 0;
  FragVerdict verdict = FragVerdict::kNone;
  int64_t stranded_bytes = 0;
  double stranded_share = 0;  // of the reserved bytes then; 0 when nothing was reserved
  bool at_peak = false;       // the reserved peak; false: the end (no trace)
  int64_t event_index = -1;   // at_peak: the state after this device-local event (-1: before)
};

/// A site whose live blocks keep segments with stranded free space from being released: each
/// segment with stranded bytes counts for every site with an allocated block in it.
struct StrandedPin {
  std::string site;  // the attribution model's label (SiteNamer), as `top` and `oom` name it
  /// The site is a bracketed row that names no line of the program (no stack recorded, allocated
  /// before the trace): the text leaves it out, the JSON keeps it.
  bool synthetic = false;
  Category category = Category::kUnknown;  // what the stack shows alone (SiteNamer::CategoryOf)
  int64_t blocks = 0;                      // its allocated blocks in those segments
  int64_t allocated_bytes = 0;             // their bytes
  int64_t segments = 0;                    // segments with stranded bytes it holds a block in
  int64_t stranded_bytes = 0;              // Σ stranded bytes of those segments
};

/// What fragmentation costs one device at the moment that decides whether the run fits: its
/// reserved peak (reconstructed from the trace), or without a trace the end of the snapshot.
struct FragCost {
  int32_t device = 0;
  bool at_peak = false;      // false: the snapshot's segments (the device has no trace)
  int64_t event_index = -1;  // at_peak: the state after this device-local event (-1: before)
  int64_t time_us = kNoTime;
  int64_t trace_start_us = kNoTime;
  FragFigures figures;  // at that moment
  FragVerdict verdict = FragVerdict::kNone;
  /// The sites pinning the most stranded bytes, most first (ties: label); at most
  /// FragOptions::pins.
  std::vector<StrandedPin> pins;
};

/// The typed answer of one device's cost.
FragAnswer FragAnswerOf(const FragCost& cost);

/// One allocator setting replayed on a device's trace (FindFragFixes).
struct FragSetting {
  std::string conf;           // as tried ("recorded" for the recorded settings)
  std::string settings;       // the resulting settings, canonical (sim::FormatAllocatorConf)
  int64_t peak_reserved = 0;  // the replay's peak reserved bytes, on no capacity limit
  /// The smallest device memory the trace replays on without a failed malloc (0: none found):
  /// under memory pressure the allocator releases its cache, so this, not the unlimited peak
  /// reserved, is what a setting saves.
  int64_t fits_on = 0;
  /// Set when this setting provably takes the same decisions as an earlier one on this trace:
  /// that one's label; its replay stands for both.
  std::string same_as;
};

/// The allocator setting that lowers the device memory a trace needs the most, proven by replaying
/// it through the simulator under each candidate (the smallest capacity each fits on).
struct FragFix {
  int32_t device = 0;
  int64_t trace_events = 0;
  int64_t live_peak = 0;  // the replay's peak of live requested bytes: no capacity below it fits
  int64_t recorded_ooms = 0;  // oom entries in the trace: their requests are served in every fit
  bool warm = false;          // the replays started from the recorded state (FitStart)
  /// The recorded settings first, then every candidate, in order.
  std::vector<FragSetting> settings;
  /// Index into `settings` of the candidate that fits on the least memory when that is at least
  /// kFitMinGain less than the recorded settings need (SmallestFitIndex); -1 when none is.
  int best = -1;
};

/// Counts of events the backward reconstruction could not undo consistently.
struct UndoProblems {
  int64_t alloc_without_block = 0;    // undoing an alloc whose block is not live
  int64_t free_of_live_block = 0;     // undoing a free_completed whose block is already live
  int64_t block_outside_segment = 0;  // a block that lies in no reconstructed segment
  int64_t segment_with_blocks = 0;    // undoing a segment_alloc/map that still holds blocks
  int64_t segment_overlap = 0;        // undoing a segment_free/unmap over an existing segment
  int64_t estimated_sizes = 0;        // blocks whose size was estimated from the request
  bool any() const {
    return alloc_without_block + free_of_live_block + block_outside_segment + segment_with_blocks +
               segment_overlap >
           0;
  }
};

/// What undoing a device's trace to its start found that makes the states before some events
/// approximate: blocks freed in the trace but allocated before it, and events that could not be
/// undone consistently. report::RewindWarnings says them in words.
struct RewindCaveats {
  int32_t device = 0;
  int64_t pre_window_blocks = 0;
  int64_t pre_window_bytes = 0;
  /// Why those blocks were allocated before the trace (read when pre_window_blocks > 0).
  TraceStart trace_start = TraceStart::kMidRun;
  UndoProblems problems;
  /// The warnings these make (0 to 2).
  int64_t count() const { return (pre_window_blocks > 0 ? 1 : 0) + (problems.any() ? 1 : 0); }
};

struct FragReport {
  SourceInfo source;
  CategoryNames categories;  // what the pins' categories are named (FragOptions::categories)
  FragMoment at = FragMoment::kEnd;
  Moment moment;  // kMoment: the moment asked for
  FragFigures totals;
  double external_fragmentation = 0;  // over all groups, as in DeviceFrag
  std::vector<DeviceFrag> devices;    // ascending device
  /// Sorted by stranded desc (the segments fragmentation costs memory in first), reserved desc,
  /// allocated desc, device, address.
  std::vector<SegmentFrag> segments;
  std::vector<PoolStreamFrag> groups;     // sorted by device, pool, stream, large first
  std::vector<WhatFits> fits;             // sorted by device, pool, stream
  std::vector<FreeSizeBucket> histogram;  // ascending log2, empty buckets left out
  std::vector<DevicePeaks> peaks;         // devices that have a trace
  std::vector<FragSample> timeline;       // by device, then event index
  int64_t max_split_size = -1;            // from allocator_settings; -1 = unlimited
  /// Per device, what the reconstruction could not undo consistently (ring-buffer gaps...).
  std::vector<RewindCaveats> rewind;
  /// The answer: per device (ascending), what fragmentation costs at its reserved peak.
  std::vector<FragCost> costs;
  /// Per device with a trace, the setting that lowers its peak (FindFragFixes; the command fills
  /// it, empty when the replays were not asked for).
  std::vector<FragFix> fixes;
};

/// Computes the fragmentation report. Fails only when options ask for a moment that needs a
/// trace and the snapshot has none (InvalidArgument naming the file). `timeline`: the snapshot's
/// timeline when the caller has it (any TimelineOptions: only its peaks and moments are read);
/// nullptr: rebuilt here. The reserved peak is the timeline's (docs/figures.md).
absl::StatusOr<FragReport> AnalyzeFragmentation(const Snapshot& snapshot,
                                                const FragOptions& options = {},
                                                const Timeline* timeline = nullptr);

/// Replays every device's trace (devices without one are left out) under the recorded settings
/// and each candidate, all in parallel and without a capacity limit, and picks the candidate
/// with the lowest peak reserved. InvalidArgument: a candidate that does not parse.
absl::StatusOr<std::vector<FragFix>> FindFragFixes(const Snapshot& snapshot,
                                                   const FragFixOptions& options = {});

}  // namespace memsnap::analysis
