// The normalized snapshot: flat vectors, interned strings and typed ids
// (docs/coding-guidelines.md §6).
//
// Both readers (pickle and JSON) fill this struct, then call Normalize() so every flavour of the
// format (1.13 list form, 2.0 `history`, 2.1+, newest keys) looks the same to the analyses. See
// docs/snapshot-format.md §3.3 for the field-by-field normalization rules.
//
// clang-format off
//   Snapshot
//   ├── strings  StringPool          StrId  -> text
//   ├── frames   FrameTable          FrameId -> {name, filename, line}   (deduplicated by content)
//   ├── stacks   StackTable          StackId -> [FrameId...] innermost first (deduplicated)
//   ├── segments [Segment]           sorted as in the file; each owns blocks[first_block, +num_blocks)
//   ├── blocks   [Block]             in address order inside their segment
//   ├── streams  StreamTable         StreamId -> cudaStream_t as an integer (a handful per trace)
//   ├── events   [TraceEvent]        all devices, one contiguous range per device (traces[])
//   ├── traces   [DeviceTrace]       index = device ordinal as in `device_traces`
//   ├── annotations, settings, info
//   └── diagnostics                  non-fatal inconsistencies found while reading
// clang-format on
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "memsnap/model/ids.h"
#include "memsnap/model/limits.h"
#include "memsnap/model/string_pool.h"
#include "memsnap/util/diagnostics.h"

namespace memsnap {

/// Frame line numbers that PyTorch writes as 2^64-1 or -1 ("unknown line") are stored as this.
inline constexpr int64_t kUnknownLine = -1;
/// A block address the file did not give (before 2.1): Normalize() computes it from the segment.
inline constexpr uint64_t kUnknownAddress = std::numeric_limits<uint64_t>::max();

struct Frame {
  StrId name;
  StrId filename;
  int64_t line = 0;
  friend bool operator==(const Frame&, const Frame&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const Frame& f) {
    return H::combine(std::move(h), f.name, f.filename, f.line);
  }
};

/// Frames deduplicated by content.
class FrameTable {
 public:
  FrameId Intern(const Frame& frame);
  /// The frame of `id`; for the invalid id, kUnknown (empty name and file, unknown line). Any
  /// other id must come from this table: one past its end asserts in debug builds and reads
  /// kUnknown in release builds (never out of bounds).
  const Frame& Get(FrameId id) const {
    if (id.v < frames_.size()) [[likely]] {
      return frames_[id.v];
    }
    assert(!id.valid() && "FrameId out of range of its FrameTable");
    return kUnknown;
  }
  static constexpr Frame kUnknown{StrId(0), StrId(0), kUnknownLine};
  size_t size() const { return frames_.size(); }

 private:
  std::vector<Frame> frames_;
  absl::flat_hash_map<Frame, uint32_t> index_;
};

/// Whole stacks (frame-id sequences, innermost first) deduplicated by content.
/// StackId 0 is always the empty stack. An *absent* stack (no `frames` key) is an invalid StackId.
class StackTable {
 public:
  StackTable();
  StackId Intern(std::span<const FrameId> frames);
  /// The frames of `id`, innermost first; none for the invalid id (an absent stack). Any other
  /// id must come from this table: one past its end asserts in debug builds and reads no frames
  /// in release builds (never out of bounds).
  std::span<const FrameId> Get(StackId id) const {
    if (id.v < offsets_.size() - 1) [[likely]] {
      return {frames_.data() + offsets_[id.v], frames_.data() + offsets_[id.v + 1]};
    }
    assert(!id.valid() && "StackId out of range of its StackTable");
    return {};
  }
  size_t size() const { return offsets_.size() - 1; }
  static constexpr StackId kEmpty = StackId(0);

 private:
  struct Key {
    const StackTable* table;
    uint32_t id;  // kInvalidValue: look at `probe` instead
    std::span<const FrameId> probe;
  };
  std::vector<FrameId> frames_;
  std::vector<uint32_t> offsets_;
  // Maps a hash of the frame sequence to the ids that have that hash (collisions resolved by
  // compare).
  absl::flat_hash_map<uint64_t, std::vector<uint32_t>> index_;
};

/// The CUDA streams of the trace entries (cudaStream_t as an integer), interned: a trace has a
/// handful of distinct streams, so a TraceEvent holds a 16-bit StreamId and the values are stored
/// here once (docs/design.md, "The model"). StreamId 0 is always stream 0, the default stream, so
/// a default-constructed TraceEvent is on it.
class StreamTable {
 public:
  /// The most distinct streams one table holds (ids 0 to 65,534; the last value of 16 bits is the
  /// invalid id). Readers make one more an error naming the file.
  static constexpr size_t kMaxStreams = StreamId::kInvalidValue;
  static constexpr StreamId kDefault = StreamId(0);

