// The terminal chart's columns and window figures against a brute-force per-event reference, on
// random synthetic traces (times increasing, tied, absent or out of order).
#include <algorithm>
#include <random>
#include <vector>

#include "doctest/doctest.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/report/timeline_render.h"
#include "timeline_points.h"
#include "trace_builders.h"

namespace memsnap::report {
namespace {

using analysis::DeviceTimeline;
using testing::Ev;
using testing::LiveAt;
using testing::Point;

// The window from point `from` to point `to`, written as output writes them (-1: the start).
EventWindow W(int64_t from, int64_t to) { return EventWindow{Point(from), Point(to)}; }
using testing::TraceSnapshot;

enum class Times { kIncreasing, kTied, kEqual, kNone, kShuffled };

// A random single-device trace of about `n` events (set to the final count): allocs, frees, segment
// allocs and frees.
Snapshot RandomTrace(uint32_t seed, int& n, Times times) {
  std::mt19937_64 rng(seed);
  std::vector<TraceEvent> events;
  std::vector<uint64_t> live, segments;
  uint64_t next_addr = 0x1000;
  for (int i = 0; i < n; ++i) {
    const int pick = static_cast<int>(rng() % 100);
    if (pick < 5) {
      segments.push_back(next_addr += 0x100000);
      events.push_back(Ev(Action::kSegmentAlloc, segments.back(), 2 << 20));
    } else if (pick < 8 && !segments.empty()) {
      events.push_back(Ev(Action::kSegmentFree, segments.back(), 2 << 20));
      segments.pop_back();
    } else if (pick < 55 || live.empty()) {
      live.push_back(next_addr += 0x1000);
      events.push_back(Ev(Action::kAlloc, live.back(), static_cast<int64_t>(rng() % 100000)));
    } else {
      const size_t k = rng() % live.size();
      events.push_back(Ev(Action::kFreeCompleted, live[k], 0));
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
  }
  if (seed % 4 != 0) {  // end with nothing live, so the curve starts at 0 (else it goes negative)
    for (uint64_t addr : live) events.push_back(Ev(Action::kFreeCompleted, addr, 0));
    for (uint64_t addr : segments) events.push_back(Ev(Action::kSegmentFree, addr, 2 << 20));
  }
  // Epoch-scale times, so the column arithmetic sees large doubles.
  int64_t t = 1'700'000'000'000'000;
  for (TraceEvent& e : events) {
    switch (times) {
      case Times::kIncreasing:
        t += 1 + static_cast<int64_t>(rng() % 1000);
        break;
      case Times::kTied:
        t += (rng() % 3 == 0) ? 0 : static_cast<int64_t>(rng() % 50);
        break;
      case Times::kEqual:
        break;
      case Times::kNone:
        t = kNoTime;
        break;
      case Times::kShuffled:
        t += static_cast<int64_t>(rng() % 1000) - 300;
        break;
    }
    e.time_us = t;
  }
  // Free sizes must match their alloc for the timeline to pair them; give each free its size.
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].action != Action::kFreeCompleted) continue;
    for (size_t j = i; j-- > 0;) {
      if (events[j].action == Action::kAlloc && events[j].addr == events[i].addr) {
        events[i].size = events[j].size;
        break;
      }
    }
  }
  n = static_cast<int>(events.size());
  return TraceSnapshot(std::move(events));
}

