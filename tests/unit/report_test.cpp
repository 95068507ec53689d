// The HTML report's analyses (timeline_lod.h, alloc_states.h, report_analysis.h) on hand-made
// traces and fixtures, the page's data and its packing, and invariants on every corpus file.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "analysis/allocator/frag_layout.h"
#include "memsnap/analysis/allocator/alloc_states.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/timeline_lod.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/html_report.h"
#include "test_util.h"
#include "timeline_points.h"
#include "trace_builders.h"

namespace memsnap {
namespace {

using analysis::DeviceTimeline;
using analysis::LodBucket;
using analysis::TimelineLod;
using testing::Ev;
using testing::LoadFixture;
using testing::ParseOrFail;
using testing::PythonPickle;

Snapshot Basic() { return ParseOrFail(PythonPickle("load_json('report_basic.json')")); }

analysis::Timeline TimelineOf(const Snapshot& snap) {
  auto tl = analysis::ReconstructTimeline(snap);
  REQUIRE_MESSAGE(tl.ok(), tl.status().message());
  return std::move(*tl);
}

const analysis::LodTile* FindTile(const TimelineLod& lod, int level, int64_t tile) {
  for (const auto& t : lod.tiles) {
    if (t.level == level && t.tile == tile) return &t;
  }
  return nullptr;
}

/// At every stored bucket: the band lifetimes live at its sample are counted and sum to at most
/// the bucket's live bytes (the grey band is never negative), and min <= last <= max.
void CheckLodInvariants(const DeviceTimeline& dt, const TimelineLod& lod, const std::string& name) {
  INFO(name);
  int64_t bad_order = 0, bad_bands = 0, uncounted = 0;
  for (const auto& t : lod.tiles) {
    const size_t n = t.buckets.size();
    // Σ sizes of the bands live at each bucket's sample, by a difference array over buckets
    // (samples never decrease within a tile).
    std::vector<int64_t> diff(n + 1, 0);
    for (uint32_t id : t.bands) {
      uint32_t lt_index = lod.bands[id].lifetime;
      const auto& lt = dt.blocks[lt_index];
      if (!lod.counted.counted[lt_index]) ++uncounted;
      int64_t alloc = lt.live_from().index();
      int64_t free = lt.free_completed_event.index().value_or(INT64_MAX);
      auto before = [](const LodBucket& b, int64_t e) { return b.sample_event.index() < e; };
      auto first = std::lower_bound(t.buckets.begin(), t.buckets.end(), alloc, before);
      auto last = std::lower_bound(first, t.buckets.end(), free, before);
      diff[first - t.buckets.begin()] += lt.requested_size;
      diff[last - t.buckets.begin()] -= lt.requested_size;
    }
    int64_t bands = 0;
    for (size_t i = 0; i < n; ++i) {
      const LodBucket& b = t.buckets[i];
      bands += diff[i];
      if (b.live_min < 0 || b.live_min > b.live_last || b.live_last > b.live_max ||
          b.reserved_last > b.reserved_max ||
          (i > 0 && b.sample_event < t.buckets[i - 1].sample_event)) {
        ++bad_order;
      }
      if (bands > b.live_max) ++bad_bands;
    }
  }
  CHECK(bad_order == 0);
  CHECK(bad_bands == 0);
  CHECK(uncounted == 0);
}

/// Replays the stream's edits from each stored state to the next: every stored state and its
/// figures must come out (issue 36 §3: the page shows the state after any event exactly).
void CheckStreamReplays(const analysis::AllocatorStates& st, const std::string& name) {
  INFO(name);
  REQUIRE(st.stream.has_value());
  const analysis::StateStream& s = *st.stream;
  REQUIRE(s.first_edit.size() == s.figures.size() + 1);
  REQUIRE(!st.states.empty());
  std::map<uint64_t, analysis::StateSegment> now;
  for (uint32_t id : st.states[0].segments) now[st.segments[id].address] = st.segments[id];
  int64_t e = st.states[0].event.index();
  int64_t mismatched = 0, bad_figures = 0;
  for (const analysis::AllocatorState& state : st.states) {
    for (; e < state.event.index(); ++e) {
      const size_t ev = static_cast<size_t>(e + 1);
      for (uint32_t k = s.first_edit[ev]; k < s.first_edit[ev + 1]; ++k) {
        const analysis::StateEdit& edit = s.edits[k];
        const uint64_t a = edit.segment.address;
        if (edit.op == analysis::StateEdit::Op::kRemove) {
          CHECK(now.erase(a) == 1);
        } else if (edit.op == analysis::StateEdit::Op::kSet) {
          now[a] = edit.segment;
        } else {
          REQUIRE(now.count(a) == 1);
          auto& spans = now[a].spans;
          REQUIRE(edit.keep + edit.erase <= spans.size());
          spans.erase(spans.begin() + edit.keep, spans.begin() + edit.keep + edit.erase);
          spans.insert(spans.begin() + edit.keep, edit.segment.spans.begin(),
                       edit.segment.spans.end());
        }
      }
    }
    std::map<uint64_t, analysis::StateSegment> want;
    for (uint32_t id : state.segments) want[st.segments[id].address] = st.segments[id];
    if (now != want) ++mismatched;
    if (!state.event.is_start()) {
      const analysis::FragFigures& f = s.figures[static_cast<size_t>(state.event.index())];
      const analysis::FragFigures& g = state.sample.figures;
      if (f.segments != g.segments || f.blocks != g.blocks ||
          f.reserved_bytes != g.reserved_bytes || f.allocated_bytes != g.allocated_bytes ||
          f.pending_free_bytes != g.pending_free_bytes ||
          f.largest_free_bytes != g.largest_free_bytes || f.stranded_bytes != g.stranded_bytes ||
          f.releasable_bytes != g.releasable_bytes || f.free_segments != g.free_segments) {
        ++bad_figures;
      }
    }
  }
  CHECK(mismatched == 0);
  CHECK(bad_figures == 0);
}

/// SampleCountedCategories against the per-event curve it stands for (SampleCategoryCurve of
/// BuildCategoryCurve), at every `stride`-th point of the device and at its last.
void CheckCountedCategories(const Snapshot& snap, const DeviceTimeline& dt,
                            const std::vector<bool>& counted, uint32_t stride,
                            const std::string& name) {
  INFO(name);
  auto context = analysis::GroupContext::Create(snap, analysis::GroupOptions{});
  REQUIRE_MESSAGE(context.ok(), context.status().message());
  std::vector<analysis::TimelinePoint> points{analysis::TimelinePoint::Start()};
  for (uint32_t e = 0; e < dt.num_events; e += stride) {
    points.push_back(analysis::TimelinePoint::After(e));
  }
  if (dt.num_events > 0 && points.back() != analysis::TimelinePoint::After(dt.num_events - 1)) {
    points.push_back(analysis::TimelinePoint::After(dt.num_events - 1));
  }
  const std::vector<analysis::CategoryBytes> want =
      analysis::SampleCategoryCurve(analysis::BuildCategoryCurve(**context, dt, counted), points);
  const std::vector<analysis::CategoryBytes> got =
      analysis::SampleCountedCategories(**context, dt, counted, points);
  REQUIRE(got.size() == want.size());
  size_t differ = 0;
  for (size_t k = 0; k < got.size(); ++k) differ += got[k] != want[k] ? 1 : 0;
  CHECK(differ == 0);
}

/// A trace whose final state holds nothing, yet it allocates A (100 B) and B (30 B) and never
/// frees them (their frees were lost), frees C (50 B) that it never allocated while nothing was
/// reserved, and allocates and frees D (20 B): the drawn curve leaves A, B and C out.
Snapshot UnplaceableLifetimes() {
  return testing::TraceSnapshot({
      Ev(Action::kAlloc, 0xA00, 100),
      Ev(Action::kFreeCompleted, 0xC00, 50),
      Ev(Action::kAlloc, 0xD00, 20),
      Ev(Action::kFreeCompleted, 0xD00, 20),
      Ev(Action::kAlloc, 0xB00, 30),
  });
}

TEST_SUITE("report") {
  TEST_CASE("the level-of-detail curve keeps each bucket's lowest, highest and last state") {
    Snapshot snap = Basic();
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    REQUIRE(dt.num_events == 9);
    analysis::LodOptions options;
    options.columns = 3;
    TimelineLod lod = analysis::BuildTimelineLod(snap, dt, options);
    // Times 1000..1070: x 0..70, level 0 has 3 buckets [0,24) [24,47) [47,70].
    CHECK(lod.has_time);
    CHECK(lod.t0_us == 1000);
    CHECK(lod.x_span == 70);
    const analysis::LodTile* top = FindTile(lod, 0, 0);
    REQUIRE(top != nullptr);
    REQUIRE(top->buckets.size() == 3);
    const LodBucket& b0 = top->buckets[0];  // the initial state and events 0..2
    CHECK(b0.live_min == 0);
    CHECK(b0.live_max == 12194304);
    CHECK(b0.sample_event.index() == 2);
    CHECK(b0.last_event.index() == 2);
    CHECK(b0.reserved_max == 20971520);
    const LodBucket& b2 = top->buckets[2];  // events 6..8: the activation is freed at 7
    CHECK(b2.live_max == 20583912);
    CHECK(b2.sample_event.index() == 6);
    CHECK(b2.live_last == 16389608);
    CHECK(b2.live_min == 16389608);
    CHECK(b2.reserved_last == 23068672);
    // Level 1 (12 buckets) holds one event per bucket: nothing finer exists, nothing was reduced.
    CHECK(lod.levels == 2);
    CHECK(lod.complete_levels == 2);
    CHECK(lod.finest_events_per_bucket == 1);
    CHECK(!lod.reduced);
    CHECK(report::LodReducedNote(lod).empty());
    // Tile 3 of level 1 (buckets 9..11) starts in an empty bucket: it carries the state after
    // event 6 so that it can be drawn alone.
    const analysis::LodTile* t3 = FindTile(lod, 1, 3);
    REQUIRE(t3 != nullptr);
    REQUIRE(t3->buckets.size() == 3);
    CHECK(t3->buckets[0].index == 9);
    CHECK(t3->buckets[0].last_event.index() == 6);
    CHECK(t3->buckets[0].live_max == 20583912);
    CHECK(t3->buckets[1].sample_event.index() == 7);
    // The peak and the x of events, as the buckets place them.
    CHECK(lod.peak_bytes == 20583912);
    CHECK(lod.peak_event == analysis::TimelinePoint::After(5));
    CHECK(lod.EventX(snap, dt, analysis::TimelinePoint::After(5)) == 40.0);
    CheckLodInvariants(dt, lod, "report_basic");
  }

  TEST_CASE("bands are chosen per tile and stacked in allocation order") {
    Snapshot snap = Basic();
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    analysis::LodOptions options;
    options.columns = 3;
    options.bands = 2;
    options.cover_points = 0;  // only the per-tile choice (the browser test checks the covering)
    TimelineLod lod = analysis::BuildTimelineLod(snap, dt, options);
    const analysis::LodTile* top = FindTile(lod, 0, 0);
    REQUIRE(top->bands.size() == 2);
    // Allocation order across the whole table: weights (1), activation (2), optimizer (4),
    // attention (5); a tile keeps the largest by bytes x duration, then by bytes.
    for (size_t i = 1; i < lod.bands.size(); ++i) {
      CHECK(dt.blocks[lod.bands[i - 1].lifetime].live_from() <
            dt.blocks[lod.bands[i].lifetime].live_from());
    }
    // weights: 8 MB, long; attention: largest
    CHECK(dt.blocks[lod.bands[top->bands[0]].lifetime].alloc_event == analysis::LocalEvent(1));
    CHECK(dt.blocks[lod.bands[top->bands[1]].lifetime].alloc_event == analysis::LocalEvent(5));
    CHECK(lod.bands[top->bands[1]].alloc_x == 40.0);
    CHECK(lod.bands[top->bands[1]].free_x == 70.0);  // live at the end
    CheckLodInvariants(dt, lod, "two bands");
  }

  TEST_CASE("the byte budget keeps whole levels, then refines the tiles around the peak") {
    // 40,000 allocations of 1 KiB at times 0..39,999 us, freed at once; one 1 MiB spike at 30,000.
    std::vector<TraceEvent> ev;
    for (int i = 0; i < 40000; ++i) {
      TraceEvent a = Ev(Action::kAlloc, 0x1000000 + 4096 * i, 1024);
      a.time_us = i;
      TraceEvent f = Ev(Action::kFreeCompleted, 0x1000000 + 4096 * i, 1024);
      f.time_us = i;
      ev.push_back(a);
      if (i == 30000) {
        TraceEvent s = Ev(Action::kAlloc, 0x900000000, 1 << 20);
        s.time_us = i;
        ev.push_back(s);
        TraceEvent sf = Ev(Action::kFreeCompleted, 0x900000000, 1 << 20);
        sf.time_us = i;
        ev.push_back(sf);
      }
      ev.push_back(f);
    }
    Snapshot snap = testing::TraceSnapshot(ev);
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    analysis::LodOptions options;
    options.columns = 100;
    options.max_buckets = 1000;  // 100 + 400 buckets fit whole, then single tiles
    TimelineLod lod = analysis::BuildTimelineLod(snap, dt, options);
    CHECK(lod.complete_levels == 2);
    CHECK(lod.levels > 2);
    CHECK(lod.peak_event == dt.peak_event);
    CHECK(lod.peak_bytes == (1 << 20) + 1024);
    // The deepest tile stored holds the peak, and the page says what was left out.
    int64_t buckets = 0;
    const analysis::LodTile* deepest = nullptr;
    for (const auto& t : lod.tiles) {
      buckets += static_cast<int64_t>(t.buckets.size());
      if (deepest == nullptr || t.level > deepest->level) deepest = &t;
    }
    CHECK(buckets <= options.max_buckets);
    bool holds_peak = false;
    for (const auto& t : lod.tiles) {
      if (t.level != deepest->level) continue;
      for (const LodBucket& b : t.buckets) holds_peak |= b.live_max == lod.peak_bytes;
    }
    CHECK(holds_peak);
    CHECK(lod.reduced);
    CHECK(report::LodReducedNote(lod).find("around the peaks") != std::string::npos);
    CheckLodInvariants(dt, lod, "budget");
  }

  TEST_CASE(
      "blocks the trace leaves live that the final state does not hold count to the end, so the "
      "curve never falls below what the trace shows") {
    // A and B are never freed and the final state holds neither: live to the end (130 B beyond
    // the empty final state). C is freed without an alloc and no segment is recorded: live from
    // the start.
    Snapshot snap = UnplaceableLifetimes();
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    CHECK(dt.open_without_block == 2);
    CHECK(dt.beyond_end_requested_bytes == 130);
    CHECK(dt.unreconciled_requested_bytes == 0);
    CHECK(dt.start_requested == 50);
    analysis::CountedLifetimes c = analysis::CountLifetimes(dt);
    CHECK(c.timeline_min_live == 50);
    int64_t start = -1;
    std::vector<int64_t> curve = analysis::CountedCurve(dt, c, start);
    CHECK(start == 50);
    CHECK(curve == std::vector<int64_t>{150, 100, 120, 100, 130});
    TimelineLod lod = analysis::BuildTimelineLod(snap, dt);
    CHECK(lod.peak_bytes == 150);
    CHECK(lod.peak_bytes == dt.peak_requested);
    CHECK(lod.end_live == 130);
    CheckLodInvariants(dt, lod, "inconsistent");
  }

  TEST_CASE(
      "a block allocated over a live one and never seen again counts to the end on the page as in "
      "the timeline") {
    // B is allocated over A (A's free was never recorded: the same event ends A and begins B);
    // the final state holds neither B nor C: both count to the end.
    Snapshot snap =
        testing::TraceSnapshot({Ev(Action::kAlloc, 0xA00, 100), Ev(Action::kAlloc, 0xA00, 70),
                                Ev(Action::kAlloc, 0xC00, 10)});
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    CHECK(dt.beyond_end_requested_bytes == 80);
    TimelineLod lod = analysis::BuildTimelineLod(snap, dt);
    CHECK(lod.end_live == 80);
    CHECK(lod.peak_bytes == 100);
    CheckLodInvariants(dt, lod, "alloc over a live block");
  }

  TEST_CASE("the allocator states' live peak is the page's, which is the timeline's") {
    Snapshot snap = UnplaceableLifetimes();
    auto a = analysis::AnalyzeForReport(snap, {});
    REQUIRE_MESSAGE(a.ok(), a.status().message());
    const analysis::DeviceReportAnalysis& d = a->devices[0];
    CHECK(d.lod.peak_event == a->timeline.devices[d.timeline_index].peak_event);
    std::vector<analysis::TimelinePoint> labelled;
    for (const analysis::AllocatorState& st : d.states.states) {
      if (std::find(st.labels.begin(), st.labels.end(), "peak live") != st.labels.end()) {
        labelled.push_back(st.event);
      }
    }
    CHECK(labelled == std::vector<analysis::TimelinePoint>{d.lod.peak_event});
  }

  TEST_CASE(
      "memory by kind adds up to the drawn curve, never negative, on a trace that cannot be "
      "reconciled") {
    Snapshot snap = UnplaceableLifetimes();
    analysis::ReportAnalysisOptions options;
    auto a = analysis::AnalyzeForReport(snap, options);
    REQUIRE_MESSAGE(a.ok(), a.status().message());
    const analysis::DeviceReportAnalysis& d = a->devices[0];
    REQUIRE(d.categories.has_value());
    REQUIRE(a->timeline.devices[d.timeline_index].beyond_end_requested_bytes > 0);
    auto total = [](const analysis::CategoryBytes& b) {
      int64_t t = 0;
      for (int64_t v : b) {
        CHECK(v >= 0);
        t += v;
      }
      return t;
    };
    CHECK(total(d.categories->peak) == d.lod.peak_bytes);
    CheckCountedCategories(snap, a->timeline.devices[d.timeline_index], d.lod.counted.counted, 1,
                           "every point");
    // Each column is sampled at its bucket's sample event: the kinds add up to the curve there.
    const DeviceTimeline& dt = a->timeline.devices[d.timeline_index];
    int64_t start = 0;
    std::vector<int64_t> curve = analysis::CountedCurve(dt, d.lod.counted, start);
    // A column followed by columns without events also gives the state it carries on (its last
    // event) at the next column, as the curve draws it.
    auto at = [&](analysis::TimelinePoint p) { return p.is_start() ? start : curve[p.index()]; };
    size_t k = 0;
    for (const analysis::LodTile& t : d.lod.tiles) {
      if (t.level != 0) continue;
      for (size_t i = 0; i < t.buckets.size(); ++i) {
        const LodBucket& b = t.buckets[i];
        REQUIRE(k < d.categories->columns.size());
        CHECK(d.categories->column[k] == b.index);
        CHECK(total(d.categories->columns[k++]) == at(b.sample_event));
        const int64_t next = i + 1 < t.buckets.size() ? t.buckets[i + 1].index : d.lod.columns;
        if (next > b.index + 1) {
          REQUIRE(k < d.categories->columns.size());
          CHECK(d.categories->column[k] == b.index + 1);
          CHECK(total(d.categories->columns[k++]) == at(b.last_event));
        }
      }
    }
    CHECK(k == d.categories->columns.size());
    // The finer samples of the deeper tiles: never negative, never above the highest bucket of
    // their group.
    for (const analysis::ReportCategories::Tile& t : d.categories->tiles) {
      for (const analysis::CategoryBytes& c : t.columns) CHECK(total(c) <= d.lod.peak_bytes);
    }
  }

  TEST_CASE("x is each event's latest time so far, whether the times ever go back or not") {
    // 10,000 events (past two of EventX's checkpoints), times every 10 us; in the second trace
    // every 7th event is stamped 25 us early, so x is the running maximum, not the time.
    for (bool back : {false, true}) {
      INFO(std::string(back ? "times go back" : "times sorted"));
      std::vector<TraceEvent> events;
      for (int i = 0; i < 10000; ++i) {
        TraceEvent e = Ev(i % 2 == 0 ? Action::kAlloc : Action::kFreeCompleted,
                          0x1000 + 0x100 * static_cast<uint64_t>(i / 2 % 50), 512 + i % 3);
        e.time_us = 1000 + 10 * int64_t{i} - (back && i % 7 == 3 ? 25 : 0);
        events.push_back(e);
      }
      Snapshot snap = testing::TraceSnapshot(events);
      analysis::Timeline tl = TimelineOf(snap);
      const DeviceTimeline& dt = tl.devices[0];
      TimelineLod lod = analysis::BuildTimelineLod(snap, dt);
      REQUIRE(lod.has_time);
      CHECK(lod.t0_us == 1000);
      std::vector<int64_t> want(events.size());
      int64_t run = 0;
      for (size_t i = 0; i < events.size(); ++i)
        want[i] = run = std::max(run, events[i].time_us - 1000);
      CHECK(lod.x_span == want.back());
      CHECK(lod.x_span == (back ? 10 * 9998 : 10 * 9999));  // the last event is stamped early
      int64_t wrong = 0;
      for (uint32_t e = 0; e < events.size(); ++e) {
        wrong +=
            lod.EventX(snap, dt, analysis::TimelinePoint::After(e)) != static_cast<double>(want[e]);
      }
      CHECK(wrong == 0);
      REQUIRE(!lod.bands.empty());
      for (const analysis::LodBand& band : lod.bands) {
        const auto& lt = dt.blocks[band.lifetime];
        CHECK(band.alloc_x == static_cast<double>(want[*lt.alloc_event.index()]));
        CHECK(band.free_x == static_cast<double>(want[*lt.free_completed_event.index()]));
      }
      CheckLodInvariants(dt, lod, back ? "back" : "sorted");
    }
  }

  TEST_CASE("a consistent trace's drawn curve is the timeline's live curve") {
    Snapshot snap = LoadFixture("frag_trace.json");
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    CHECK(dt.beyond_end_requested_bytes == 0);
    CHECK(dt.unplaced_frees == 0);
    analysis::CountedLifetimes c = analysis::CountLifetimes(dt);
    int64_t start = 0;
    std::vector<int64_t> curve = analysis::CountedCurve(dt, c, start);
    CHECK(start == testing::LiveAt(dt, -1));
    for (int64_t e = 0; e < static_cast<int64_t>(dt.num_events); ++e)
      CHECK(curve[e] == testing::LiveAt(dt, e));
  }

  TEST_CASE("the allocator's state at the peak is frag's, with free memory split as it counts it") {
    Snapshot snap = LoadFixture("frag_trace.json");
    analysis::Timeline tl = TimelineOf(snap);
    const DeviceTimeline& dt = tl.devices[0];
    analysis::AllocatorStatesOptions options;
    options.samples = 5;
    options.moments = {{analysis::TimelinePoint::After(2), "mine"}};
    analysis::AllocatorStates st = analysis::ReconstructAllocatorStates(snap, dt, options);
    analysis::FragOptions fo;
    fo.at = analysis::FragMoment::kPeakReserved;
    auto frag = analysis::AnalyzeFragmentation(snap, fo);
    REQUIRE(frag.ok());
    CHECK(st.peak_reserved_event.index() == frag->devices[0].event_index);
    bool found_peak = false, found_mine = false;
    for (const analysis::AllocatorState& s : st.states) {
      INFO("event " << s.event.index());
      auto has = [&](const std::string& l) {
        return std::find(s.labels.begin(), s.labels.end(), l) != s.labels.end();
      };
      found_mine |= s.event == analysis::TimelinePoint::After(2) && has("mine");
      if (has("peak reserved")) {
        found_peak = true;
        CHECK(s.event.index() == frag->devices[0].event_index);
        CHECK(s.sample.figures.segments == frag->totals.segments);
        CHECK(s.sample.figures.free_bytes == frag->totals.free_bytes);
        CHECK(s.sample.figures.largest_free_bytes == frag->totals.largest_free_bytes);
        CHECK(s.sample.figures.stranded_bytes == frag->totals.stranded_bytes);
      }
      // The spans add up to the figures: allocated, free = releasable + stranded parts; a
      // segment holding no allocation is released whole, its pending frees too.
      int64_t by_kind[4] = {0, 0, 0, 0}, reserved = 0, pending_released = 0;
      for (uint32_t id : s.segments) {
        const analysis::StateSegment& seg = st.segments[id];
        reserved += seg.size;
        int64_t covered = 0, allocated = 0, pending = 0;
        for (const analysis::StateSpan& p : seg.spans) {
          by_kind[static_cast<int>(p.kind)] += p.size;
          covered += p.size;
          if (p.kind == analysis::SpanKind::kAllocated) {
            CHECK(p.lifetime >= 0);
            allocated += p.size;
          }
          if (p.kind == analysis::SpanKind::kPendingFree) pending += p.size;
        }
        CHECK(covered == seg.size);
        if (allocated == 0 && !seg.is_expandable) pending_released += pending;
      }
      CHECK(reserved == s.sample.figures.reserved_bytes);
      CHECK(by_kind[0] == s.sample.figures.allocated_bytes);
      CHECK(by_kind[1] == s.sample.figures.pending_free_bytes);
      CHECK(by_kind[2] + by_kind[3] == s.sample.figures.free_bytes);
      CHECK(by_kind[3] + pending_released == s.sample.figures.releasable_bytes);
    }
    CHECK(found_peak);
    CHECK(found_mine);
  }

  TEST_CASE("allocator states thinned by the budget say how many were kept, in the page's words") {
    Snapshot snap = LoadFixture("frag_trace.json");
    analysis::Timeline tl = TimelineOf(snap);
    analysis::AllocatorStatesOptions options;
    options.samples = 8;
    const analysis::AllocatorStates all =
        analysis::ReconstructAllocatorStates(snap, tl.devices[0], options);
    CHECK(all.samples == all.even_moments);
    CHECK(report::StatesReducedNote(all).empty());
    options.max_spans = 1;  // no room: the evenly spaced states are thinned to the fewest
    const analysis::AllocatorStates thinned =
        analysis::ReconstructAllocatorStates(snap, tl.devices[0], options);
    CHECK(thinned.even_moments == all.even_moments);
    REQUIRE(thinned.samples < thinned.even_moments);
    CHECK(report::StatesReducedNote(thinned) ==
          absl::StrCat("The allocator's state is kept at ", thinned.samples,
                       " evenly spaced moments (of ", thinned.even_moments,
                       ") and at the marked ones, to keep the page small."));
  }

  TEST_CASE("the allocator states find the allocated peak in their one rewind, as given peaks do") {
    // Before issue 37 the peaks took a rewind of their own (FindStatePeaks) before the states'.
    // A fixture, and a teardown whose every undone free makes a new candidate: too many to keep
    // each one's layout, so the peak is captured by a second rewind to it (unless another moment
    // captures it: the caller's).
    constexpr int64_t kMiB = 1 << 20;
    constexpr int kSegments = 200;
    std::vector<TraceEvent> teardown;
    auto base = [](int i) { return 0x7f0000000000 + static_cast<uint64_t>(i) * 4 * kMiB; };
    for (int i = 0; i < kSegments; ++i) {
      teardown.push_back(Ev(Action::kSegmentAlloc, base(i), 4 * kMiB));
      teardown.push_back(Ev(Action::kAlloc, base(i), 2 * kMiB));
    }
    // A segment held for a moment: the reserved peak, after the allocated one.
    teardown.push_back(Ev(Action::kSegmentAlloc, base(kSegments), 4 * kMiB));
    teardown.push_back(Ev(Action::kSegmentFree, base(kSegments), 4 * kMiB));
    for (int i = 0; i < kSegments; ++i) {
      teardown.push_back(Ev(Action::kFreeRequested, base(i), 2 * kMiB));
      teardown.push_back(Ev(Action::kFreeCompleted, base(i), 2 * kMiB));
      teardown.push_back(Ev(Action::kSegmentFree, base(i), 4 * kMiB));
    }
    const Snapshot snaps[] = {LoadFixture("frag_trace.json"),
                              testing::TraceSnapshot(std::move(teardown))};
    for (const Snapshot& snap : snaps) {
      analysis::Timeline tl = TimelineOf(snap);
      const DeviceTimeline& dt = tl.devices[0];
      const int64_t n = static_cast<int64_t>(dt.num_events);
      const std::pair<int64_t, int64_t> peaks = analysis::FindStatePeaks(snap, dt);
      const bool is_teardown = n == 5 * kSegments + 2;
      if (is_teardown) {
        CHECK(peaks.first == 2 * kSegments);
        CHECK(peaks.second == 2 * kSegments - 1);
      }
      // A caller's moment at the allocated peak shares its state and comes after its label.
      for (int with_moment = 0; with_moment < 2; ++with_moment) {
        analysis::AllocatorStatesOptions options;
        options.samples = 5;
        if (with_moment == 1) {
          if (peaks.second < 0) continue;
          options.moments = {
              {analysis::TimelinePoint::After(static_cast<uint32_t>(peaks.second)), "mine"}};
        }
        analysis::AllocatorStatesOptions given = options;
        given.peaks = peaks;
        const analysis::AllocatorStates want =
            analysis::ReconstructAllocatorStates(snap, dt, given);
        const int64_t before = analysis::frag_internal::UndoneEvents();
        const analysis::AllocatorStates got =
            analysis::ReconstructAllocatorStates(snap, dt, options);
        const int64_t undone = analysis::frag_internal::UndoneEvents() - before;
        INFO("events " << n << ", moment " << with_moment);
        CHECK(undone == (is_teardown && with_moment == 0 ? n + (n - 1 - peaks.second) : n));
        CHECK(got.peak_reserved_event == want.peak_reserved_event);
        CHECK(got.peak_allocated_event.index() == peaks.second);
        CHECK(got.segments == want.segments);
        REQUIRE(got.states.size() == want.states.size());
        for (size_t k = 0; k < got.states.size(); ++k) {
          INFO("state " << k);
          CHECK(got.states[k].event == want.states[k].event);
          CHECK(got.states[k].labels == want.states[k].labels);
          CHECK(got.states[k].segments == want.states[k].segments);
          CHECK(got.states[k].sample.figures.allocated_bytes ==
                want.states[k].sample.figures.allocated_bytes);
        }
        CHECK(got.samples == want.samples);
        CHECK(got.even_moments == want.even_moments);
      }
    }
  }

  TEST_CASE("the states around a labelled moment are kept event by event, apart from the samples") {
    Snapshot snap = LoadFixture("frag_trace.json");
    analysis::Timeline tl = TimelineOf(snap);
    analysis::AllocatorStatesOptions options;
    options.samples = 2;  // before the first event and the end
    options.moments = {{analysis::TimelinePoint::After(4), "mine"}};
    options.around = 2;
    analysis::AllocatorStates st =
        analysis::ReconstructAllocatorStates(snap, tl.devices[0], options);
    std::map<int64_t, bool> step;  // event -> a step state
    for (const analysis::AllocatorState& s : st.states) step[s.event.index()] = s.step;
    for (int64_t e : {2, 3, 5, 6}) {
      INFO("event " << e);
      REQUIRE(step.count(e));
      CHECK(step[e]);
    }
    CHECK_FALSE(step[4]);   // the labelled moment itself
    CHECK_FALSE(step[-1]);  // an evenly spaced one
    CHECK(st.samples == 2);
    options.around = 0;
    analysis::AllocatorStates without =
        analysis::ReconstructAllocatorStates(snap, tl.devices[0], options);
    CHECK(without.states.size() + 4 <= st.states.size());
  }

  TEST_CASE("every event's change carries each stored allocator state to the next exactly") {
    constexpr int64_t kMiB = 1 << 20;
    // Segments, blocks split and merged, pending frees, and an expandable segment mapped,
    // grown, partly unmapped.
    const uint64_t b = 0x7f0000000000, x = 0x7f1000000000;
    std::vector<TraceEvent> ev = {Ev(Action::kSegmentAlloc, b, 20 * kMiB),
                                  Ev(Action::kAlloc, b, 4 * kMiB),
                                  Ev(Action::kAlloc, b + 4 * kMiB, 4 * kMiB),
                                  Ev(Action::kAlloc, b + 8 * kMiB, 2 * kMiB),
                                  Ev(Action::kFreeRequested, b + 4 * kMiB, 4 * kMiB),
                                  Ev(Action::kFreeCompleted, b + 4 * kMiB, 4 * kMiB),
                                  Ev(Action::kSegmentMap, x, 40 * kMiB),
                                  Ev(Action::kAlloc, x, 30 * kMiB),
                                  Ev(Action::kSegmentMap, x + 40 * kMiB, 20 * kMiB),
                                  Ev(Action::kAlloc, x + 30 * kMiB, 24 * kMiB),
                                  Ev(Action::kFreeRequested, x, 30 * kMiB),
                                  Ev(Action::kFreeCompleted, x, 30 * kMiB),
                                  Ev(Action::kSegmentUnmap, x, 20 * kMiB),
                                  Ev(Action::kFreeRequested, b, 4 * kMiB),
                                  Ev(Action::kFreeCompleted, b, 4 * kMiB),
                                  Ev(Action::kFreeRequested, b + 8 * kMiB, 2 * kMiB),
                                  Ev(Action::kFreeCompleted, b + 8 * kMiB, 2 * kMiB),
                                  Ev(Action::kSegmentFree, b, 20 * kMiB)};
    const Snapshot snaps[] = {LoadFixture("frag_trace.json"), testing::TraceSnapshot(ev)};
    for (const Snapshot& snap : snaps) {
      analysis::Timeline tl = TimelineOf(snap);
      const DeviceTimeline& dt = tl.devices[0];
      analysis::AllocatorStatesOptions options;
      options.samples = 1000;  // every event a stored state: each edit is checked
      options.stream_max_events = dt.num_events;
      CheckStreamReplays(analysis::ReconstructAllocatorStates(snap, dt, options),
                         absl::StrCat(dt.num_events, " events"));
      options.stream_max_events = dt.num_events - 1;  // over the budget: none
      CHECK_FALSE(analysis::ReconstructAllocatorStates(snap, dt, options).stream.has_value());
    }
  }

  TEST_CASE("the summary built in two steps is the one built at once, with its bands last") {
    std::vector<TraceEvent> events;  // times going back now and then: an x axis of its own
    for (int i = 0; i < 3000; ++i) {
      TraceEvent e = Ev(i % 2 == 0 ? Action::kAlloc : Action::kFreeCompleted,
                        0x1000 + 0x100 * static_cast<uint64_t>(i / 2 % 40), 512 + i % 5);
      e.time_us = 1000 + 10 * int64_t{i} - (i % 7 == 3 ? 25 : 0);
      events.push_back(e);
    }
    const Snapshot snaps[] = {LoadFixture("frag_trace.json"), UnplaceableLifetimes(),
                              testing::TraceSnapshot(events)};
    for (const Snapshot& snap : snaps) {
      analysis::Timeline tl = TimelineOf(snap);
      const DeviceTimeline& dt = tl.devices[0];
      analysis::LodOptions options;
      options.columns = 16;
      options.bands = 8;
      const TimelineLod once = analysis::BuildTimelineLod(snap, dt, options);
      analysis::TimelineLodBuild build(snap, dt, options);
      CHECK(build.lod().bands.empty());
      CHECK(build.lod().tiles.size() == once.tiles.size());
      CHECK(build.lod().peak_event == once.peak_event);
      // The bands read nothing of the timeline's curve: the report drops it once built.
      build.ChooseBands();
      const TimelineLod twice = std::move(build).Take();
      REQUIRE(twice.bands.size() == once.bands.size());
      for (size_t i = 0; i < once.bands.size(); ++i) {
        CHECK(twice.bands[i].lifetime == once.bands[i].lifetime);
        CHECK(twice.bands[i].alloc_x == once.bands[i].alloc_x);
        CHECK(twice.bands[i].free_x == once.bands[i].free_x);
      }
      REQUIRE(twice.tiles.size() == once.tiles.size());
      for (size_t t = 0; t < once.tiles.size(); ++t)
        CHECK(twice.tiles[t].bands == once.tiles[t].bands);
      CHECK(!once.bands.empty());
    }
  }

  TEST_CASE("the states' table of frees names each free event's lifetime, last free or not") {
    // Lifetimes freed twice (requested, then completed), once (requested only), before the trace
    // (a free without an alloc), and ended by an alloc over a live block (a free never seen).
    constexpr int64_t kMiB = 1 << 20;
    const uint64_t b = 0x7f0000000000;
    std::vector<TraceEvent> ev = {Ev(Action::kSegmentAlloc, b, 20 * kMiB),
                                  Ev(Action::kAlloc, b, 4 * kMiB),
                                  Ev(Action::kFreeRequested, b, 4 * kMiB),
                                  Ev(Action::kFreeCompleted, b, 4 * kMiB),
                                  Ev(Action::kAlloc, b + 4 * kMiB, 2 * kMiB),
                                  Ev(Action::kFreeRequested, b + 4 * kMiB, 2 * kMiB),
                                  Ev(Action::kFreeCompleted, b + 8 * kMiB, 1 * kMiB),
                                  Ev(Action::kAlloc, b + 12 * kMiB, 1 * kMiB),
                                  Ev(Action::kAlloc, b + 12 * kMiB, 1 * kMiB),
                                  Ev(Action::kFreeCompleted, b + 12 * kMiB, 1 * kMiB)};
    const Snapshot snaps[] = {LoadFixture("frag_trace.json"), testing::TraceSnapshot(ev)};
    for (const Snapshot& snap : snaps) {
      analysis::Timeline tl = TimelineOf(snap);
      const DeviceTimeline& dt = tl.devices[0];
      // What a table by event says: each lifetime's completed free, then its requested one.
      std::vector<int32_t> by_event(dt.num_events, -1);
      for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
        for (auto f : {dt.blocks[i].free_completed_event.index(),
                       dt.blocks[i].free_requested_event.index()}) {
          if (f) by_event[*f] = static_cast<int32_t>(i);
        }
      }
      CHECK(std::count(by_event.begin(), by_event.end(), -1) < dt.num_events);
      // Asked backwards, as the rewind asks; last frees first, then every event.
      analysis::FreedLifetimes lasts(dt);
      for (uint32_t e = dt.num_events; e-- > 0;) {
        const analysis::BlockLifetime* b_of = by_event[e] >= 0 ? &dt.blocks[by_event[e]] : nullptr;
        if (b_of != nullptr &&
            (b_of->free_completed_event.index() == e ||
             (!b_of->free_completed_event.index() && b_of->free_requested_event.index() == e))) {
          CHECK_MESSAGE(lasts.At(e) == by_event[e], "event ", e);
        }
      }
      analysis::FreedLifetimes all(dt);
      for (uint32_t e = dt.num_events; e-- > 0;)
        CHECK_MESSAGE(all.At(e) == by_event[e], "event ", e);
    }
  }

