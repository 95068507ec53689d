// The caching allocator's state (segments and their blocks) at many moments of one device's trace,
// reconstructed the way `memsnap frag --at` does it (docs/fragmentation.md), for the HTML report's
// "state at a moment" view. Free memory is split the way empty_cache() sees it: releasable (whole
// free segments, whole free pages of expandable ones) and stranded (free blocks inside segments in
// use). Each allocated block carries the lifetime it belongs to, for its size and stack.
//
// Segments whose layout is the same in several states are stored once; a state lists the ones it
// holds. The figures of a state are FragSample's, computed by the same code as `frag --at`, so the
// page and `memsnap frag --at peak --json` agree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

enum class SpanKind : uint8_t {
  kAllocated,
  kPendingFree,
  kFreeStranded,    // free, inside a segment that empty_cache() keeps
  kFreeReleasable,  // free, and empty_cache() would release it
};

/// A run of one segment, in address order. Free blocks of an expandable segment are cut into the
/// whole pages empty_cache() unmaps (releasable) and the partial pages around them (stranded).
struct StateSpan {
  int64_t size = 0;
  int64_t requested = 0;  // active blocks: requested bytes
  SpanKind kind = SpanKind::kFreeStranded;
  int64_t lifetime = -1;  // active blocks: index into DeviceTimeline::blocks, -1 when unknown
  friend bool operator==(const StateSpan&, const StateSpan&) = default;
};

struct StateSegment {
  uint64_t address = 0;
  int64_t size = 0;
  int64_t stream = 0;
  PoolId pool;
  bool is_small = false;
  bool is_expandable = false;
  std::vector<StateSpan> spans;
  friend bool operator==(const StateSegment&, const StateSegment&) = default;
};

struct AllocatorState {
  TimelinePoint event;  // the state after this device-local event, or before the first (Start)
  int64_t time_us = kNoTime;
  std::vector<std::string> labels;  // "peak reserved", "peak allocated", "end", and the caller's
  FragSample sample;                // the figures, as `frag --at event:N` prints them
  std::vector<uint32_t> segments;   // indices into AllocatorStates::segments, address order
  /// One of the states event by event around a labelled moment (AllocatorStatesOptions::around):
  /// kept with the labelled ones; false for an evenly spaced one.
  bool step = false;
};

/// What one event changes in the state (AllocatorStates::stream), as the script of the page
/// applies it: a segment's spans from `keep` on replaced, a segment set whole (new, or its
/// extent or settings changed), or a segment gone.
struct StateEdit {
  enum class Op : uint8_t { kSpans, kSet, kRemove };
  Op op = Op::kSpans;
  /// kSet: the whole segment; kSpans: the segment's header and its new spans from `keep` on
  /// (up to the unchanged tail); kRemove: its address.
  StateSegment segment;
  uint32_t keep = 0;   // kSpans: the first spans, kept as they were
  uint32_t erase = 0;  // kSpans: the spans of the old layout that `segment.spans` replace
  friend bool operator==(const StateEdit&, const StateEdit&) = default;
};

/// Every event's change to the state, in order, so that the state after any event is the stored
/// state before it with the edits of the events between applied (issue 36 §3: any event exactly),
/// and the figures after each event, `frag --at event:N`'s.
struct StateStream {
  std::vector<uint32_t> first_edit;  // per event, its first edit in `edits`; one more at the end
  std::vector<StateEdit> edits;
  std::vector<FragFigures> figures;  // after each event
};

