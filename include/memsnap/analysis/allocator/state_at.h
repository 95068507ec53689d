// The allocator state at one moment of each device's trace, in the form of a snapshot's own
// `segments` (segments, their blocks, each live block's stack): what `memsnap convert --to`
// writes, so that a slice of a trace is a snapshot of its moment and its final state is the one
// its trace leads to (issue 52). Rebuilt the way `frag --at` and ReconstructAllocatorStates
// rebuild a moment: the final state, with the trace after the moment undone (docs/
// fragmentation.md). Blocks alive before the trace that the rewind knows of (dumped in the state,
// or brought back by undoing a free the trace has without its alloc) stay in it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// One device's moment: the state after its first `events` trace entries (0: before the first).
struct StateCut {
  int32_t device = 0;
  int64_t events = 0;
};

/// A device whose state at its cut could not be rebuilt exactly: the undo of the events after the
/// cut met events it could not undo consistently (frag's RewindCaveats::problems), so some of the
/// blocks or segments written are guesses.
struct StateCutCaveat {
  int32_t device = 0;
  int64_t events = 0;  // the cut: the state after this many events
  UndoProblems problems;
};

struct StateAtCut {
  /// Segments (ascending device; the rebuilt ones in address order, the others as in the file)
  /// with first_block/num_blocks into `blocks`; block stacks and segment stacks are ids of the
  /// snapshot's StackTable.
  std::vector<Segment> segments;
  std::vector<Block> blocks;
  /// Devices whose state was rebuilt (a cut before the end of its trace), ascending.
  std::vector<int32_t> rebuilt;
  /// Blocks whose size the rewind estimated from their request (their alloc or free is after the
  /// cut and the final state no longer holds them): requested bytes are exact, sizes are the
  /// allocator's rounding of them.
  int64_t estimated_sizes = 0;
  std::vector<StateCutCaveat> caveats;  // ascending device
};

/// The allocator state at `cuts` (a device without a cut, or cut at the end of its trace, keeps
/// the file's segments). `timeline` must be the snapshot's, built with every lifetime kept
/// (KeepLifetimes::kAll): it names the stack of each live block. Devices the timeline lacks keep
/// their final state.
StateAtCut RebuildStateAt(const Snapshot& snap, const Timeline& timeline,
                          std::span<const StateCut> cuts);

}  // namespace memsnap::analysis
