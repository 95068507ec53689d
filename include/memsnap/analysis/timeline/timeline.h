// Timeline reconstruction: block and segment lifetimes plus the live/reserved curves of each
// device, rebuilt from the (ring-buffer) trace and anchored on the final state
// (docs/snapshot-format.md §6).
//
// clang-format off
//   Snapshot ──ReconstructTimeline──> Timeline
//                                     └── devices[] DeviceTimeline
//                                         ├── blocks    [BlockLifetime]   keyed by (address, version)
//                                         ├── segments  [SegmentLifetime]
//                                         ├── live_net         one point per event (live_curve adds the start)
//                                         └── reserved_steps   one point per segment event
// clang-format on
//
// Curve semantics (what PyTorch's "Active Memory Timeline" plots): a block is live from its `alloc`
// to its `free_completed`; `free_requested` does not end it. Pre-window blocks (free seen, alloc
// older than the trace) and ghosts (live at the end, never seen in the trace) are live from t0. The
// curve ends at the snapshot's live bytes (Σ requested_size of its active blocks) when the trace
// explains them. Where it does not, one model holds for every reader (docs/figures.md, "When the
// trace does not explain the state"): final bytes the trace cannot explain are live from t0
// (`unreconciled_*_bytes`); blocks the trace leaves live that the final state does not hold stay
// live to the end (`beyond_end_*_bytes`), so the start is never lowered below what is known; and
// frees of blocks in no segment the file records are left out (`unplaced_frees`). Each is
// reported, never dropped silently.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/timeline/device_filter.h"
#include "memsnap/analysis/timeline/event_index.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/sim/sizes.h"

