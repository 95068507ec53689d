// Cutting a trace into a range of events (`memsnap convert --from/--to`), so a huge trace can be
// opened piece by piece in the official viewer. This cuts device_traces; `convert` writes the
// allocator state at the slice's end beside it (analysis::RebuildStateAt).
#pragma once

#include <cstdint>
#include <string>
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
    kTimeOffset,  // "+1500us", "250ms", "2s": microseconds after the first time_us of the file;
                  // negative ("-5s") counts back from the last time_us
    kAbsTime,     // "1700000000000000" or "abs:1700000000000000": a time_us as in the file
  };
  Kind kind = Kind::kNone;
  int64_t value = 0;  // events, or microseconds
  std::string flag;   // "--from" / "--to", for messages
  std::string text;   // as the user wrote it
};

/// Parses the grammar every --at/--from/--to shares (analysis::ParseMoment): "event:N" (negative
/// from the end), a time with a unit since the first event ("+250ms", "2s"; "-5s" back from the
/// last), or a time_us as recorded ("1700000000000000", "abs:1700000000000000"). An empty text
/// is an open end. Errors name `flag`.
absl::StatusOr<SliceBound> ParseSliceBound(std::string_view text, std::string_view flag = "--from");

struct TraceSlice {
  std::vector<EventRange> ranges;  // one per Snapshot::traces entry
  /// The time window kept, inclusive (kNoTime: open): the bounds' times, or for event bounds the
  /// times of the first and last event kept. Annotations outside it are dropped.
  int64_t min_time_us = kNoTime;
  int64_t max_time_us = kNoTime;
  uint64_t events = 0;  // events kept, all devices
};

/// Resolves [from, to) on every device trace. Time bounds need `time_us` in the file (an error
/// names the alternative, event:N). Errors (naming the flag) for an event index past a trace's
/// end, a time outside the file's times, and a `from` after `to`.
absl::StatusOr<TraceSlice> ComputeSlice(const Snapshot& snap, const SliceBound& from,
                                        const SliceBound& to);

}  // namespace memsnap::writer
