// Reading snapshots of every flavour, detected by content (docs/snapshot-format.md §1.2):
// pickle (protocols 2-5), JSON, the _memory_viz HTML wrapper (base64 pickle inside), and gzip of
// any of these. A pickle is parsed, never executed: opcodes that import or call code are refused.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/io/input.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/parse/event_observer.h"

namespace memsnap::parse {

struct ReadOptions {
  /// Turn reader diagnostics (unknown actions, inconsistent blocks...) into errors.
  bool strict = false;
  /// Told of the trace events as they are decoded (event_observer.h): pickles only, plain or
  /// gzipped; an HTML page or JSON file publishes nothing. Not owned.
  EventObserver* events = nullptr;
  /// Threads that may decode one pickle (0: every core). A protocol 4 or 5 pickle of 16 MiB or
  /// more is decoded on all of them; the model is the same for every value.
  int threads = 1;
  /// The memory budget (bytes; 0: none): a file whose model, inflated gzip or JSON document
  /// would need more is refused with an error naming the budget (`--max-memory`,
  /// docs/reader.md "Memory budget"). Checked where the big arrays grow, not per value.
  uint64_t max_memory = 0;
};

/// Reads the file at `path`. Errors carry the path and, where it helps, a byte offset or key path:
///   "snap.pickle: offset 81234: LONG_BINGET 70123 beyond memo size 70000"
///   "snap.json: /segments/12/blocks/3/size: expected integer, got string"
absl::StatusOr<Snapshot> ReadSnapshot(const std::string& path, const ReadOptions& options = {});

/// Reads every snapshot in the file (an HTML page may embed several); most files hold one.
absl::StatusOr<std::vector<Snapshot>> ReadSnapshots(const std::string& path,
                                                    const ReadOptions& options = {});

/// Same as ReadSnapshots over bytes in memory; `name` is used in error messages.
absl::StatusOr<std::vector<Snapshot>> ParseSnapshots(io::InputSource& input,
                                                     const ReadOptions& options = {});

/// True when `head`, the first bytes of a file (64 KiB are plenty), are those of a memory snapshot
/// as the reader detects them: a pickle of protocol 2 to 5, JSON with the snapshot's keys
/// (segments, device_traces, or a 1.13 segment list), a _memory_viz HTML page (a "base64"
/// payload), or gzip of one of these. memsnap's own outputs (a Perfetto trace, the HTML report,
/// CSV, folded stacks) are not. Used to refuse overwriting a snapshot with an output.
bool LooksLikeSnapshot(std::string_view head);

/// Decodes one pickle (protocols 2-5) into a snapshot. `bytes` must start with the PROTO opcode.
/// Trailing bytes after STOP are ignored (HTML payloads are NUL padded). `observer`, when given, is
/// told of the trace events as they are decoded.
absl::StatusOr<Snapshot> ParsePickle(io::InputSource& input, EventObserver* observer = nullptr);

/// Decodes one JSON document of the same schema.
absl::StatusOr<Snapshot> ParseJson(io::InputSource& input);

/// The error of an input that is not a memory snapshot at all: its content is none of the formats
/// (a README, a log, a CSV) or an HTML page without a _memory_viz payload. IsNotASnapshot tells it
/// from the error of a snapshot that failed to read (truncated, corrupt, empty), which a directory
/// of ranks must report, never skip.
absl::Status NotASnapshotError(std::string message);

/// True when `status` (from ReadSnapshot, ReadSnapshots or ParseSnapshots) is a NotASnapshotError.
bool IsNotASnapshot(const absl::Status& status);

/// Extracts the base64 payloads of a _memory_viz HTML page, decoded. Each is one pickle.
absl::StatusOr<std::vector<std::string>> ExtractHtmlPayloads(std::string_view html,
                                                             std::string_view name);

}  // namespace memsnap::parse