  StreamTable() : values_{0} {}
  /// The id of `value`, added when new; an invalid id when the table already holds kMaxStreams.
  /// Inline for the readers' hot path: a linear scan of the first few values, where a real
  /// trace's streams all are, costs less than a hash lookup (docs/BENCHMARKS.md).
  [[gnu::always_inline]] StreamId Intern(int64_t value) {
    const size_t scanned = std::min(values_.size(), kScanned);
    for (size_t i = 0; i < scanned; ++i) {
      if (values_[i] == value) return StreamId(static_cast<uint16_t>(i));
    }
    return InternSlow(value);
  }
  /// The stream of `id`; stream 0 for an id not in the table (asserted in debug builds but for
  /// the invalid id).
  int64_t Get(StreamId id) const {
    if (id.v < values_.size()) [[likely]] {
      return values_[id.v];
    }
    assert(!id.valid() && "StreamId out of range of its StreamTable");
    return 0;
  }
  size_t size() const { return values_.size(); }
  /// Every value, indexed by StreamId::v.
  std::span<const int64_t> values() const { return values_; }

 private:
  static constexpr size_t kScanned = 8;
  StreamId InternSlow(int64_t value);
  std::vector<int64_t> values_;
  absl::flat_hash_map<int64_t, uint16_t> index_;  // the values past the first kScanned
};

enum class BlockState : uint8_t { kActiveAllocated, kActivePendingFree, kInactive };

enum class Action : uint8_t {
  kAlloc,
  kFreeRequested,
  kFreeCompleted,
  kSegmentAlloc,
  kSegmentFree,
  kSegmentMap,
  kSegmentUnmap,
  kSnapshot,
  kOom,
  /// "annotate" (PyTorch's _annotate_memory): metadata attached to the live block at `addr`
  /// after its alloc; never an alloc or a free, no effect on any byte count.
  kAnnotate,
  kUnknown,  // an action name this version of memsnap does not know; kept, counted, ignored
};
inline constexpr int kNumActions = 11;
/// The name PyTorch writes ("alloc", "free_requested", ...); "unknown" for kUnknown.
std::string_view ActionName(Action action);
/// Inverse of ActionName; kUnknown for anything else.
Action ParseAction(std::string_view name);
std::string_view BlockStateName(BlockState state);

/// MempoolId_t: (0, 0) is the default pool, anything else a private pool (graphs, MemPool).
struct PoolId {
  uint64_t first = 0;
  uint64_t second = 0;
  bool is_default() const { return first == 0 && second == 0; }
  friend bool operator==(const PoolId&, const PoolId&) = default;
  friend auto operator<=>(const PoolId&, const PoolId&) = default;
};

struct Segment {
  int32_t device = 0;
  uint64_t address = 0;
  int64_t total_size = 0;
  int64_t allocated_size = 0;  // as written in the file
  int64_t active_size = 0;     // as written in the file
  int64_t requested_size = 0;  // as written; 0 when absent (2.0 era)
  int64_t stream = 0;          // cudaStream_t as an integer
  bool is_small = false;       // segment_type == "small"
  bool is_expandable = false;
  PoolId pool;
  StackId stack;  // invalid when the file has no segment frames
  uint32_t first_block = 0;
  uint32_t num_blocks = 0;
};

struct Block {
  uint64_t address = kUnknownAddress;  // readers leave kUnknownAddress when the file has none
  int64_t size = 0;
  /// Unrounded request; meaningful only for active blocks (Normalize zeroes it on inactive ones).
  /// Readers leave kNoRequestedSize when the file has none; Normalize then uses `size`.
  int64_t requested_size = kNoRequestedSize;
  BlockState state = BlockState::kInactive;
  StackId stack;  // invalid: no context recorded
  SegmentId segment;
  bool is_active() const { return state != BlockState::kInactive; }
};

/// One trace entry. 32 bytes: the model's largest array (one per entry, 19.5 M in a 1.5 GB file).
struct TraceEvent {
  /// Address of the block or segment; for kOom this holds `device_free` (the OOM has no address).
  uint64_t addr = 0;
  /// Requested (unrounded) size for alloc/free_*; segment/mapping bytes for segment_*; for
  /// snapshot the total active bytes; for oom the size the allocator tried to get.
  int64_t size = 0;
  int64_t time_us = kNoTime;
  StackId stack;  // invalid when the entry has no `frames` key
  /// Its value is in the snapshot's StreamTable: Snapshot::StreamOf(event).
  StreamId stream = StreamTable::kDefault;
  Action action = Action::kUnknown;
  bool has_time() const { return time_us != kNoTime; }
};
static_assert(sizeof(TraceEvent) == 32, "the hot array: keep it at 32 bytes (docs/design.md)");

/// Rarely-present per-event fields, kept out of TraceEvent so the hot vector stays 32 bytes.
struct EventExtra {
  uint32_t event = 0;     // index into Snapshot::events
  StrId compile_context;  // invalid when absent or "N/A"
  StrId user_metadata;    // invalid when absent or empty; dicts are rendered as text
  StrId category;         // profile_plot only
  std::optional<PoolId> pool;
};

/// One device's slice of Snapshot::events: events[begin, end).
struct DeviceTrace {
  int32_t device = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
};

struct Annotation {
  int32_t device = 0;
  int64_t time_us = kNoTime;
  StrId stage;  // "START" / "END"
  StrId name;
};

struct AllocatorSettings {
  bool present = false;         // the file had `allocator_settings`
  std::string conf;             // PYTORCH_CUDA_ALLOC_CONF as recorded
  int64_t max_split_size = -1;  // bytes; -1 = unlimited
  double garbage_collection_threshold = 0.0;
  bool expandable_segments = false;
  bool release_lock_on_cudamalloc = false;
  bool pinned_use_cuda_host_register = false;
  int64_t pinned_num_register_threads = 0;
  bool graph_capture_record_stream_reuse = false;
  /// Divisions per bucket (index 0: sizes < 2 MiB, i: [2^(20+i), 2^(21+i)) ...); 0 = none.
  std::array<int64_t, 16> roundup_power2_divisions{};
  std::optional<bool> trace_alloc_overflowed;
  std::optional<int64_t> trace_alloc_max_entries;
};

enum class ContainerFormat : uint8_t { kPickle, kJson, kHtml };

/// Where the snapshot came from and which flavour it is.
struct SourceInfo {
  std::string path;
  ContainerFormat container = ContainerFormat::kPickle;
  bool gzip = false;
  int pickle_protocol = 0;          // 0 when not a pickle
  bool bare_segment_list = false;   // 1.13 / torch.cuda.memory_snapshot() list form
  bool legacy_history = false;      // blocks carried `history` (2.0 era and earlier)
  bool has_block_addresses = true;  // false when addresses were reconstructed from segment offsets
  uint64_t file_bytes = 0;
};

struct Snapshot {
  StringPool strings;
  FrameTable frames;
  StackTable stacks;
  std::vector<Segment> segments;
  std::vector<Block> blocks;
  StreamTable streams;  // of the trace entries (TraceEvent::stream)
  std::vector<TraceEvent> events;
  std::vector<EventExtra> event_extras;  // sorted by event index
  std::vector<DeviceTrace> traces;       // index = device ordinal
  std::vector<Annotation> annotations;
  AllocatorSettings settings;
  SourceInfo source;
  Diagnostics diagnostics;

