#include "memsnap/model/copy.h"

#include <cstdint>

namespace memsnap {

// A field added to Snapshot must be copied below: this fails to compile until the size is updated
// here, after the field is added to the copy.
static_assert(sizeof(Snapshot) == 792,
              "a field was added to Snapshot: copy it in CopySnapshot, then update this size");

Snapshot CopySnapshot(const Snapshot& in) {
  Snapshot out;
  // Interned in id order, each string distinct: every one gets the id it had (0 is "").
  for (size_t i = 1; i < in.strings.size(); ++i) {
    out.strings.Intern(in.strings.Get(StrId(static_cast<uint32_t>(i))));
  }
  out.frames = in.frames;
  out.stacks = in.stacks;
  out.segments = in.segments;
  out.blocks = in.blocks;
  out.streams = in.streams;
  out.events = in.events;
  out.event_extras = in.event_extras;
  out.traces = in.traces;
  out.annotations = in.annotations;
  out.settings = in.settings;
  out.source = in.source;
  out.diagnostics = in.diagnostics;
  return out;
}

}  // namespace memsnap
