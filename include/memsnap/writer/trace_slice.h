// Cutting a trace into a range of events (`memsnap convert --from/--to`), so a huge trace can be
// opened piece by piece in the official viewer. Only device_traces is cut: the segments and blocks
// (the allocator state at the end of the recording) are kept whole.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/writer/snapshot_writer.h"

namespace memsnap::writer {

/// One end of a slice, as the user wrote it.
struct SliceBound {
  enum class Kind : uint8_t {
    kNone,        // open end
    kEvent,       // "event:N": index in each device's trace; negative counts from the end
    kTimeOffset,  // "1500", "250ms", "2s": microseconds after the first time_us of the file;
                  // negative ("-5s") counts back from the last time_us
    kAbsTime,     // "abs:1700000000000000": a time_us value as written in the file
  };
  Kind kind = Kind::kNone;
  int64_t value = 0;  // events, or microseconds
};

/// Parses "event:N", "abs:T", or a time "[-]N[us|ms|s|min]" (plain numbers are microseconds).
/// An empty text is an open end.
absl::StatusOr<SliceBound> ParseSliceBound(std::string_view text);

struct TraceSlice {
  std::vector<EventRange> ranges;  // one per Snapshot::traces entry
  /// The time window kept, inclusive (kNoTime: open): the bounds' times, or for event bounds the
  /// times of the first and last event kept. Annotations outside it are dropped.
  int64_t min_time_us = kNoTime;
  int64_t max_time_us = kNoTime;
  uint64_t events = 0;             // events kept, all devices
};

/// Resolves [from, to) on every device trace. Time bounds need `time_us` in the file (an error
/// names the alternative, event:N); event bounds are clamped to each trace.
absl::StatusOr<TraceSlice> ComputeSlice(const Snapshot& snap, const SliceBound& from,
                                        const SliceBound& to);

}  // namespace memsnap::writer
