// The check shared by the timeline tests: a timeline that keeps fewer lifetimes
// (KeepLifetimes::kLiveAt, kNone) must agree with the one that keeps them all.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "doctest/doctest.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "timeline_points.h"

namespace memsnap::testing {

/// The live curve rebuilt from a full timeline's lifetimes (an oracle independent of how the pass
/// computes the curve): each lifetime adds its requested bytes at its alloc (or at the start) and
/// takes them back at its free_completed; what the trace cannot explain is in the start.
inline std::vector<int64_t> CurveFromLifetimes(const analysis::DeviceTimeline& dt) {
  std::vector<int64_t> delta(dt.num_events, 0);
  for (const analysis::BlockLifetime& lt : dt.blocks) {
    if (std::optional<uint32_t> a = lt.alloc_event.index()) delta[*a] += lt.requested_size;
    if (std::optional<uint32_t> f = lt.free_completed_event.index()) delta[*f] -= lt.requested_size;
  }
  int64_t v = dt.start_requested;
  for (int64_t& d : delta) d = (v += d);
  return delta;
}

/// Reconstructs `snap` three ways and checks that curves, peaks, totals and counters agree, and
/// that kLiveAt keeps exactly the lifetimes of kAll that are live at `at`, in the same order.
inline void CheckKeepModesAgree(const Snapshot& snap, const analysis::Moment& at) {
  using analysis::KeepLifetimes;
  analysis::TimelineOptions all_opts, live_opts, none_opts;
  live_opts.keep = KeepLifetimes::kLiveAt;
  live_opts.moment = at;
  none_opts.keep = KeepLifetimes::kNone;
  analysis::TimelineOptions bare_opts = live_opts;  // what `top` asks for: no curve either
  bare_opts.curve = false;
  auto all = analysis::ReconstructTimeline(snap, all_opts);
  auto live = analysis::ReconstructTimeline(snap, live_opts);
  auto none = analysis::ReconstructTimeline(snap, none_opts);
  auto bare = analysis::ReconstructTimeline(snap, bare_opts);
  REQUIRE(all.ok());
  REQUIRE(live.ok());
  REQUIRE(none.ok());
  REQUIRE(bare.ok());
  REQUIRE(live->devices.size() == all->devices.size());
  REQUIRE(none->devices.size() == all->devices.size());
  REQUIRE(bare->devices.size() == all->devices.size());
  for (size_t d = 0; d < all->devices.size(); ++d) {
    const analysis::DeviceTimeline& a = all->devices[d];
    CAPTURE(a.device);
    const analysis::TimelinePoint e = analysis::ResolveMoment(snap, a, at);
    CHECK(a.LiveCurve() == CurveFromLifetimes(a));
    bool sorted = a.has_time;
    for (uint32_t i = 1; i < a.num_events; ++i) {
      sorted &=
          snap.events[a.event_begin + i - 1].time_us <= snap.events[a.event_begin + i].time_us;
    }
    CHECK(a.time_sorted == sorted);
    std::vector<analysis::BlockLifetime> expected;
    for (uint32_t i : analysis::LiveBlocksAt(a, e)) expected.push_back(a.blocks[i]);
    CHECK(live->devices[d].kept_event == e);
    CHECK(live->devices[d].blocks == expected);
    CHECK(live->devices[d].kept_live_bytes == LiveAt(a, e.index()));
    CHECK(none->devices[d].blocks.empty());
    const analysis::DeviceTimeline& b = bare->devices[d];
    CHECK(b.live_net.empty());
    CHECK(b.blocks == expected);
    for (analysis::TimelinePoint m : {analysis::TimelinePoint::Start(), e, a.peak_event,
                                      analysis::TimelinePoint::End(a.num_events)}) {
      CHECK(b.FindLive(m) == LiveAt(a, m.index()));
    }
    // Without the curve there is no curve to read, and every other point is refused, not
    // answered with a neighbour's value; with it every point is held.
    CHECK(b.live_curve().has_value() == (a.num_events == 0));
    REQUIRE(a.live_curve().has_value());
    for (int64_t m = -1; m < static_cast<int64_t>(a.num_events); ++m) {
      const analysis::TimelinePoint p = analysis::TimelinePoint::FromIndex(m);
      const int64_t want = a.start_requested + (m < 0 ? 0 : a.live_net[m]);
      CHECK(a.live_curve()->At(p) == want);
      CHECK(a.FindLive(p) == want);
      bool landmark = p.is_start() || p == e || p == a.peak_event ||
                      p == analysis::TimelinePoint::End(a.num_events);
      for (const analysis::DeviceTimeline::OomMoment& o : a.oom_moments) {
        landmark |= p == analysis::TimelinePoint::After(o.event);  // the oom entries are held
      }
      CHECK(b.FindLive(p) == (landmark ? std::optional<int64_t>(want) : std::nullopt));
    }
    CHECK_FALSE(a.FindLive(analysis::TimelinePoint::After(a.num_events)).has_value());
    CHECK(live->devices[d].LiveCurve() == a.LiveCurve());
    CHECK(none->devices[d].LiveCurve() == a.LiveCurve());
    for (const analysis::DeviceTimeline* o :
         {&std::as_const(live->devices[d]), &std::as_const(none->devices[d]), &b}) {
      CHECK(o->has_time == a.has_time);
      CHECK(o->time_sorted == a.time_sorted);
      CHECK(o->peak_requested == a.peak_requested);
      CHECK(o->peak_event == a.peak_event);
      CHECK(o->peak_reserved == a.peak_reserved);
      CHECK(o->start_requested == a.start_requested);
      CHECK(o->start_rounded == a.start_rounded);
      CHECK(o->end_rounded == a.end_rounded);
      CHECK(o->unreconciled_rounded_bytes == a.unreconciled_rounded_bytes);
      CHECK(o->frees_without_alloc == a.frees_without_alloc);
      CHECK(o->allocs_without_free == a.allocs_without_free);
      CHECK(o->open_without_block == a.open_without_block);
      CHECK(o->segments.size() == a.segments.size());
      for (int c = 0; c < 4; ++c) {
        CHECK(o->by_class[c].count == a.by_class[c].count);
        CHECK(o->by_class[c].bytes == a.by_class[c].bytes);
      }
    }
  }
}

}  // namespace memsnap::testing
