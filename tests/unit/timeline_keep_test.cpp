// Keeping fewer lifetimes (KeepLifetimes::kLiveAt, kNone) changes nothing but what is kept: checked
// on random traces full of what real traces rarely have (missing allocs and frees, reused
// addresses, address 0, partial unmaps) at every kind of moment.
#include <random>

#include "doctest/doctest.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "timeline_keep_check.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using testing::CheckKeepModesAgree;
using testing::Ev;

constexpr uint64_t kBase = 0x7f0000000000;
constexpr int kAddrs = 8;

uint64_t AddrOf(int k) { return k == 0 ? 0 : kBase + static_cast<uint64_t>(k) * 4096; }

// A random single-device trace over a few addresses, with a final state whose active blocks
// partly match what the trace leaves open.
Snapshot RandomSnapshot(std::mt19937_64& rng, bool timed) {
  std::vector<TraceEvent> events;
  const int n = std::uniform_int_distribution<int>(0, 60)(rng);
  int64_t t = 100;
  for (int i = 0; i < n; ++i) {
    const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
    const uint64_t addr = AddrOf(std::uniform_int_distribution<int>(0, kAddrs - 1)(rng));
    const int64_t size = std::uniform_int_distribution<int64_t>(0, 5000)(rng);
    Action a = roll < 35   ? Action::kAlloc
               : roll < 60 ? Action::kFreeRequested
               : roll < 88 ? Action::kFreeCompleted
               : roll < 92 ? Action::kSegmentAlloc
               : roll < 95 ? Action::kSegmentFree
               : roll < 97 ? Action::kSegmentMap
               : roll < 98 ? Action::kSegmentUnmap
                           : Action::kSnapshot;
    TraceEvent e = Ev(a, a >= Action::kSegmentAlloc ? kBase : addr, size);
    e.stack = StackId(static_cast<uint32_t>(i));
    // Times mostly rise; now and then one steps back (clock skew, hostile files).
    t += std::uniform_int_distribution<int>(-1, 3)(rng) + (i % 3 == 0 ? 1 : 0);
    e.time_us = timed ? t : kNoTime;
    events.push_back(e);
  }
  Snapshot snap = testing::TraceSnapshot(std::move(events));
  Segment seg;
  seg.address = kBase;
  seg.total_size = 64 * 4096;
  seg.first_block = 0;
  for (int k = 1; k < kAddrs; ++k) {
    Block b;
    b.address = AddrOf(k);
    b.size = 4096;
    b.requested_size = std::uniform_int_distribution<int64_t>(1, 4096)(rng);
    const int roll = std::uniform_int_distribution<int>(0, 3)(rng);
    b.state = roll == 0   ? BlockState::kInactive
              : roll == 1 ? BlockState::kActivePendingFree
                          : BlockState::kActiveAllocated;
    b.stack = StackId(static_cast<uint32_t>(1000 + k));
    snap.blocks.push_back(b);
  }
  seg.num_blocks = static_cast<uint32_t>(snap.blocks.size());
  snap.segments.push_back(seg);
  return snap;
}

TEST_SUITE("timeline") {
  TEST_CASE(
      "keeping only the lifetimes live at a moment keeps exactly those of the full timeline") {
    std::mt19937_64 rng(20261122);
    for (int round = 0; round < 400; ++round) {
      CAPTURE(round);
      const bool timed = round % 3 != 0;
      Snapshot snap = RandomSnapshot(rng, timed);
      const int64_t n = static_cast<int64_t>(snap.events.size());
      CheckKeepModesAgree(snap, Moment{Moment::Kind::kPeak, 0});
      CheckKeepModesAgree(snap, Moment{Moment::Kind::kEnd, 0});
      for (int64_t e : {int64_t{-5}, int64_t{-1}, int64_t{0}, n / 2, n - 1, n + 3}) {
        CheckKeepModesAgree(snap, Moment{Moment::Kind::kEvent, e});
      }
      for (int64_t t : {int64_t{0}, int64_t{100}, int64_t{150}, int64_t{1} << 40}) {
        CheckKeepModesAgree(snap, Moment{Moment::Kind::kTime, t});
      }
    }
  }

  TEST_CASE("a timeline without lifetimes still counts every class and finds the peak") {
    Snapshot snap = testing::TraceSnapshot(
        {Ev(Action::kAlloc, kBase, 100), Ev(Action::kAlloc, kBase + 512, 300),
         Ev(Action::kFreeCompleted, kBase, 100), Ev(Action::kFreeCompleted, kBase + 4096, 50)});
    Segment seg;  // the final state: the 300-byte block still allocated
    seg.address = kBase;
    seg.total_size = 4096;
    seg.num_blocks = 1;
    snap.segments.push_back(seg);
    Block b;
    b.address = kBase + 512;
    b.size = 512;
    b.requested_size = 300;
    b.state = BlockState::kActiveAllocated;
    snap.blocks.push_back(b);
    TimelineOptions o;
    o.keep = KeepLifetimes::kNone;
    auto tl = ReconstructTimeline(snap, o);
    REQUIRE(tl.ok());
    const DeviceTimeline& dt = tl->devices[0];
    CHECK(dt.blocks.empty());
    CHECK(dt.start_requested == 50);  // the pre-window block
    CHECK(dt.open_without_block == 0);
    CHECK(dt.peak_requested == 450);
    CHECK(dt.peak_event == TimelinePoint::After(1));
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kInWindow)].count == 1);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kOpen)].count == 1);
    CHECK(dt.by_class[static_cast<int>(LifetimeClass::kPreWindow)].bytes == 50);
  }
}

}  // namespace
}  // namespace memsnap::analysis