struct AllocatorStatesOptions {
  int samples = 200;  // evenly spaced states from before the first event to the end
  /// Spans stored in all, over the distinct segments; past it, evenly spaced states are thinned
  /// (labelled ones are always kept).
  int64_t max_spans = 150000;
  /// Further moments to include with a label ("peak live", "OOM").
  std::vector<std::pair<TimelinePoint, std::string>> moments;
  /// The states after each of the `around` events before and after every labelled moment too, so
  /// that a reader can step through them event by event. Those farthest from their moment are
  /// left out first when their distinct segments would take more than a quarter of max_spans.
  int around = 0;
  /// FindStatePeaks' answer when the caller already has it; without it the states' rewind finds
  /// the allocated peak on the way (FindStatePeaks would cost a rewind of its own).
  std::optional<std::pair<int64_t, int64_t>> peaks;
  /// Every event's change (AllocatorStates::stream) when the device's trace has at most this many
  /// events; 0: never.
  int64_t stream_max_events = 0;
  /// The file's segments by device, from a caller that reconstructs the states of many devices
  /// (one sort for all of them; it must outlive the call); null: the device's are found by a scan.
  const SegmentsByDevice* segments = nullptr;
};

struct AllocatorStates {
  int32_t device = 0;
  std::vector<StateSegment> segments;  // distinct layouts
  std::vector<AllocatorState> states;  // ascending event
  TimelinePoint peak_reserved_event;   // as `frag --at peak` picks it
  TimelinePoint peak_allocated_event;
  int samples = 0;  // evenly spaced states kept
  /// Evenly spaced states asked for: `samples` < even_moments when the budget (max_spans) thinned
  /// them; labelled states are always kept. The page says so (report, StatesReducedNote).
  int64_t even_moments = 0;
  RewindCaveats rewind;  // the reconstruction's caveats, as `frag` finds them
  /// Every event's change (AllocatorStatesOptions::stream_max_events), for a trace short enough.
  std::optional<StateStream> stream;
};

/// The events after which `dt`'s device has its peak reserved bytes (the timeline's reserved
/// peak, docs/figures.md) and its peak allocated bytes (one backward pass over the trace), as
/// `frag --at peak` and `--at peak-allocated` pick them.
std::pair<int64_t, int64_t> FindStatePeaks(const Snapshot& snap, const DeviceTimeline& dt);

/// The states of `dt`'s device. `dt` must have kept every lifetime (for the stacks); a device
/// without a trace gets its final state only.
AllocatorStates ReconstructAllocatorStates(const Snapshot& snap, const DeviceTimeline& dt,
                                           const AllocatorStatesOptions& options = {});

/// What the states' rewind reads to name a block that undoing a free brings back: the lifetime
/// that free event ends. Stored per lifetime at its last free (the event whose undo brings its
/// block back), in event order, found through a bitmap of those events and its running counts:
/// 4 bytes a freed lifetime and under 2 bits an event. A table by event (4 bytes an event, 78 MB
/// on the 19.5 M-event benchmark file) is built only if an event that is not a last free is asked
/// for, which a consistent trace never does (docs/report.md, "Size and speed").
class FreedLifetimes {
 public:
  explicit FreedLifetimes(const DeviceTimeline& dt);
  /// The lifetime that device-local event `e` frees (free_requested or free_completed, the
  /// highest-numbered lifetime if several claim it), -1 for none.
  int32_t At(uint32_t e);

 private:
  bool IsLastFree(uint32_t e) const { return (last_free_[e / 64] >> (e % 64)) & 1; }
  uint32_t Rank(uint32_t e) const;  // last frees before e

  const DeviceTimeline* dt_;
  std::vector<uint64_t> last_free_;  // bit e: some lifetime's last free is event e
  std::vector<uint32_t> rank_;       // per word of last_free_: the bits set before it
  std::vector<int32_t> lifetime_;    // per set bit, in event order
  std::vector<int32_t> by_event_;    // the table by event, once an other event is asked for
};

/// The same states, from the caller's FreedLifetimes(dt): the report builds it before it hands
/// the rewind to a worker thread, so that it lies in memory the main thread freed, not in memory
/// the worker maps anew (docs/BENCHMARKS.md).
AllocatorStates ReconstructAllocatorStates(const Snapshot& snap, const DeviceTimeline& dt,
                                           const AllocatorStatesOptions& options,
                                           FreedLifetimes freed);

}  // namespace memsnap::analysis
