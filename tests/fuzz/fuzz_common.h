// Shared body of the fuzz targets: a decoder may return an error, never crash; an error must name
// the input; a snapshot it returns must survive Normalize().
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "absl/status/statusor.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::fuzz {

inline constexpr std::string_view kName = "fuzz.in";

inline void CheckError(const absl::Status& status) {
  std::string_view msg(status.message().data(), status.message().size());
  if (msg.substr(0, kName.size()) != kName) std::abort();  // errors must name the file
}

inline void Check(absl::StatusOr<Snapshot> snap) {
  if (!snap.ok()) return CheckError(snap.status());
  Normalize(*snap);
  // Touch what analyses read: every block's segment link, every event's stream and stack frames.
  for (const Segment& s : snap->segments) {
    for (const Block& b : snap->BlocksOf(s)) (void)b.size;
  }
  for (const TraceEvent& e : snap->events) {
    (void)snap->StreamOf(e);  // its id names a value of the stream table
    if (e.stack.valid()) {
      for (FrameId f : snap->stacks.Get(e.stack)) (void)snap->FrameText(f);
    }
  }
}

}  // namespace memsnap::fuzz
