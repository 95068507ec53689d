// Live memory at a moment, grouped by allocation site (`memsnap top`, reused by `diff`, `check`,
// the HTML report). Keys are built from frame *text*, never from ids, so rows of two snapshots can
// be matched by key (diff).
//
// Invariant (tested): Σ rows.bytes == total_bytes and Σ rows.count == total_count; anything without
// a stack goes to the explicit "[no stack]" row, stacks whose frames are all filtered out to
// "[all frames filtered]", annotation grouping without a covering range to "[no annotation]",
// pre-window lifetimes (alloc older than the trace) to "[allocated before the trace]".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// kFunction, kFile and kFrame key a lifetime by one frame of its (filtered) stack: the innermost
/// frame of a Python file when there is one (with C++ stacks the innermost frame is the
/// allocator's own malloc), else the innermost frame.
enum class GroupBy : uint8_t { kStack, kFunction, kFile, kFrame, kAnnotation };
/// "stack", "function", "file", "frame", "annotation".
std::string_view GroupByName(GroupBy by);
absl::StatusOr<GroupBy> ParseGroupBy(std::string_view text);

inline constexpr std::string_view kNoStackRow = "[no stack]";
inline constexpr std::string_view kAllFilteredRow = "[all frames filtered]";
inline constexpr std::string_view kNoAnnotationRow = "[no annotation]";
/// Pre-window lifetimes (only their free is in the trace): the allocation site is unknown. Upstream
/// shows the *free's* stack for them, which reads like an allocation site; memsnap does not.
inline constexpr std::string_view kPreWindowRow = "[allocated before the trace]";

struct GroupOptions {
  GroupBy by = GroupBy::kStack;
  int depth = 0;              // stack: keep the N innermost (surviving) frames; 0 = all
  bool ignore_lines = false;  // frame text "filename:name" instead of "filename:line:name"
  FilterOptions filter;
};

/// The text of one frame as used in keys: "filename:line:name" (or "filename:name" when
/// ignore_lines). ';' and newlines are replaced so the text is safe in folded stacks.
std::string FrameKeyText(const Snapshot& snap, FrameId id, bool ignore_lines);

struct GroupRow {
  std::string key;                  // stack: frames root-first joined by ';' (folded form)
  std::vector<std::string> frames;  // stack rows: frame texts innermost first; else {key}
  int64_t count = 0;
  int64_t bytes = 0;          // live requested bytes
  int64_t rounded_bytes = 0;  // live rounded (block) bytes
  bool synthetic = false;     // one of the bracketed rows ([no stack] ...)
};

/// Which lifetimes are grouped: one per device, each at its own resolved moment.
struct DeviceMoment {
  int32_t device = 0;
  int64_t event = -1;          // device-local, -1 = initial state
  int64_t time_us = kNoTime;   // of that event, when known
  int64_t start_time_us = kNoTime;  // of the device's first event (relative times), when known
  int64_t live_bytes = 0;
};

struct GroupReport {
  GroupOptions options;
  Moment moment;
  std::vector<DeviceMoment> devices;
  std::vector<GroupRow> rows;  // sorted by bytes desc, then count desc, then key
  int64_t total_bytes = 0;
  int64_t total_rounded_bytes = 0;
  int64_t total_count = 0;
};

/// Adds the given lifetimes (indices into dt.blocks) to `rows`: to the row with the same key when
/// there is one, else to a new row appended at the end (rows stay unsorted; call
/// SortAndMergeRows). Used by GroupLive for each device. `filter` must have been created for `snap`.
void AccumulateGroups(const Snapshot& snap, const DeviceTimeline& dt,
                      const std::vector<uint32_t>& lifetimes, const GroupOptions& options,
                      FrameFilter& filter, std::vector<GroupRow>& rows);

/// Sorts rows (bytes desc, count desc, key asc) and merges rows with equal keys.
void SortAndMergeRows(std::vector<GroupRow>& rows);

/// Live memory at `moment` on every device of `timeline` (each device at its own moment), grouped.
absl::StatusOr<GroupReport> GroupLive(const Snapshot& snap, const Timeline& timeline,
                                      const Moment& moment, const GroupOptions& options);

/// Keeps the `top` largest rows and folds the rest into one "[N others]" row (totals unchanged).
void CollapseTail(std::vector<GroupRow>& rows, size_t top);

}  // namespace memsnap::analysis
