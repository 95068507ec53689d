// Structured mutations of a decoded snapshot (issue 20): sizes, addresses, times, streams,
// actions, states, frames and counts changed to the values that break assumptions (0, 1 TiB and
// one past it, 2^63-1, negatives, other records' addresses, unknown actions, shared or missing
// stacks), records copied over others and traces cut short. The result is still a well-formed
// model, so the project's own writer (writer/snapshot_writer.h) can encode it and the readers and
// every analysis see semantic mutants, not only byte noise. Used by the fuzz_structured target
// and by tests/unit/mutation_test.cpp.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include "memsnap/model/snapshot.h"
#include "memsnap/writer/snapshot_writer.h"

namespace memsnap::testing {

class SnapshotMutator {
 public:
  explicit SnapshotMutator(uint64_t seed) : rng_(seed) {}

  /// Applies 1 to `max_steps` random mutations to `s`.
  void Mutate(Snapshot& s, int max_steps = 4) {
    const int steps = 1 + static_cast<int>(Below(static_cast<uint64_t>(max_steps)));
    for (int i = 0; i < steps; ++i) MutateOnce(s);
  }

  /// Cuts `s` down to a random window of at most `max_events` entries per device trace and
  /// `max_segments` segments (their blocks stay): a whole real snapshot becomes a small one whose
  /// records are still real, so a fuzzer that mutates it runs thousands of times faster.
  void Crop(Snapshot& s, uint32_t max_events, size_t max_segments) {
    for (DeviceTrace& t : s.traces) {
      if (t.size() <= max_events) continue;
      t.begin += static_cast<uint32_t>(Below(t.size() - max_events + 1));
      t.end = t.begin + max_events;
    }
    if (s.segments.size() > max_segments) {
      const size_t first = Below(s.segments.size() - max_segments + 1);
      s.segments.erase(s.segments.begin() + static_cast<std::ptrdiff_t>(first + max_segments),
                       s.segments.end());
      s.segments.erase(s.segments.begin(), s.segments.begin() + static_cast<std::ptrdiff_t>(first));
    }
  }

  /// `s` as a pickle of a random protocol, by the project's writer ("" if it fails).
  std::string Encode(const Snapshot& s) {
    writer::SnapshotWriteOptions options;
    options.protocol = Pick({2, 4, 5});
    std::ostringstream out;
    if (!writer::WriteSnapshotPickle(s, options, out).ok()) return "";
    return out.str();
  }

  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }
  int Pick(std::initializer_list<int> values) { return *(values.begin() + Below(values.size())); }

 private:
  int64_t Size() {
    static constexpr int64_t kSizes[] = {0,
                                         1,
                                         511,
                                         512,
                                         513,
                                         int64_t{1} << 20,
                                         (int64_t{1} << 20) + 1,
                                         int64_t{20} << 20,
                                         kMaxBytes,
                                         kMaxBytes + 1,
                                         int64_t{1} << 62,
                                         std::numeric_limits<int64_t>::max(),
                                         -1,
                                         -512,
                                         std::numeric_limits<int64_t>::min()};
    if (Below(4) == 0) return static_cast<int64_t>(rng_() >> Below(64));
    return kSizes[Below(std::size(kSizes))];
  }
  uint64_t Address(const Snapshot& s) {
    switch (Below(6)) {
      case 0:
        return 0;
      case 1:
        return kMaxAddress + Below(2);
      case 2:
        return std::numeric_limits<uint64_t>::max() - Below(4096);
      case 3:
        if (!s.events.empty()) return s.events[Below(s.events.size())].addr + 512 * Below(3);
        [[fallthrough]];
      case 4:
        if (!s.blocks.empty()) return s.blocks[Below(s.blocks.size())].address;
        [[fallthrough]];
      default:
        return rng_() >> Below(64);
    }
  }
  int64_t Time() {
    switch (Below(5)) {
      case 0:
        return kNoTime;
      case 1:
        return -static_cast<int64_t>(Below(1000));
      case 2:
        return std::numeric_limits<int64_t>::max() - static_cast<int64_t>(Below(2));
      case 3:
        return kMaxTimeUs + static_cast<int64_t>(Below(2));
      default:
        return int64_t{1732000000000000} + static_cast<int64_t>(Below(1000000));
    }
  }
  StackId Stack(const Snapshot& s) {
    if (Below(4) == 0) return StackId();
    return StackId(static_cast<uint32_t>(Below(s.stacks.size())));
  }
  StrId Str(const Snapshot& s) { return StrId(static_cast<uint32_t>(Below(s.strings.size()))); }

