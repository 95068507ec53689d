// Lookups of the model's interned tables (StringPool, FrameTable, StackTable, StreamTable) with an
// id the table does not hold: the invalid id is a legal value in the model (an absent stack, no
// string), so it reads as an empty value, never out of bounds. Any other id past the end is a bug:
// it asserts where asserts are compiled in (the sanitizer builds), and reads the same empty value
// in release builds, which is what the NDEBUG cases check.
#include <doctest/doctest.h>

#include <span>
#include <vector>

#include "memsnap/model/snapshot.h"
#include "memsnap/model/string_pool.h"

namespace memsnap {

TEST_SUITE("model_lookup") {
  TEST_CASE("SegmentsByDevice lists each device's segments in file order, as a scan finds them") {
    Snapshot snap;
    for (int32_t device : {3, 0, 3, 1, 0, 3}) {
      Segment seg;
      seg.device = device;
      seg.address = 1000 - snap.segments.size();  // addresses descend: file order is not theirs
      snap.segments.push_back(seg);
    }
    const SegmentsByDevice by_device(snap);
    for (int32_t device : {0, 1, 2, 3, 4, -1}) {
      std::vector<uint32_t> scanned;
      for (uint32_t s = 0; s < snap.segments.size(); ++s) {
        if (snap.segments[s].device == device) scanned.push_back(s);
      }
      const std::span<const uint32_t> got = by_device.Of(device);
      CHECK(std::vector<uint32_t>(got.begin(), got.end()) == scanned);
    }
  }

  TEST_CASE("TraceOf finds a device's trace by its ordinal, and by a scan when not indexed so") {
    Snapshot snap;
    snap.traces = {{0, 0, 0}, {1, 0, 0}, {2, 0, 0}};
    CHECK(snap.TraceOf(1) == &snap.traces[1]);
    CHECK(snap.TraceOf(5) == nullptr);
    CHECK(snap.TraceOf(-1) == nullptr);
    snap.traces = {{7, 0, 0}, {2, 0, 0}};  // a hand-made model in another order
    CHECK(snap.TraceOf(2) == &snap.traces[1]);
    CHECK(snap.TraceOf(7) == &snap.traces[0]);
    CHECK(snap.TraceOf(0) == nullptr);
  }

  TEST_CASE("the invalid string id reads as the empty string") {
    StringPool pool;
    const StrId a = pool.Intern("alpha");
    CHECK(pool.Get(a) == "alpha");
    CHECK(pool.Get(StrId::Invalid()).empty());
  }

  TEST_CASE("the invalid frame id reads as an unknown frame: no name, no file, unknown line") {
    FrameTable frames;
    const FrameId f = frames.Intern(Frame{StrId(3), StrId(4), 12});
    CHECK(frames.Get(f).line == 12);
    const Frame& unknown = frames.Get(FrameId::Invalid());
    CHECK(unknown.name == StringPool::kEmpty);
    CHECK(unknown.filename == StringPool::kEmpty);
    CHECK(unknown.line == kUnknownLine);
  }

  TEST_CASE("the invalid stack id (an absent stack) reads as a stack without frames") {
    StackTable stacks;
    std::vector<FrameId> frames = {FrameId(0), FrameId(1)};
    const StackId s = stacks.Intern(frames);
    CHECK(stacks.Get(s).size() == 2);
    CHECK(stacks.Get(StackId::Invalid()).empty());
    CHECK(stacks.Get(StackTable::kEmpty).empty());
  }

  TEST_CASE("the invalid stream id reads as the default stream") {
    StreamTable streams;
    const StreamId s = streams.Intern(77);
    CHECK(streams.Get(s) == 77);
    CHECK(streams.Get(StreamId::Invalid()) == 0);
  }

#ifdef NDEBUG
  TEST_CASE("a release build reads an id past the end of its table as the empty value") {
    StringPool pool;
    pool.Intern("alpha");
    CHECK(pool.Get(StrId(static_cast<uint32_t>(pool.size()))).empty());
    CHECK(pool.Get(StrId(1u << 30)).empty());

    FrameTable frames;
    frames.Intern(Frame{StrId(3), StrId(4), 12});
    CHECK(frames.Get(FrameId(1)).line == kUnknownLine);
    CHECK(frames.Get(FrameId(1u << 30)).line == kUnknownLine);

    StackTable stacks;
    std::vector<FrameId> two = {FrameId(0), FrameId(1)};
    stacks.Intern(two);
    CHECK(stacks.Get(StackId(static_cast<uint32_t>(stacks.size()))).empty());
    CHECK(stacks.Get(StackId(1u << 30)).empty());

    StreamTable streams;
    streams.Intern(77);
    CHECK(streams.Get(StreamId(2)) == 0);
  }
#endif
}

}  // namespace memsnap