  TEST_CASE("frag --at event:N describes the same state as the report's moment there") {
    Snapshot snap = LoadFixture("frag_trace.json");
    analysis::Timeline tl = TimelineOf(snap);
    analysis::AllocatorStatesOptions options;
    options.samples = 4;
    analysis::AllocatorStates st =
        analysis::ReconstructAllocatorStates(snap, tl.devices[0], options);
    for (const analysis::AllocatorState& s : st.states) {
      // The state before the first event (event -1) has no --at form: event:-1 is the last event.
      if (s.event.is_start()) continue;
      analysis::FragOptions fo;
      fo.at = analysis::FragMoment::kMoment;
      fo.moment = {analysis::Moment::Kind::kEvent, s.event.index()};
      auto frag = analysis::AnalyzeFragmentation(snap, fo);
      REQUIRE(frag.ok());
      INFO("event " << s.event.index());
      if (s.sample.figures.segments == 0) {  // before the first segment: nothing to describe
        CHECK(frag->totals.segments == 0);
        continue;
      }
      REQUIRE(frag->devices.size() == 1);
      CHECK(frag->devices[0].event_index == s.event.index());
      CHECK(frag->totals.reserved_bytes == s.sample.figures.reserved_bytes);
      CHECK(frag->totals.free_bytes == s.sample.figures.free_bytes);
      CHECK(frag->totals.releasable_bytes == s.sample.figures.releasable_bytes);
      CHECK(frag->totals.largest_free_bytes == s.sample.figures.largest_free_bytes);
    }
  }