namespace memsnap::analysis {

/// How the timeline rounds a traced request it has no final block for: round_size without
/// roundup_power2_divisions (plain multiples of 512) whatever the file recorded, as
/// docs/timeline.md documents, so the rounded curve does not depend on allocator settings.
/// Under recorded divisions the real block can be larger (sim::RoundSize with
/// snapshot.settings.roundup_power2_divisions would give it).
inline constexpr const sim::RoundupDivisions& kTimelineRounding = sim::kNoRoundupDivisions;

enum class LifetimeClass : uint8_t {
  kInWindow,   // alloc and free_completed both in the trace
  kPreWindow,  // only the free seen: the alloc is older than the trace
  kGhost,      // live at the end, never seen in the trace
  kOpen,       // alloc seen, still live at the end
};
/// "in-window", "pre-window", "ghost", "open".
std::string_view LifetimeClassName(LifetimeClass c);

/// A moment of a device's timeline.
struct Moment {
  enum class Kind : uint8_t {
    kPeak,
    kEnd,
    kTime,        // an absolute time_us (for a trace without times: an event index)
    kEvent,       // a device-local event index; negative counts from the end (-1: the last)
    kSinceStart,  // microseconds after the device's first event ("+25ms", "1.5s")
    kBeforeEnd,   // microseconds before the device's last event ("-5s")
  };
  Kind kind = Kind::kPeak;
  int64_t value = 0;
};

/// Which block lifetimes ReconstructTimeline keeps in DeviceTimeline::blocks. The curves, peaks,
/// class totals, counters and segments are the same whatever is kept; keeping fewer is what makes
/// `timeline` and `top` cheap (a 2.2M-event trace has 1.1M lifetimes, 70 MB of them).
enum class KeepLifetimes : uint8_t {
  kAll,     // every lifetime, in order of first appearance, then the ghosts
  kLiveAt,  // only those live at TimelineOptions::moment (each device at its own), same order
  kNone,    // none: dt.blocks stays empty
};

/// One occupancy of a block address. Its events are *device-local* (0 = the device's first
/// event), none when the trace did not see them: no `alloc_event` means live from t0, no
/// `free_completed_event` live at the end.
struct BlockLifetime {
  uint64_t address = 0;
  uint32_t version = 0;  // reuse count of this address on this device, in trace order (0-based)
  LifetimeClass cls = LifetimeClass::kInWindow;
  int64_t requested_size = 0;  // the trace's size, or the block's requested_size for ghosts
  int64_t rounded_size = 0;    // the final block's size when live at the end, else round_size
  int64_t stream = 0;
  StackId stack;  // alloc stack; for pre-window the free's stack; for ghosts the block's stack
  LocalEvent alloc_event;
  LocalEvent free_requested_event;
  LocalEvent free_completed_event;
  BlockId block;  // the final-state block when live at the end (ghost/open), else invalid
  /// The first point at which it is live (the start for one older than the trace).
  TimelinePoint live_from() const { return alloc_event.PointOr(TimelinePoint::Start()); }
  /// Live at `p`: allocated by then and not yet freed.
  bool LiveAt(TimelinePoint p) const { return live_from() <= p && !free_completed_event.SeenBy(p); }
  bool live_at_end() const { return !free_completed_event.seen(); }
  friend bool operator==(const BlockLifetime&, const BlockLifetime&) = default;
};

/// One segment (segment_alloc..segment_free) or one expandable mapping (segment_map..unmap).
struct SegmentLifetime {
  uint64_t address = 0;
  uint32_t version = 0;
  LifetimeClass cls = LifetimeClass::kInWindow;
  bool mapping = false;  // segment_map/unmap (expandable) rather than segment_alloc/free
  int64_t size = 0;
  int64_t stream = 0;
  LocalEvent begin_event;  // segment_alloc / segment_map; none: before the trace
  LocalEvent end_event;    // segment_free / segment_unmap; none: still there
  SegmentId segment;       // the final-state segment at this address when still there, else invalid
  bool left_out = false;   // not in the reserved curve (DeviceTimeline::segments_left_out)
  /// What an unmap at begin_event left mapped of an older mapping (which ended there): mapped
  /// before begin_event, a new lifetime only so that lifetimes keep one size.
  bool split = false;
  friend bool operator==(const SegmentLifetime&, const SegmentLifetime&) = default;
};

/// One change of the reserved curve: the reserved bytes just after device-local event `event`,
/// and the most live bytes while reserved stays at that value (until the next step), at the first
/// point that has them: what the reserved peak's tie-break reads (docs/figures.md).
struct ReservedStep {
  ReservedStep() = default;
  ReservedStep(uint32_t e, int64_t b) : event(e), bytes(b) {}
  uint32_t event = 0;
  int64_t bytes = 0;
  int64_t max_live = 0;
  TimelinePoint max_live_point;
  friend bool operator==(const ReservedStep&, const ReservedStep&) = default;
};

/// Counts and bytes (requested) per lifetime class.
struct ClassTotals {
  int64_t count = 0;
  int64_t bytes = 0;
  friend bool operator==(const ClassTotals&, const ClassTotals&) = default;
};

/// The live requested-bytes curve of a device built with it (TimelineOptions::curve). It holds
/// every point of the device, so At cannot miss; DeviceTimeline::live_curve() gives one only
/// when there is a curve.
class LiveCurveRef {
 public:
  LiveCurveRef(std::span<const int64_t> net, int64_t start) : net_(net), start_(start) {}
  /// Live requested bytes at `p` (a point of this device: p.index() < size()).
  int64_t At(TimelinePoint p) const {
    return p.is_start() ? start_ : start_ + net_[static_cast<size_t>(p.index())];
  }
  size_t size() const { return net_.size(); }  // the device's events

 private:
  std::span<const int64_t> net_;
  int64_t start_;
};

/// The curves of one device. Point i is the state *after* device-local event i; the state before
/// event 0 is in the start_* fields. x of point i is `time_us` of event i, or i when the device's
/// trace has no times.
struct DeviceTimeline {
  int32_t device = 0;
  uint32_t event_begin = 0;  // the device's first event in Snapshot::events
  uint32_t num_events = 0;
  bool has_time = false;     // every event of this device has time_us
  bool time_sorted = false;  // has_time, and time_us never decreases from one event to the next

  /// In order of first appearance (alloc or free), then the ghosts in address order; which
  /// lifetimes are there depends on TimelineOptions::keep (recorded in `kept`).
  std::vector<BlockLifetime> blocks;
  KeepLifetimes kept = KeepLifetimes::kAll;
  TimelinePoint kept_event;               // kLiveAt: `blocks` is what is live at this point
  int64_t kept_live_bytes = 0;            // kLiveAt: live requested bytes at kept_event
  std::vector<SegmentLifetime> segments;  // likewise, then segments never seen in the trace
  ClassTotals by_class[4];                // indexed by LifetimeClass