// What the chart showed before it had a fast path: every event, one at a time.
ChartColumns ReferenceColumns(const Snapshot& snap, const DeviceTimeline& dt, const EventWindow& w,
                              int plot_w) {
  ChartColumns cols;
  for (auto* v : {&cols.live, &cols.res, &cols.live_last, &cols.res_last}) v->assign(plot_w, -1);
  auto x_of = [&](int64_t e) { return dt.has_time ? dt.TimeOf(snap, Point(e)) : e; };
  const int64_t first = std::max<int64_t>(w.from.index(), 0), to = w.to.index();
  const int64_t x0 = x_of(first), x1 = x_of(to);
  const double span = x1 > x0 ? static_cast<double>(x1 - x0) : 1.0;
  if (w.from.is_start()) {
    cols.live[0] = cols.live_last[0] = dt.start_requested;
    cols.res[0] = cols.res_last[0] = dt.start_reserved;
  }
  for (int64_t e = first; e <= to; ++e) {
    int c = static_cast<int>(static_cast<double>(x_of(e) - x0) * (plot_w - 1) / span);
    c = std::clamp(c, 0, plot_w - 1);
    cols.live[c] = std::max(cols.live[c], cols.live_last[c] = LiveAt(dt, e));
    cols.res[c] = std::max(cols.res[c], cols.res_last[c] = dt.ReservedAt(Point(e)));
  }
  for (int c = 1; c < plot_w; ++c) {
    if (cols.live[c] < 0) cols.live[c] = cols.live_last[c] = cols.live_last[c - 1];
    if (cols.res[c] < 0) cols.res[c] = cols.res_last[c] = cols.res_last[c - 1];
  }
  return cols;
}

WindowFigures ReferenceWindow(const DeviceTimeline& dt, const EventWindow& w) {
  WindowFigures f;
  f.start_bytes = f.peak_bytes = LiveAt(dt, w.from.index());
  f.end_bytes = LiveAt(dt, w.to.index());
  f.peak_event = w.from;
  f.peak_reserved = dt.ReservedAt(w.from);
  for (int64_t e = std::max<int64_t>(w.from.index(), 0); e <= w.to.index(); ++e) {
    if (LiveAt(dt, e) > f.peak_bytes) f.peak_bytes = LiveAt(dt, e), f.peak_event = Point(e);
    f.peak_reserved = std::max(f.peak_reserved, dt.ReservedAt(Point(e)));
  }
  return f;
}

// Every window and width of a few kinds against the references; returns how many took the fast
// path (columns from contiguous event ranges).
int CheckAgainstReference(Times times) {
  int contiguous = 0;
  for (uint32_t seed = 1; seed <= 12; ++seed) {
    int n = 50 + static_cast<int>(seed * 97 % 1500);
    Snapshot snap = RandomTrace(seed, n, times);
    auto tl = analysis::ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    REQUIRE(tl->devices.size() == 1);
    const DeviceTimeline& dt = tl->devices[0];
    REQUIRE(dt.has_time == (times != Times::kNone));
    std::mt19937 rng(seed);
    std::vector<EventWindow> windows = {W(-1, n - 1), W(0, n - 1), W(-1, 0), W(n / 2, n / 2)};
    for (int k = 0; k < 6; ++k) {
      const int64_t from = static_cast<int64_t>(rng() % (n + 1)) - 1;
      const int64_t lo = std::max<int64_t>(from, 0);
      windows.push_back(W(from, lo + static_cast<int64_t>(rng() % (n - lo))));
    }
    for (const EventWindow& w : windows) {
      REQUIRE(w.to.index() >= std::max<int64_t>(w.from.index(), 0));
      REQUIRE(w.to.index() < n);
      const WindowFigures got = ComputeWindow(dt, w), want = ReferenceWindow(dt, w);
      CHECK(got.start_bytes == want.start_bytes);
      CHECK(got.peak_bytes == want.peak_bytes);
      CHECK(got.peak_event == want.peak_event);
      CHECK(got.end_bytes == want.end_bytes);
      CHECK(got.peak_reserved == want.peak_reserved);
      for (int plot_w : {1, 2, 7, 10, 64, 300, 3000}) {
        CAPTURE(seed);
        CAPTURE(w.from.index());
        CAPTURE(w.to.index());
        CAPTURE(plot_w);
        const ChartColumns got_cols = ComputeChartColumns(snap, dt, w, plot_w);
        const ChartColumns want_cols = ReferenceColumns(snap, dt, w, plot_w);
        CHECK(got_cols.live == want_cols.live);
        CHECK(got_cols.live_last == want_cols.live_last);
        CHECK(got_cols.res == want_cols.res);
        CHECK(got_cols.res_last == want_cols.res_last);
        CHECK(got_cols.figures.peak_bytes == want.peak_bytes);
        CHECK(got_cols.figures.peak_event == want.peak_event);
        CHECK(got_cols.figures.start_bytes == want.start_bytes);
        CHECK(got_cols.figures.end_bytes == want.end_bytes);
        CHECK(got_cols.figures.peak_reserved == want.peak_reserved);
        contiguous += got_cols.contiguous;
      }
    }
  }
  return contiguous;
}