  TEST_CASE("report --top 0 keeps every site row, as 0 means all for every --top") {
    Snapshot snap = Basic();
    analysis::ReportAnalysisOptions all, one;
    all.top_sites = 0;
    one.top_sites = 1;
    auto a = analysis::AnalyzeForReport(snap, all);
    auto b = analysis::AnalyzeForReport(snap, one);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->alloc_sites.rows.size() > 2);
    for (const analysis::GroupRow& r : a->alloc_sites.rows)
      CHECK(r.key.find(" others]") == std::string::npos);
    CHECK(b->alloc_sites.rows.size() == 2);  // one row and the "[N others]" row
  }

  TEST_CASE("the report data has the peak, the sites alive there and the allocator states") {
    Snapshot snap = Basic();
    auto a = analysis::AnalyzeForReport(snap, {});
    REQUIRE(a.ok());
    nlohmann::ordered_json j = report::BuildReportData(snap, *a);
    CHECK(j["mode"] == "single");
    REQUIRE(j["devices"].size() == 2);
    const auto& d0 = j["devices"][0];
    CHECK(d0["peak"]["bytes"] == 20583912);
    CHECK(d0["peak"]["x"] == 40.0);
    CHECK(d0["bands"]["n"] == 4);
    REQUIRE(d0["ooms"].size() == 1);
    CHECK(d0["ooms"][0]["x"] == 70.0);
    // The OOM's answer, as `memsnap oom` opens with it; none on the device without an OOM.
    REQUIRE(d0["oom_answer"].size() >= 2);
    CHECK(d0["oom_answer"][0]["label"] == "answer");
    CHECK(d0["oom_answer"][1]["label"] == "fix");
    CHECK(j["devices"][1]["oom_answer"].empty());
    // Memory by kind at the peak adds up to the peak; a device without a trace has none.
    REQUIRE(d0["categories"].is_object());
    int64_t at_peak = 0;
    for (const auto& [name, c] : d0["categories"]["series"].items()) {
      at_peak += c["peak"].get<int64_t>();
    }
    CHECK(at_peak == 20583912);
    CHECK(d0["categories"]["n"].get<int64_t>() > 0);
    CHECK(j["devices"][1]["categories"].is_null());
    CHECK(j["peak_sites"]["rows"][0].contains("site"));
    CHECK(j["peak_sites"]["rows"][0].contains("category"));
    CHECK(!j["devices"][1].contains("tiles"));  // no trace: its final state only
    CHECK(j["devices"][1]["states"]["moments"].size() == 1);
    // Labelled moments: the peaks, the OOM and the end.
    std::set<std::string> labels;
    for (const auto& m : d0["states"]["moments"]) {
      if (m.contains("labels")) {
        for (const auto& l : m["labels"]) labels.insert(l.get<std::string>());
      }
    }
    CHECK(labels ==
          std::set<std::string>{"end", "OOM", "peak allocated", "peak live", "peak reserved"});
    // Device 0 at its peak (4 blocks) plus device 1 at its end (one ghost block).
    CHECK(j["peak_sites"]["total_bytes"] == 20583912 + 512);
    CHECK(j["peak_sites"]["rows"][0]["bytes"] == 8388608);
    CHECK(j["alloc_sites"]["total_count"] == 5);
    CHECK(j["replay"].is_null());
  }