  /// The live requested-bytes curve relative to its start, one value per event: after event i,
  /// start_requested + live_net[i] (read it through live_curve()). (Stored unshifted because the
  /// start is known only after the pass; shifting would be a second sweep.) Empty when built
  /// without the curve (TimelineOptions::curve).
  std::vector<int64_t> live_net;
  /// Reserved bytes change only at segment events: one step per segment event, ascending. (The
  /// live rounded-bytes curve is not stored either: LiveRoundedCurve computes it when needed.)
  std::vector<ReservedStep> reserved_steps;

  /// Whether any event of the trace changes memory (an alloc, a free, a segment's map or unmap).
  /// A trace of markers only (the `snapshot` entry a dump writes) starts where it ends: its every
  /// point is the file's dumped state, and moments say "the dump".
  bool RecordsMemory() const {
    return by_class[static_cast<int>(LifetimeClass::kInWindow)].count +
                   by_class[static_cast<int>(LifetimeClass::kPreWindow)].count +
                   by_class[static_cast<int>(LifetimeClass::kOpen)].count >
               0 ||
           !reserved_steps.empty();
  }

  int64_t start_requested = 0, start_rounded = 0, start_reserved = 0;
  int64_t end_requested = 0, end_rounded = 0, end_reserved = 0;  // == the snapshot's final state
  /// Final-state bytes the trace cannot explain, added to the start value (0 when consistent;
  /// never negative).
  int64_t unreconciled_requested_bytes = 0;
  int64_t unreconciled_rounded_bytes = 0;
  int64_t unreconciled_reserved_bytes = 0;
  /// Bytes the trace leaves live at its end beyond the final state (blocks it allocates and never
  /// frees that the final state does not hold: open_without_block): the curve ends this much above
  /// the final state rather than starting below what the trace shows. 0 when consistent.
  int64_t beyond_end_requested_bytes = 0;
  int64_t beyond_end_rounded_bytes = 0;
  int64_t beyond_end_reserved_bytes = 0;
  /// Frees without an alloc at addresses in no segment the file records (the final state's nor
  /// any the trace allocates or frees), on a trace that records segments: their blocks cannot have
  /// been live from the start, and nothing says when they were, so they are left out of every
  /// figure. Counted here with their bytes and the first such free.
  int64_t unplaced_frees = 0, unplaced_free_bytes = 0;
  LocalEvent first_unplaced_free;
  int64_t frees_without_alloc = 0;
  /// Segments the trace creates and never releases that the final state does not hold, when the
  /// reserved curve does not end at the final state: their release was not recorded and nothing
  /// says when it happened, so the reserved curve leaves them out (SegmentLifetime::left_out).
  int64_t segments_left_out = 0, segments_left_out_bytes = 0;
  int64_t allocs_without_free = 0;       // alloc over an address that was still live (missing free)
  int64_t open_without_block = 0;        // open lifetimes whose address is not active at the end
  int64_t open_without_block_bytes = 0;  // their requested bytes

  /// The device's oom entries, each with the live bytes when it was recorded (requested, and
  /// rounded as the allocator's blocks are): whether live memory alone left no room for the
  /// request, read without a replay (`summary`). Ascending event.
  struct OomMoment {
    uint32_t event = 0;  // device-local
    int64_t live_requested = 0;
    int64_t live_rounded = 0;
    friend bool operator==(const OomMoment&, const OomMoment&) = default;
  };
  std::vector<OomMoment> oom_moments;

  /// What `summary` counts over the trace, taken in the same pass over the events as the rest
  /// (a second pass cost summary a tenth of its time on the 2.2 M-event benchmark:
  /// docs/BENCHMARKS.md).
  struct TraceCounts {
    std::array<int64_t, kNumActions> actions{};            // entries by Action
    int64_t min_time_us = kNoTime, max_time_us = kNoTime;  // over the entries with a time
    /// free_completed entries at an address where no alloc of the trace was left to free.
    int64_t unmatched_frees = 0;
    /// Addresses whose allocs outnumber their free_completed entries at the end, by how many;
    /// ascending address.
    std::vector<std::pair<uint64_t, int64_t>> live_allocs;
    friend bool operator==(const TraceCounts&, const TraceCounts&) = default;
  };
  TraceCounts counts;