TEST_SUITE("timeline chart") {
  TEST_CASE("chart columns from event ranges equal the per-event reference when times increase") {
    CHECK(CheckAgainstReference(Times::kIncreasing) == 12 * 10 * 7);
  }

  TEST_CASE("chart columns equal the per-event reference when times tie or are all equal") {
    CHECK(CheckAgainstReference(Times::kTied) == 12 * 10 * 7);
    CHECK(CheckAgainstReference(Times::kEqual) == 12 * 10 * 7);
  }

  TEST_CASE("chart columns equal the per-event reference when x is the event index") {
    CHECK(CheckAgainstReference(Times::kNone) == 12 * 10 * 7);
  }

  TEST_CASE("times that go back take the per-event path and still equal the reference") {
    // Every full window of a shuffled trace goes back somewhere; short windows may not.
    const int contiguous = CheckAgainstReference(Times::kShuffled);
    CHECK(contiguous < 12 * 10 * 7);
    int n = 400;
    Snapshot snap = RandomTrace(3, n, Times::kShuffled);
    auto tl = analysis::ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    CHECK_FALSE(ComputeChartColumns(snap, tl->devices[0], W(-1, n - 1), 80).contiguous);
  }

  TEST_CASE("reserved steps sharing an event show only the last of them, as the cursor does") {
    Snapshot snap = TraceSnapshot(std::vector<TraceEvent>(6, Ev(Action::kSnapshot, 0, 0)));
    DeviceTimeline dt;
    dt.num_events = 6;
    dt.live_net = {1, 5, 2, 2, 9, 0};
    dt.start_reserved = 10;
    dt.reserved_steps = {{1, 50}, {1, 20}, {3, 70}, {3, 30}, {3, 40}, {5, 15}};
    for (int plot_w : {1, 2, 3, 6}) {
      for (EventWindow w : {W(-1, 5), W(1, 4), W(3, 3)}) {
        CAPTURE(plot_w);
        const ChartColumns got = ComputeChartColumns(snap, dt, w, plot_w);
        const ChartColumns want = ReferenceColumns(snap, dt, w, plot_w);
        CHECK(got.contiguous);
        CHECK(got.live == want.live);
        CHECK(got.live_last == want.live_last);
        CHECK(got.res == want.res);
        CHECK(got.res_last == want.res_last);
        CHECK(got.figures.peak_event == ComputeWindow(dt, w).peak_event);
      }
    }
  }

  TEST_CASE("a window's peak is the first event reaching its maximum, or the start state") {
    Snapshot snap = TraceSnapshot(
        {Ev(Action::kAlloc, 0x1000, 100), Ev(Action::kAlloc, 0x2000, 50),
         Ev(Action::kFreeCompleted, 0x2000, 50), Ev(Action::kAlloc, 0x3000, 50),
         Ev(Action::kFreeCompleted, 0x1000, 100), Ev(Action::kFreeCompleted, 0x3000, 50)});
    auto tl = analysis::ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    const DeviceTimeline& dt = tl->devices[0];
    REQUIRE(dt.LiveCurve() == std::vector<int64_t>{100, 150, 100, 150, 50, 0});
    CHECK(ComputeWindow(dt, W(-1, 5)).peak_event == Point(1));
    CHECK(ComputeWindow(dt, W(2, 5)).peak_event == Point(3));
    CHECK(ComputeWindow(dt, W(4, 5)).peak_event == Point(4));
    CHECK(ComputeWindow(dt, W(-1, -1)).peak_event == Point(-1));
    CHECK(ComputeWindow(dt, W(5, 5)).peak_event == Point(5));
  }
}

}  // namespace
}  // namespace memsnap::report