  TEST_CASE("the diff data has both timelines and the sites before, after and delta") {
    Snapshot before = ParseOrFail(PythonPickle("load_json('summary_basic.json')"), "before");
    Snapshot after = Basic();
    auto a = analysis::AnalyzeDiffForReport(before, after, {});
    REQUIRE(a.ok());
    nlohmann::ordered_json j = report::BuildDiffData(before, after, *a, 25);
    CHECK(j["mode"] == "diff");
    CHECK(j["moment"] == "peak");
    CHECK(j["before"]["devices"][0].contains("tiles"));
    CHECK(j["after"]["devices"][0]["peak"]["bytes"] == 20583912);
    REQUIRE(!j["sites"].empty());
    int64_t delta = 0;
    for (const auto& s : j["sites"])
      delta += s["after"].get<int64_t>() - s["before"].get<int64_t>();
    CHECK(delta == j["live_bytes"][1].get<int64_t>() - j["live_bytes"][0].get<int64_t>());
  }

  TEST_CASE("--replay adds the simulated reserved curves, the recorded settings first") {
    Snapshot snap = Basic();
    analysis::ReportAnalysisOptions options;
    options.replay_confs = {"expandable_segments:True"};
    auto a = analysis::AnalyzeForReport(snap, options);
    REQUIRE(a.ok());
    nlohmann::ordered_json j = report::BuildReportData(snap, *a);
    const auto& rp = j["replay"];
    REQUIRE(rp["runs"].size() == 2);
    CHECK(rp["runs"][0]["conf"] == "recorded");
    CHECK(rp["runs"][1]["conf"] == "expandable_segments:True");
    for (const auto& run : rp["runs"]) {
      REQUIRE(run.contains("curve"));
      CHECK(run["curve"]["x"].size() == run["curve"]["reserved"].size());
      CHECK(run["peak_reserved"].get<int64_t>() >= 20583912);  // at least the live peak
    }
    options.replay_confs = {"max_split_size_mb:abc"};
    auto bad = analysis::AnalyzeForReport(snap, options);
    REQUIRE(!bad.ok());
    CHECK(std::string(bad.status().message()).find("--replay max_split_size_mb:abc: ") == 0);
  }

