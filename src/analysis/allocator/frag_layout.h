// Internal to the frag pass: a segment/block layout that either comes from a snapshot's
// `segments` or is reconstructed at an earlier moment by undoing the trace backwards from the
// final state (the way MemoryViz's "Allocator State History" does).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/btree_map.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis::frag_internal {

struct LBlock {
  uint64_t address = 0;
  int64_t size = 0;
  int64_t requested = 0;
  BlockState state = BlockState::kInactive;
  int64_t tag = -1;  // DeviceRewind: the caller's tag of the live block (its lifetime), or -1
};

/// One segment; its blocks tile [address, address + size) in address order.
struct LSegment {
  int32_t device = 0;
  uint64_t address = 0;
  int64_t size = 0;
  int64_t stream = 0;
  bool is_small = false;
  bool is_expandable = false;
  PoolId pool;
  std::vector<LBlock> blocks;
};

/// The snapshot's own segments and blocks (all devices, file order).
std::vector<LSegment> LayoutFromSnapshot(const Snapshot& snapshot);
/// The same of the segments `ids` (SegmentsByDevice::Of: one device's), in that order.
std::vector<LSegment> LayoutFromSnapshot(const Snapshot& snapshot, std::span<const uint32_t> ids);
/// The ids of `device`'s segments, by a scan (SegmentsByDevice for a pass over many devices).
std::vector<uint32_t> SegmentsOf(const Snapshot& snapshot, int32_t device);

/// One device's allocator state, undone event by event from the end of its trace.
class DeviceRewind {
 public:
  DeviceRewind(const Snapshot& snapshot, int32_t device);
  /// The same from the device's segments `ids` (SegmentsByDevice::Of), found once for many.
  DeviceRewind(const Snapshot& snapshot, int32_t device, std::span<const uint32_t> ids);
  ~DeviceRewind();
  DeviceRewind(const DeviceRewind&) = delete;
  DeviceRewind& operator=(const DeviceRewind&) = delete;
  /// Undoes `event`: afterwards the state is the one before it. Returns whether a block
  /// reappeared at event.addr (undoing its free), untagged: Tag() can name it.
  bool Undo(const TraceEvent& event);
  /// Tags the live block at `address`, if there is one; Layout() reports the tag with it.
  void Tag(uint64_t address, int64_t tag);
  int64_t reserved() const { return reserved_; }
  int64_t allocated() const { return allocated_; }
  /// Materializes the state as segments whose gaps between live blocks are inactive blocks.
  std::vector<LSegment> Layout() const;
  /// The same for the segments that overlap [begin, end) only, in address order.
  std::vector<LSegment> LayoutIn(uint64_t begin, uint64_t end) const;
  /// The extent [begin, end) of the segment holding `address`, or {address, address}.
  std::pair<uint64_t, uint64_t> SegmentExtent(uint64_t address) const;
  const UndoProblems& problems() const { return problems_; }
  /// Live blocks of the current state that the trace freed but never allocated (the trace began
  /// after them): after undoing every event, the blocks allocated before the trace window.
  /// Returns {count, bytes}.
  std::pair<int64_t, int64_t> PreWindowBlocks() const;

 private:
  struct Seg {
    int64_t size = 0;
    int64_t stream = 0;
    bool is_small = false;
    bool is_expandable = false;
    PoolId pool;
  };
  struct Live {
    int64_t size = 0;
    int64_t requested = 0;
    bool pending = false;
    bool from_trace = false;  // brought back by undoing a free
    int64_t tag = -1;
  };
  absl::btree_map<uint64_t, Seg>::iterator SegmentAt(uint64_t address);
  LSegment LayoutOf(uint64_t address, const Seg& seg) const;
  int64_t EstimateSize(uint64_t address, int64_t requested, const Seg& seg,
                       uint64_t seg_address) const;
  void DropBlocksIn(uint64_t begin, uint64_t end);

  const Snapshot& snap_;
  int32_t device_;
  // B-trees: undoing a trace inserts and erases a live block per event, which a node-based map
  // paid for in allocations and pointer chasing (about half of `report`'s allocator states).
  absl::btree_map<uint64_t, Seg> segments_;
  absl::btree_map<uint64_t, Live> live_;
  int64_t reserved_ = 0;
  int64_t allocated_ = 0;
  int64_t undone_ = 0;  // Undo calls, added to UndoneEvents() at destruction
  UndoProblems problems_;
};

/// Events undone by the DeviceRewinds of this process so far (counted as each is destroyed): what
/// a rewind costs, for tests (issue 37: `frag` rewinds each device's trace once).
int64_t UndoneEvents();

/// Figures of one segment (docs/fragmentation.md, "What empty_cache releases").
FragFigures SegmentFigures(const LSegment& segment);

/// The figures of a layout, as `frag --at` reports a reconstructed moment.
FragSample SampleOf(const std::vector<LSegment>& layout, int32_t device, int64_t index,
                    int64_t time_us);

/// The device-local event after which the device's state first has its peak of allocated (block)
/// bytes (-1: before the first event). The reserved peak is the timeline's (docs/figures.md).
int64_t FindAllocatedPeak(const Snapshot& snapshot, const DeviceTrace& trace);

/// What undoing a device's trace to its start found (report::RewindWarnings says it in words).
/// `trace_entries` and the file's settings say why blocks were allocated before the trace.
RewindCaveats CaveatsOf(const DeviceRewind& rewind, int32_t device,
                        const AllocatorSettings& settings, int64_t trace_entries);

}  // namespace memsnap::analysis::frag_internal