  void MutateOnce(Snapshot& s) {
    switch (Below(16)) {
      case 0:
      case 1:
      case 2: {  // a trace entry's field
        if (s.events.empty()) break;
        TraceEvent& e = s.events[Below(s.events.size())];
        switch (Below(7)) {
          case 0:
            e.size = Size();
            break;
          case 1:
            e.addr = Address(s);
            break;
          case 2:
            e.action = static_cast<Action>(Below(kNumActions));
            break;
          case 3:
            e.time_us = Time();
            break;
          case 4:
            if (StreamId id = s.streams.Intern(Below(2) ? 0 : static_cast<int64_t>(rng_()));
                id.valid()) {
              e.stream = id;
            }
            break;
          case 5:
            e.stack = Stack(s);
            break;
          default:
            e = s.events[Below(s.events.size())];
            break;  // a copy of another entry
        }
        break;
      }
      case 3: {  // two entries swapped: frees before allocs, times out of order
        if (s.events.size() < 2) break;
        std::swap(s.events[Below(s.events.size())], s.events[Below(s.events.size())]);
        break;
      }
      case 4: {  // a device trace cut short, or emptied
        if (s.traces.empty()) break;
        DeviceTrace& t = s.traces[Below(s.traces.size())];
        t.end = t.begin + static_cast<uint32_t>(Below(t.size() + 1));
        break;
      }
      case 5:
      case 6: {  // a block's field
        if (s.blocks.empty()) break;
        Block& b = s.blocks[Below(s.blocks.size())];
        switch (Below(5)) {
          case 0:
            b.size = Size();
            break;
          case 1:
            b.requested_size = Size();
            break;
          case 2:
            b.address = Address(s);
            break;
          case 3:
            b.state = static_cast<BlockState>(Below(3));
            break;
          default:
            b.stack = Stack(s);
            break;
        }
        break;
      }
      case 7:
      case 8: {  // a segment's field
        if (s.segments.empty()) break;
        Segment& g = s.segments[Below(s.segments.size())];
        switch (Below(8)) {
          case 0:
            g.total_size = Size();
            break;
          case 1:
            g.allocated_size = Size();
            break;
          case 2:
            g.active_size = Size();
            break;
          case 3:
            g.address = Address(s);
            break;
          case 4:
            g.device = static_cast<int32_t>(Below(4));
            break;
          case 5:
            g.is_expandable = !g.is_expandable;
            break;
          case 6:
            g.pool = Below(2) ? PoolId{} : PoolId{1, Below(3)};
            break;
          default:
            g.num_blocks = static_cast<uint32_t>(Below(g.num_blocks + 1));
            break;
        }
        break;
      }
      case 9: {  // a segment copied over another: duplicated, overlapping segments
        if (s.segments.size() < 2) break;
        s.segments[Below(s.segments.size())] = s.segments[Below(s.segments.size())];
        break;
      }
      case 10: {  // allocator settings
        s.settings.present = true;
        switch (Below(5)) {
          case 0:
            s.settings.roundup_power2_divisions[Below(16)] =
                Pick({0, 1, 2, 3, 4, 8, 1 << 20, -4}) * (Below(8) == 0 ? (int64_t{1} << 40) : 1);
            break;
          case 1:
            s.settings.max_split_size = Below(2) ? -1 : Size();
            break;
          case 2:
            s.settings.expandable_segments = !s.settings.expandable_segments;
            break;
          case 3:
            s.settings.conf = Pick({0, 1}) ? "max_split_size_mb:99999999999999999"
                                           : "roundup_power2_divisions:[1:4,>:4611686018427387904]";
            break;
          default:
            s.settings.garbage_collection_threshold = Below(2) ? 0.5 : -1.0;
            break;
        }
        break;
      }
      case 11: {  // an annotation
        if (s.annotations.empty()) {
          s.annotations.push_back(Annotation{0, Time(), Str(s), Str(s)});
        } else {
          Annotation& a = s.annotations[Below(s.annotations.size())];
          a.time_us = Time();
          a.device = static_cast<int32_t>(Below(3)) - 1;
        }
        break;
      }
      case 12: {  // the same stack everywhere, or none
        const StackId id = Stack(s);
        for (size_t i = Below(2); i < s.events.size(); i += 1 + Below(8)) s.events[i].stack = id;
        break;
      }
      case 13: {  // an OOM or a snapshot entry where an allocation was
        if (s.events.empty()) break;
        TraceEvent& e = s.events[Below(s.events.size())];
        e.action = Below(2) ? Action::kOom : Action::kSnapshot;
        break;
      }
      case 14: {  // the trace of another device
        if (s.traces.empty()) break;
        s.traces[Below(s.traces.size())].device = static_cast<int32_t>(Below(3));
        break;
      }
      default: {  // a whole size class of entries made huge or negative
        const int64_t v = Size();
        for (size_t i = Below(3); i < s.events.size(); i += 1 + Below(32)) s.events[i].size = v;
        break;
      }
    }
  }

  std::mt19937_64 rng_;
};

}  // namespace memsnap::testing