  TEST_CASE("every band carries its site's label and its category, as top names them") {
    Snapshot snap = LoadFixture("attribution_training.json");
    auto a = analysis::AnalyzeForReport(snap, {});
    REQUIRE(a.ok());
    REQUIRE(a->devices.size() == 1);
    const analysis::DeviceReportAnalysis& d = a->devices[0];
    const analysis::DeviceTimeline& dt = a->timeline.devices[d.timeline_index];
    REQUIRE(d.band_site.size() == d.lod.bands.size());
    REQUIRE(d.band_category.size() == d.lod.bands.size());
    // The forward pass's linear: 4 MiB, kept for backward (attribution_fixture.py, H).
    int linears = 0;
    for (size_t k = 0; k < d.lod.bands.size(); ++k) {
      const analysis::BlockLifetime& b = dt.blocks[d.lod.bands[k].lifetime];
      REQUIRE(d.band_site[k] < a->band_sites.size());
      const std::string& label = a->band_sites[d.band_site[k]];
      CHECK(label.find("CachingAllocator") == std::string::npos);
      if (label == "linear \u2190 model/net.py:15 forward") {
        ++linears;
        CHECK(b.requested_size == 4 << 20);
        CHECK(d.band_category[k] == analysis::Category::kActivation);
      }
    }
    CHECK(linears == 2);  // one per step
    // Labels are stored once each; the page's frames say which are the user's.
    std::set<std::string> distinct(a->band_sites.begin(), a->band_sites.end());
    CHECK(distinct.size() == a->band_sites.size());
    nlohmann::ordered_json j = report::BuildReportData(snap, *a);
    CHECK(j["band_sites"].size() == a->band_sites.size());
    CHECK(j["category_names"][3] == "activation");
    const std::string kinds = j["frame_kinds"].get<std::string>();
    REQUIRE(kinds.size() == j["frames"].size());
    for (size_t i = 0; i < kinds.size(); ++i) {
      const std::string frame = j["frames"][i].get<std::string>();
      INFO(frame);
      if (frame.find("/home/alice/proj/") == 0) CHECK(kinds[i] == '0');
      if (frame.find("site-packages/") != std::string::npos) CHECK(kinds[i] == '1');
      if (frame.find("CUDACachingAllocator") != std::string::npos) CHECK(kinds[i] == '3');
      if (frame.find("MmBackward0::apply") != std::string::npos) CHECK(kinds[i] == '2');
    }
  }