  /// Peaks of live requested and of reserved bytes, each the one definition every command and
  /// the page use (docs/figures.md): the live peak is the first point of the most live bytes;
  /// the reserved peak is, among the points of the most reserved bytes, the one with the most
  /// live bytes, the first of those (so a reserved curve flat from the start peaks where the
  /// memory it holds is most used, not "before the first event").
  int64_t peak_requested = 0;
  TimelinePoint peak_event;
  int64_t peak_reserved = 0;
  TimelinePoint peak_reserved_event;

  /// Every field equal (what TimelineStream promises against ReconstructTimeline).
  friend bool operator==(const DeviceTimeline&, const DeviceTimeline&) = default;

  /// time_us of the event `p` follows, or kNoTime (the start, a point past the trace).
  int64_t TimeOf(const Snapshot& snap, TimelinePoint p) const;
  /// time_us of a lifetime's event, or kNoTime when it was not seen.
  int64_t TimeOf(const Snapshot& snap, LocalEvent e) const {
    return TimeOf(snap, e.PointOr(TimelinePoint::Start()));
  }
  /// The live curve, when the timeline was built with it (TimelineOptions::curve); nullopt
  /// otherwise. What reads the curve at any point asks for this first.
  std::optional<LiveCurveRef> live_curve() const {
    if (live_net.empty() && num_events > 0) return std::nullopt;
    return LiveCurveRef(live_net, start_requested);
  }
  /// Live requested bytes at `p` when this timeline holds that point: any point with the curve;
  /// without it the start, the peak, the end, the oom entries and (kLiveAt) the kept moment.
  /// nullopt for any other point: never a neighbouring value.
  std::optional<int64_t> FindLive(TimelinePoint p) const;
  /// The most live bytes exceed reserved bytes by at any point (0 on a trace that does not
  /// contradict itself: no allocator holds more than it reserved; 0 on a file that records no
  /// segment). Reads the curve for the stretch before the first segment event, when there is one.
  int64_t MaxLiveOverReserved() const;
  /// The live requested-bytes curve, one value per event (a copy; needs the stored curve).
  std::vector<int64_t> LiveCurve() const;
  /// Reserved bytes at `p`. O(log segment events).
  int64_t ReservedAt(TimelinePoint p) const;
  /// The reserved peak of the points [from, to] by the one definition of peak_reserved_event
  /// (the most reserved bytes, then the most live bytes, then the first): over the whole trace it
  /// is (peak_reserved, peak_reserved_event). Needs the stored curve; O(points).
  std::pair<int64_t, TimelinePoint> ReservedPeakIn(TimelinePoint from, TimelinePoint to) const;
};

/// Reads the reserved curve at increasing event indices in amortized constant time.
class ReservedCursor {
 public:
  explicit ReservedCursor(const DeviceTimeline& dt) : dt_(dt), value_(dt.start_reserved) {}
  /// Reserved bytes at `p`; p must not go back between calls.
  int64_t At(TimelinePoint p) {
    while (next_ < dt_.reserved_steps.size() &&
           TimelinePoint::After(dt_.reserved_steps[next_].event) <= p) {
      value_ = dt_.reserved_steps[next_++].bytes;
    }
    return value_;
  }