  std::span<const Block> BlocksOf(const Segment& s) const {
    return {blocks.data() + s.first_block, s.num_blocks};
  }
  std::span<const TraceEvent> EventsOf(const DeviceTrace& t) const {
    return {events.data() + t.begin, t.size()};
  }
  /// The CUDA stream of a trace entry (cudaStream_t as an integer).
  int64_t StreamOf(const TraceEvent& e) const { return streams.Get(e.stream); }
  /// Devices that have segments or trace events, ascending.
  std::vector<int32_t> Devices() const;
  /// The trace of `device`, or nullptr when the file has none for it. O(1) when `traces` is
  /// indexed by device ordinal (as the readers make it), else a scan.
  const DeviceTrace* TraceOf(int32_t device) const;
  /// The rare fields of trace entry `event` (an index into `events`), or nullptr when it has none.
  /// O(log event_extras).
  const EventExtra* ExtraOf(uint32_t event) const;
  /// Frames of `id` rendered as "filename:line:name", innermost first. Empty for invalid ids.
  std::string FrameText(FrameId id) const;
};

/// The segments of each device, found in one sort of `segments` (O(S log S)): a pass over every
/// device then costs O(S) in all, never O(devices x S) (issue 54: 100,000 devices of one segment
/// each). Built from a snapshot, never stored in it, so it cannot go stale: build it once per
/// pass, after the segments are final.
class SegmentsByDevice {
 public:
  explicit SegmentsByDevice(const Snapshot& snap);
  /// The ids (indices into Snapshot::segments) of `device`'s segments in file order (ascending
  /// id, as a scan of `segments` finds them); empty for a device without segments.
  std::span<const uint32_t> Of(int32_t device) const;

 private:
  std::vector<uint32_t> order_;                        // by (device, id)
  std::vector<std::pair<int32_t, uint32_t>> devices_;  // (device, first of order_), ascending
};

/// Fills the fallbacks of docs/snapshot-format.md §3.3 (block addresses from segment offsets,
/// requested sizes, segment and block links) and records inconsistencies (blocks that do not tile
/// their segment...) as diagnostics. Both readers call it; calling it twice is harmless.
void Normalize(Snapshot& snapshot);

}  // namespace memsnap