  TEST_CASE("packed arrays are zigzag varints in base64") {
    // 0 -> 00, -1 -> 01, 1 -> 02, 300 -> 600 = d8 04, -2^40 -> 2^41-1 = ff ff ff ff ff 3f.
    CHECK(report::PackVarints({0, -1, 1, 300}) == "AAEC2AQ=");
    CHECK(report::PackVarints({-(int64_t{1} << 40)}) == "//////8/");
    CHECK(report::PackVarints({}).empty());
  }

  TEST_CASE("the page inlines its library and escapes text that could close its script element") {
    Snapshot snap = Basic();
    auto a = analysis::AnalyzeForReport(snap, {});
    REQUIRE(a.ok());
    std::ostringstream page;
    report::WriteHtmlPage(report::BuildReportData(snap, *a), page);
    std::string html = page.str();
    // The frame "attn</script><b>" is in the data, escaped; only the page's three script
    // elements (data, chart library, page script) close.
    size_t closes = 0;
    for (size_t p = html.find("</script>"); p != std::string::npos;
         p = html.find("</script>", p + 1)) {
      ++closes;
    }
    CHECK(closes == 3);
    CHECK(html.find("attn\\u003c/script>\\u003cb>") != std::string::npos);
    // Self-contained: nothing is fetched (URLs appear only in the library's notices).
    CHECK(html.find("<script src") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find("url(http") == std::string::npos);
    // The chart library's licence travels with it.
    CHECK(html.find("Permission is hereby granted, free of charge") != std::string::npos);
    CHECK(html.find("uPlot 1.") != std::string::npos);
  }

