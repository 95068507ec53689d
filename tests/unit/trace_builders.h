// Builders for unit tests that need a synthetic trace rather than a fixture file: one event,
// one single-device snapshot. Shared by the replay, GPU-replay, timeline and rounding tests.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::testing {

/// A trace event (time 0, no stack): `addr` is the block or segment address (for kOom,
/// device_free), `size` the requested or segment bytes, `stream` an id of the StreamTable given
/// to TraceSnapshot (the default: stream 0).
inline TraceEvent Ev(Action action, uint64_t addr, int64_t size,
                     StreamId stream = StreamTable::kDefault) {
  TraceEvent e;
  e.action = action;
  e.addr = addr;
  e.size = size;
  e.stream = stream;
  return e;
}

/// A snapshot named "fake.pickle" whose only trace is `events` on device 0, with
/// allocator_settings recorded at PyTorch's defaults and no segments; `streams` holds the values of
/// the events' stream ids.
inline Snapshot TraceSnapshot(std::vector<TraceEvent> events, StreamTable streams = {}) {
  Snapshot s;
  s.streams = std::move(streams);
  s.events = std::move(events);
  s.traces.push_back({0, 0, static_cast<uint32_t>(s.events.size())});
  s.settings.present = true;
  s.source.path = "fake.pickle";
  return s;
}

}  // namespace memsnap::testing