 private:
  const DeviceTimeline& dt_;
  size_t next_ = 0;
  int64_t value_;
};

/// The live rounded-bytes curve, one value per event, rebuilt from the lifetimes (the sizes of
/// the blocks PyTorch carved: what the allocator had handed out after each event). Needs a
/// timeline that kept every lifetime (KeepLifetimes::kAll).
std::vector<int64_t> LiveRoundedCurve(const DeviceTimeline& dt);

struct TimelineOptions {
  /// Only this device (others are left out of `devices`); nullopt = all.
  DeviceFilter device;
  KeepLifetimes keep = KeepLifetimes::kAll;
  Moment moment;  // kLiveAt only: the moment whose live lifetimes are kept (peak by default)
  /// Store the live curve (DeviceTimeline::live_net, 8 bytes per event). Without it
  /// DeviceTimeline::live_curve() is nullopt and FindLive answers only for the start, the peak,
  /// the end and the kept moment.
  bool curve = true;
};

struct Timeline {
  std::vector<DeviceTimeline> devices;  // ascending device; every device with segments or events
  const DeviceTimeline* Find(int32_t device) const;
};

/// Rebuilds lifetimes and curves. One pass over each device's events; never fails on inconsistent
/// traces (counts them instead). Errors only for a --device that the file does not have.
absl::StatusOr<Timeline> ReconstructTimeline(const Snapshot& snapshot,
                                             const TimelineOptions& options = {});

/// The device trace that the events a read fed to a pass as it decoded them, [0, fed), stand
/// for: the snapshot's one device trace with events, when it is exactly those events (the reader
/// publishes in decoding order, before it knows which device's list holds an entry); nullptr
/// otherwise. TimelineStream uses what it was fed only for that trace.
const DeviceTrace* FedTrace(const Snapshot& snap, size_t fed);

/// The same timeline, built while the file is read: the reader hands the events it decodes to Feed
/// (on a second core; parse::BackgroundEventFeed), so after the read only the reconciliation with
/// the final state is left. What was fed is used when it turns out to be the whole trace of the
/// file's one device with events; otherwise (several devices with events, JSON input, a reordered
/// trace) Finish rebuilds the timeline from the snapshot, with the same result.
///
///   TimelineStream stream(options);
///   parse::BackgroundEventFeed feed([&](auto events, size_t first, auto streams) {
///     stream.Feed(events, first, streams);
///   });
///   ... read with ReadOptions::events = &feed ...;  feed.Release();
///   absl::StatusOr<Timeline> tl = stream.Finish(snapshot, feed.fed());
class TimelineStream {
 public:
  /// `expected_events`: a sizing hint for the curve (0: none).
  explicit TimelineStream(const TimelineOptions& options, size_t expected_events = 0);
  ~TimelineStream();
  TimelineStream(const TimelineStream&) = delete;
  TimelineStream& operator=(const TimelineStream&) = delete;

  /// Whether a pass with these options can run before the events are all known: not for
  /// KeepLifetimes::kLiveAt at a time (which event that is depends on every event's time).
  /// Otherwise Feed ignores what it is given and Finish rebuilds.
  static bool Streams(const TimelineOptions& options);

  /// Events [first, first + events.size()) of Snapshot::events, in order from 0, and the values
  /// of the streams they name (the reader's StreamTable::values so far; read during the call).
  void Feed(std::span<const TraceEvent> events, size_t first, std::span<const int64_t> streams);

  /// The timeline of `snapshot`, equal to ReconstructTimeline(snapshot, options). `fed`: how many
  /// events were fed and still stand (BackgroundEventFeed::fed()). Call once, after the feeding.
  absl::StatusOr<Timeline> Finish(const Snapshot& snapshot, size_t fed);
  /// Whether the last Finish used what was fed (for tests and --timings).
  bool used_stream() const { return used_stream_; }

 private:
  struct State;
  TimelineOptions options_;
  std::unique_ptr<State> state_;
  bool used_stream_ = false;
};

/// Parses a moment the way every --at, --from and --to takes it: "peak", "end", "event:N" (negative
/// from the end), a time since the trace's first event with a unit ("+25ms", "1.5s", "250us",
/// "2min"; a leading "-" counts back from its last event), or an integer time_us as the file
/// records it ("abs:T" too; for traces without time, an event index). Errors name `flag`.
absl::StatusOr<Moment> ParseMoment(std::string_view text, std::string_view flag = "--at");
/// Resolves a moment to a point of the device's timeline, clamped to the trace (the end is its
/// last event's point). Times pick the last event with time_us <= the time (the start if none).
TimelinePoint ResolveMoment(const Snapshot& snap, const DeviceTimeline& dt, const Moment& moment);
/// InvalidArgument naming `flag` and `text` when `moment` lies outside device dt's trace (an
/// event index past its end, a time before its first or after its last event, a relative time on
/// a trace without times); OK for devices without events and for peak and end.
absl::Status CheckMoment(const Snapshot& snap, const DeviceTimeline& dt, const Moment& moment,
                         std::string_view flag, std::string_view text);
/// "event:1117 (+1.039 s)" (the time relative to the device's first event when it has times),
/// "the initial state" for the start.
std::string DescribeEvent(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p);

/// Indices into dt.blocks of the lifetimes live at `p`. A timeline built with
/// KeepLifetimes::kLiveAt answers only for its own `kept_event`.
std::vector<uint32_t> LiveBlocksAt(const DeviceTimeline& dt, TimelinePoint p);

}  // namespace memsnap::analysis