  TEST_CASE("report invariants hold on every corpus file" * doctest::test_suite("corpus")) {
    auto files = testing::CorpusFiles();
    for (const std::string& path : files) {
      auto snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      analysis::Timeline tl = TimelineOf(*snap);
      for (const DeviceTimeline& dt : tl.devices) {
        if (dt.num_events == 0) continue;
        TimelineLod lod = analysis::BuildTimelineLod(*snap, dt);
        CheckLodInvariants(dt, lod, path);
        // Real traces are consistent, and the drawn peak is the timeline's in any case.
        CHECK_MESSAGE(dt.beyond_end_requested_bytes == 0, path);
        CHECK_MESSAGE(dt.unplaced_frees == 0, path);
        CHECK_MESSAGE(lod.peak_bytes == dt.peak_requested, path);
        // Memory by kind sampled without the per-event curve is the curve's (issue 37).
        CheckCountedCategories(*snap, dt, lod.counted.counted,
                               std::max<uint32_t>(1, dt.num_events / 3000), path);
        // The page's event-by-event state replays to every stored state (issue 36 §3).
        analysis::AllocatorStatesOptions options;
        options.stream_max_events = dt.num_events;
        CheckStreamReplays(analysis::ReconstructAllocatorStates(*snap, dt, options),
                           absl::StrCat(path, " device ", dt.device));
      }
    }
  }
}

}  // namespace
}  // namespace memsnap
