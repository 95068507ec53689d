// Timeline reconstruction on hand-written fixture traces with known answers.
#include "memsnap/analysis/timeline/timeline.h"

#include <numeric>

#include "doctest/doctest.h"
#include "test_util.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using testing::LoadFixture;
using testing::ParseOrFail;
using testing::PythonPickle;

// The reserved curve point by point, read both ways (cursor and search), which must agree.
std::vector<int64_t> ReservedCurve(const DeviceTimeline& dt) {
  std::vector<int64_t> curve;
  ReservedCursor cursor(dt);
  for (uint32_t e = 0; e < dt.num_events; ++e) {
    curve.push_back(cursor.At(TimelinePoint::After(e)));
    CHECK(dt.ReservedAt(TimelinePoint::After(e)) == curve.back());
  }
  return curve;
}

DeviceTimeline Device0(const Snapshot& snap) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  REQUIRE(tl->devices.size() == 1);
  return tl->devices[0];
}

using testing::kMiB;

TEST_SUITE("timeline") {
  TEST_CASE("a training-step loop gives the exact live curve, peak and lifetime classes") {
    Snapshot snap = LoadFixture("timeline_training.json");
    DeviceTimeline dt = Device0(snap);
    CHECK(dt.has_time);
    CHECK(dt.start_requested == 1000);  // the ghost weight
    CHECK(dt.LiveCurve() == std::vector<int64_t>{3000, 4000, 4000, 2000, 4000, 4000, 2000});
    CHECK(LiveRoundedCurve(dt) == std::vector<int64_t>{3072, 4096, 4096, 2048, 4096, 4096, 2048});
    CHECK(dt.end_requested == 2000);
    CHECK(dt.unreconciled_requested_bytes == 0);
    CHECK(dt.peak_requested == 4000);
    CHECK(dt.peak_event == TimelinePoint::After(1));  // the first event that reaches the peak
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kGhost)].count == 1);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kOpen)].count == 1);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kInWindow)].count == 2);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kPreWindow)].count == 0);
    // Address reuse: two lifetimes at S+1024 with versions 0 and 1.
    CHECK(dt.blocks[0].address == dt.blocks[2].address);
    CHECK(dt.blocks[0].version == 0);
    CHECK(dt.blocks[2].version == 1);
    CHECK(dt.blocks[0].free_requested_event == LocalEvent(2));
    CHECK(dt.blocks[0].free_completed_event == LocalEvent(3));
    // Reserved: the segment predates the trace (a ghost segment) and stays.
    CHECK(dt.start_reserved == 2 * kMiB);
    CHECK(dt.reserved_steps.empty());
    CHECK(dt.ReservedAt(TimelinePoint::After(6)) == 2 * kMiB);
    // The reserved peak of a curve flat from the start is where it holds the most live memory
    // (docs/figures.md), not "before the first event"; a window's peak follows the same rule.
    CHECK(dt.peak_reserved == 2 * kMiB);
    CHECK(dt.peak_reserved_event == TimelinePoint::After(1));
    CHECK(dt.ReservedPeakIn(TimelinePoint::Start(), TimelinePoint::End(dt.num_events)) ==
          std::pair{dt.peak_reserved, dt.peak_reserved_event});
    CHECK(dt.ReservedPeakIn(TimelinePoint::After(3), TimelinePoint::After(6)) ==
          std::pair{2 * kMiB, TimelinePoint::After(4)});
  }

  TEST_CASE("a ring-buffer-truncated trace counts pre-window frees and ghosts from t0") {
    Snapshot snap = LoadFixture("timeline_ring.json");
    DeviceTimeline dt = Device0(snap);
    CHECK(dt.start_requested == 3100);  // pre-window 3000 + ghost 100
    CHECK(dt.LiveCurve() == std::vector<int64_t>{3100, 100, 1600, 2300, 1600});
    CHECK(dt.frees_without_alloc == 1);
    CHECK(dt.peak_event == TimelinePoint::Start());  // the initial state is the peak
    CHECK(dt.peak_requested == 3100);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kPreWindow)].bytes == 3000);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kGhost)].bytes == 100);
    CHECK(dt.unreconciled_requested_bytes == 0);
    // The open block takes the final block's size as its rounded size (1536, not round_size(1500)).
    CHECK(LiveRoundedCurve(dt).back() == 512 + 1536);
  }

  TEST_CASE("interleaved streams keep each stream's blocks and reserved bytes") {
    Snapshot snap = LoadFixture("timeline_streams.json");
    DeviceTimeline dt = Device0(snap);
    CHECK(dt.LiveCurve() == std::vector<int64_t>{0, 4000, 4000, 4500, 12500, 12500, 12000});
    CHECK(ReservedCurve(dt) == std::vector<int64_t>{2 * kMiB, 2 * kMiB, 4 * kMiB, 4 * kMiB,
                                                    4 * kMiB, 4 * kMiB, 4 * kMiB});
    CHECK(dt.start_reserved == 0);
    CHECK(dt.peak_event == TimelinePoint::After(4));
    int on_stream = 0;
    for (const BlockLifetime& b : dt.blocks) on_stream += b.stream == 0x5a5a;
    CHECK(on_stream == 2);
  }

  TEST_CASE("expandable segments follow segment_map and segment_unmap") {
    Snapshot snap = LoadFixture("timeline_expandable.json");
    DeviceTimeline dt = Device0(snap);
    CHECK(dt.start_reserved == 0);
    CHECK(ReservedCurve(dt) == std::vector<int64_t>{20 * kMiB, 20 * kMiB, 40 * kMiB, 40 * kMiB,
                                                    40 * kMiB, 40 * kMiB, 20 * kMiB});
    CHECK(dt.ReservedAt(TimelinePoint::Start()) == 0);
    CHECK(dt.unreconciled_reserved_bytes == 0);
    CHECK(dt.peak_requested == 11 * kMiB);
    CHECK(dt.peak_reserved == 40 * kMiB);
    REQUIRE(dt.segments.size() == 2);
    CHECK(dt.segments[0].mapping);
    CHECK(dt.segments[0].cls == LifetimeClass::kOpen);
    CHECK(dt.segments[1].cls == LifetimeClass::kInWindow);
  }

  // PyTorch's expandable segments unmap pages from any offset: on the corpus's three-device file
  // most unmaps start inside a mapping. Each mapping the unmap overlaps ends there, and what it
  // keeps mapped begins again, so the lifetimes there after any event add up to the reserved curve
  // (they once counted the unmapped range as a second, pre-trace segment).
  TEST_CASE(
      "an unmap inside and across mappings leaves lifetimes that add up to the reserved curve") {
    // Two mappings of 20 MiB at A and A+20, then an unmap of [A+10, A+30): what stays mapped is
    // [A, A+10) and [A+30, A+40), the two segments of the final state.
    // (testdata/timeline_expandable_unmap.json; an allocation in between gives the page a curve.)
    Snapshot snap = LoadFixture("timeline_expandable_unmap.json");
    DeviceTimeline dt = Device0(snap);
    const std::vector<int64_t> curve = ReservedCurve(dt);
    CHECK(curve == std::vector<int64_t>{20 * kMiB, 40 * kMiB, 40 * kMiB, 40 * kMiB, 40 * kMiB,
                                        20 * kMiB, 20 * kMiB});
    CHECK(dt.start_reserved == 0);
    CHECK(dt.unreconciled_reserved_bytes == 0);
    auto stacked = [&](TimelinePoint p) {
      int64_t sum = 0;
      for (const SegmentLifetime& s : dt.segments) {
        const bool begun = !s.begin_event.seen() || s.begin_event.SeenBy(p);
        if (begun && !s.end_event.SeenBy(p) && !s.left_out) sum += s.size;
      }
      return sum;
    };
    CHECK(stacked(TimelinePoint::Start()) == dt.start_reserved);
    for (uint32_t e = 0; e < dt.num_events; ++e) {
      CAPTURE(e);
      CHECK(stacked(TimelinePoint::After(e)) == curve[e]);
    }
    // The two mappings end at the unmap; their unmapped-around rests begin there.
    REQUIRE(dt.segments.size() == 4);
    for (int k = 0; k < 2; ++k) CHECK(dt.segments[k].end_event == LocalEvent(5));
    CHECK(dt.segments[2].address == 1073741824);
    CHECK(dt.segments[3].address == 1105199104);
    for (int k = 2; k < 4; ++k) {
      CHECK(dt.segments[k].split);
      CHECK(dt.segments[k].size == 10 * kMiB);
      CHECK(dt.segments[k].begin_event == LocalEvent(5));
      CHECK(dt.segments[k].segment.valid());
    }
  }

  TEST_CASE("moments resolve to device-local event indices") {
    Snapshot snap = LoadFixture("timeline_training.json");
    DeviceTimeline dt = Device0(snap);
    auto at = [&](std::string_view text) {
      auto m = ParseMoment(text);
      REQUIRE(m.ok());
      return ResolveMoment(snap, dt, *m).index();
    };
    CHECK(at("peak") == 1);
    CHECK(at("end") == 6);
    CHECK(at("event:3") == 3);
    CHECK(at("event:99") == 6);
    CHECK(at("350") == 3);  // the last event at or before time 350
    CHECK(at("10") == -1);
    CHECK(std::string(ParseMoment("soon").status().message())
              .starts_with("--at soon: a time needs a unit"));
    CHECK(LiveBlocksAt(dt, TimelinePoint::Start()).size() == 1);
    CHECK(LiveBlocksAt(dt, TimelinePoint::After(1)).size() == 3);
  }

  TEST_CASE(
      "times since the trace began or before it ended resolve, and times outside it are "
      "errors naming the flag") {
    Snapshot snap = LoadFixture("timeline_training.json");  // times 100, 200, 300, 300, 400, ...
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    const DeviceTimeline& dt = tl->devices[0];
    auto at = [&](std::string_view text) {
      auto m = ParseMoment(text);
      REQUIRE_MESSAGE(m.ok(), m.status().message());
      return ResolveMoment(snap, dt, *m).index();
    };
    CHECK(at("+250us") == 3);  // time 350: the last event at or before it
    CHECK(at("0.25ms") == 3);
    CHECK(at("+0us") == 0);
    CHECK(at("-100us") == 4);  // time 400
    CHECK(at("event:-1") == 6);
    CHECK(at("abs:350") == 3);
    auto check = [&](std::string_view text, std::string_view flag = "--at") {
      auto m = ParseMoment(text, flag);
      REQUIRE(m.ok());
      absl::Status st = CheckMoment(snap, dt, *m, flag, text);
      return st.ok() ? std::string() : std::string(st.message());
    };
    CHECK(check("event:6").empty());
    CHECK(check("event:7") ==
          "--at event:7: out of range: device 0's trace has 7 events (event:0 to event:6)");
    CHECK(check("event:-8").starts_with("--at event:-8: out of range"));
    CHECK(check("+401us", "--to").starts_with("--to +401us: after the trace ended"));
    CHECK(check("+400us").empty());
    CHECK(check("50").starts_with("--at 50: before the trace began"));
    CHECK(check("-1s").starts_with("--at -1s: before the trace began"));
    CHECK(check("peak").empty());
    CHECK(std::string(ParseMoment("10ms", "--from").status().message()).empty());
    CHECK(std::string(ParseMoment("10 parsecs", "--from").status().message())
              .starts_with("--from 10 parsecs:"));
  }

  TEST_CASE(
      "a free of a block in no segment the file records is left out of every figure, whatever "
      "the timeline keeps, and counted with its bytes and first event") {
    using testing::Ev;
    const uint64_t seg = 0x100000, far = 0x9000000;
    Snapshot snap = testing::TraceSnapshot({
        Ev(Action::kSegmentAlloc, seg, 2 * kMiB),
        Ev(Action::kAlloc, seg, kMiB),
        Ev(Action::kFreeCompleted, seg + kMiB, kMiB / 4),  // in the segment: live from the start
        Ev(Action::kFreeRequested, far, 4 * kMiB),         // in no segment: left out
        Ev(Action::kFreeCompleted, far, 4 * kMiB),
        Ev(Action::kFreeCompleted, seg, kMiB),
    });
    const std::vector<int64_t> want = {kMiB / 4, kMiB * 5 / 4, kMiB, kMiB, kMiB, 0};
    for (KeepLifetimes keep : {KeepLifetimes::kAll, KeepLifetimes::kLiveAt, KeepLifetimes::kNone}) {
      CAPTURE(static_cast<int>(keep));
      TimelineOptions o;
      o.keep = keep;
      auto tl = ReconstructTimeline(snap, o);
      REQUIRE(tl.ok());
      const DeviceTimeline& dt = tl->devices[0];
      CHECK(dt.unplaced_frees == 1);
      CHECK(dt.unplaced_free_bytes == 4 * kMiB);
      CHECK(dt.first_unplaced_free == LocalEvent(3));
      CHECK(dt.frees_without_alloc == 1);
      CHECK(dt.start_requested == kMiB / 4);
      CHECK(dt.LiveCurve() == want);
      CHECK(dt.peak_requested == kMiB * 5 / 4);
      CHECK(dt.peak_event == TimelinePoint::After(1));
      for (const BlockLifetime& lt : dt.blocks) CHECK(lt.address != far);
      // The timeline built while reading is the same.
      TimelineStream stream(o);
      stream.Feed(snap.events, 0, snap.streams.values());
      auto streamed = stream.Finish(snap, snap.events.size());
      REQUIRE(streamed.ok());
      CHECK(streamed->devices[0] == dt);
    }
    // Without any segment event nothing places a block: the free is counted from the start.
    Snapshot no_segments = testing::TraceSnapshot({Ev(Action::kFreeCompleted, far, 4 * kMiB)});
    const DeviceTimeline dt = Device0(no_segments);
    CHECK(dt.unplaced_frees == 0);
    CHECK(dt.start_requested == 4 * kMiB);
  }

  TEST_CASE("an unknown --device is an error naming the devices") {
    Snapshot snap = LoadFixture("timeline_training.json");
    TimelineOptions o;
    o.device = 3;
    auto tl = ReconstructTimeline(snap, o);
    REQUIRE(!tl.ok());
    CHECK(tl.status().message() == "--device 3: no such device in this file (devices: 0)");
  }
}

}  // namespace
}  // namespace memsnap::analysis

namespace memsnap::analysis {
namespace {

TEST_SUITE("timeline") {
  TEST_CASE("a 2.0-flavoured file (history, no time_us, snapshot event) is ordered by index") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('timeline_legacy_2_0.json')"), "legacy");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    const DeviceTimeline& dt = tl->devices[0];
    CHECK(!dt.has_time);
    CHECK(dt.start_requested == 1000);  // the block at S never appears in the trace: a ghost
    CHECK(dt.LiveCurve() == std::vector<int64_t>{2500, 6500, 6500, 2500, 2500});
    CHECK(dt.end_requested == 2500);
    CHECK(dt.peak_event == TimelinePoint::After(1));
    CHECK(dt.TimeOf(snap, dt.peak_event) == kNoTime);
    auto m = ParseMoment("3");  // a plain number is an event index when there is no time
    REQUIRE(m.ok());
    CHECK(ResolveMoment(snap, dt, *m) == TimelinePoint::After(3));
  }
}

}  // namespace
}  // namespace memsnap::analysis
