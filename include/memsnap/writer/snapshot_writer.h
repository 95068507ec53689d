// Writes a Snapshot back out in PyTorch's own schema (docs/snapshot-format.md §2, the 2.1+ keys):
// as a pickle (protocol 2, 4 or 5, shaped like CPython's output for torch's dict, with frames and
// whole stacks shared through the memo as PyTorch files share them) or as JSON (the same schema,
// tuples as arrays, as `json.dumps(snapshot)` would write it). Both stream to an ostream.
//
// What the model does not keep is not written back (see `memsnap convert --help`): stale
// `requested_size` of inactive blocks (written as 0), `compile_context` "N/A" and empty
// `user_metadata` (omitted), frame lines 2^64-1 (written as -1), and the legacy flavours (2.0
// `history`, the bare segment list), which come out in the 2.1+ form.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "absl/status/status.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::writer {

/// Events [begin, end) of Snapshot::events to write for one device trace.
struct EventRange {
  uint32_t begin = 0;
  uint32_t end = 0;
};

struct SnapshotWriteOptions {
  /// Pickle protocol: 2, 3, 4 or 5. Ignored for JSON.
  int protocol = 4;
  /// One range per entry of Snapshot::traces (same order), to write a slice of the trace; empty
  /// writes every event. Settings are always written whole.
  std::vector<EventRange> event_ranges;
  /// The segments and blocks to write instead of the snapshot's (a slice's state at its end,
  /// analysis::RebuildStateAt), shaped like Snapshot::segments and Snapshot::blocks, their stacks
  /// ids of the snapshot's StackTable; unless both are set, the snapshot's. Must outlive the write.
  const std::vector<Segment>* segments = nullptr;
  const std::vector<Block>* blocks = nullptr;
  /// When event_ranges is set, annotations outside [min_time_us, max_time_us] are dropped.
  int64_t min_time_us = kNoTime;
  int64_t max_time_us = kNoTime;
};

/// Writes `snap` as a pickle to `out`. Errors: bad protocol, a failed stream.
absl::Status WriteSnapshotPickle(const Snapshot& snap, const SnapshotWriteOptions& options,
                                 std::ostream& out);

/// Writes `snap` as JSON to `out` (compact, one line). Errors: a failed stream.
absl::Status WriteSnapshotJson(const Snapshot& snap, const SnapshotWriteOptions& options,
                               std::ostream& out);

/// The bytes WriteSnapshotJson writes for `snap` (before any gzip), counted without writing.
/// JSON has no memo: every stack is written out in full wherever it is used, so a file whose
/// entries share one deep stack becomes thousands of times its size (`convert` and `export`
/// check this before writing). Costs about what writing the entries without their stacks costs:
/// each distinct stack is formatted once.
uint64_t JsonBytes(const Snapshot& snap, const SnapshotWriteOptions& options);

}  // namespace memsnap::writer
