// Known-answer tests of the frag pass on hand-made fixtures (testdata/frag_*.json) and invariants
// on every corpus file.
#include "memsnap/analysis/allocator/frag.h"

#include <doctest/doctest.h>

#include "analysis/allocator/frag_layout.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/frag_render.h"
#include "memsnap/sim/config.h"
#include "test_util.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using testing::LoadFixture;

using testing::kMiB;

FragReport Analyze(const Snapshot& snap, FragOptions options = {}) {
  auto r = AnalyzeFragmentation(snap, options);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *r;
}

void CheckInvariants(const FragReport& r, const std::string& name) {
  FragFigures sum;
  for (const SegmentFrag& s : r.segments) {
    const FragFigures& f = s.figures;
    INFO(name << " segment " << s.address);
    CHECK(f.allocated_bytes + f.pending_free_bytes + f.free_bytes == f.reserved_bytes);
    CHECK(f.allocated_bytes + f.stranded_bytes + f.releasable_bytes == f.reserved_bytes);
    CHECK(f.stranded_bytes >= 0);
    CHECK(f.largest_free_bytes <= f.free_bytes);
    CHECK(s.external_fragmentation >= 0.0);
    CHECK(s.external_fragmentation <= 1.0);
    sum += f;
  }
  INFO(name);
  CHECK(sum.reserved_bytes == r.totals.reserved_bytes);
  CHECK(sum.allocated_bytes == r.totals.allocated_bytes);
  CHECK(sum.free_bytes == r.totals.free_bytes);
  CHECK(sum.pending_free_bytes == r.totals.pending_free_bytes);
  CHECK(sum.stranded_bytes == r.totals.stranded_bytes);
  CHECK(sum.releasable_bytes == r.totals.releasable_bytes);
  CHECK(sum.internal_waste_bytes == r.totals.internal_waste_bytes);
  CHECK(sum.largest_free_bytes == r.totals.largest_free_bytes);
  int64_t group_free = 0, hist_bytes = 0, hist_blocks = 0;
  for (const auto& g : r.groups) group_free += g.free_bytes;
  for (const auto& b : r.histogram) {
    hist_bytes += b.bytes;
    hist_blocks += b.blocks;
  }
  CHECK(group_free == r.totals.free_bytes);
  CHECK(hist_bytes == r.totals.free_bytes);
  CHECK(hist_blocks == r.totals.free_blocks);
}

TEST_SUITE("frag") {
  TEST_CASE("frag computes every figure of a hand-made fragmentation pattern") {
    Snapshot snap = LoadFixture("frag_basic.json");
    FragReport r = Analyze(snap);
    const FragFigures& t = r.totals;
    CHECK(t.segments == 4);
    CHECK(t.blocks == 10);
    CHECK(t.reserved_bytes == 82 * kMiB);
    CHECK(t.allocated_bytes == 36 * kMiB + 512);
    CHECK(t.pending_free_bytes == kMiB);
    CHECK(t.free_bytes == 44 * kMiB + kMiB - 512);
    CHECK(t.requested_bytes == 38748736);
    CHECK(t.internal_waste_bytes == 100 + 412 + (kMiB - 1000000));
    CHECK(t.free_blocks == 5);
    CHECK(t.largest_free_bytes == 20 * kMiB);
    CHECK(t.stranded_bytes == 24 * kMiB + (kMiB - 512) + kMiB);
    CHECK(t.releasable_bytes == 20 * kMiB);
    CHECK(t.free_segments == 1);
    CHECK(r.external_fragmentation ==
          doctest::Approx(1.0 - static_cast<double>(kMiB - 512 + 30 * kMiB) /
                                    static_cast<double>(45 * kMiB - 512)));
    REQUIRE(r.groups.size() == 3);
    CHECK(r.groups[1].is_small);
    CHECK(r.groups[1].pending_free_bytes == kMiB);
    CHECK(r.groups[1].external_fragmentation == 0.0);
    CHECK(r.groups[0].stream == 0);
    CHECK(r.groups[0].free_bytes == 34 * kMiB);
    CHECK(r.groups[0].largest_free_bytes == 20 * kMiB);
    CHECK(r.groups[0].external_fragmentation == doctest::Approx(1.0 - 20.0 / 34.0));
    CHECK(r.groups[2].stream == 7);
    CHECK(r.groups[2].external_fragmentation == 0.0);
    REQUIRE(r.fits.size() == 2);
    CHECK(r.fits[0].small_pool_bytes == kMiB - 512);
    CHECK(r.fits[0].large_pool_bytes == 20 * kMiB);
    CHECK(r.fits[1].stream == 7);
    CHECK(r.fits[1].largest_bytes == 10 * kMiB);
    REQUIRE(r.histogram.size() == 4);
    CHECK(r.histogram[0].log2 == 19);
    CHECK(r.histogram[2].log2 == 23);
    CHECK(r.histogram[2].blocks == 2);
    CHECK(r.histogram[2].bytes == 18 * kMiB);
    // Most stranded first (14, 10, ~2 MiB, then the entirely free segment), then largest.
    REQUIRE(r.segments.size() == 4);
    CHECK(r.segments[0].address == 0x7f0000000000);
    CHECK(r.segments[1].figures.reserved_bytes == 40 * kMiB);
    CHECK(r.segments[2].is_small);
    CHECK(r.segments[3].address == 0x7f0010000000);
    CHECK(r.peaks.empty());
    CheckInvariants(r, "frag_basic.json");
  }

  TEST_CASE("what fits respects max_split_size and power-of-two rounding") {
    Snapshot snap = LoadFixture("frag_basic.json");
    // Stream 0's free large blocks are 6, 8 and 20 MiB. With 2 divisions in [16, 32) MiB, no
    // request rounds to a size in (16, 20] MiB, so the 20 MiB block can only serve 16 MiB, which
    // is below max_split_size while the block is oversize: a miss. The 8 MiB block serves 8 MiB.
    snap.settings.max_split_size = 20 * kMiB;
    snap.settings.roundup_power2_divisions[4] = 2;
    FragReport r = Analyze(snap);
    REQUIRE(r.fits.size() == 2);
    CHECK(r.fits[0].large_pool_bytes == 8 * kMiB);
    CHECK(r.fits[0].small_pool_bytes == kMiB - 512);
    // Without the oversize rule the 20 MiB block serves 16 MiB.
    snap.settings.max_split_size = -1;
    CHECK(Analyze(snap).fits[0].large_pool_bytes == 16 * kMiB);
  }

  TEST_CASE("frag releases whole free pages of expandable segments and strands the rest") {
    FragReport r = Analyze(LoadFixture("frag_expandable.json"));
    REQUIRE(r.segments.size() == 2);
    const FragFigures& large = r.segments[0].figures;
    CHECK(large.free_bytes == 45 * kMiB);
    CHECK(large.releasable_bytes == 20 * kMiB);  // the one 20 MiB page in [10, 55) MiB
    CHECK(large.stranded_bytes == 25 * kMiB);
    const FragFigures& small = r.segments[1].figures;
    CHECK(small.releasable_bytes == 4 * kMiB);  // pages [2, 6) MiB; [1, 2) MiB is partial
    CHECK(small.stranded_bytes == kMiB);
    CHECK(r.totals.free_segments == 0);
    CheckInvariants(r, "frag_expandable.json");
  }

  TEST_CASE("frag reconstructs the layout at the peak by undoing the trace") {
    Snapshot snap = LoadFixture("frag_trace.json");
    FragOptions options;
    options.at = FragMoment::kPeakReserved;
    options.timeline_samples = 14;
    FragReport r = Analyze(snap, options);
    REQUIRE(r.peaks.size() == 1);
    const FragSample& peak = r.peaks[0].peak_reserved;
    CHECK(peak.event_index == 7);
    CHECK(peak.figures.reserved_bytes == 60 * kMiB);
    CHECK(peak.figures.allocated_bytes == 46 * kMiB);
    CHECK(peak.figures.free_bytes == 14 * kMiB);
    CHECK(peak.figures.largest_free_bytes == 10 * kMiB);
    CHECK(peak.figures.stranded_bytes == 14 * kMiB);
    CHECK(peak.external_fragmentation == doctest::Approx(1.0 - 10.0 / 14.0));
    CHECK(r.peaks[0].peak_allocated.event_index == 7);
    CHECK(r.peaks[0].peak_overhead == doctest::Approx(1.0 - 46.0 / 60.0));
    // The detailed report describes the peak.
    CHECK(r.totals.reserved_bytes == 60 * kMiB);
    REQUIRE(r.devices.size() == 1);
    CHECK(r.devices[0].reconstructed);
    CHECK(r.devices[0].event_index == 7);
    // Every state: before the first event (nothing), then one sample per event.
    REQUIRE(r.timeline.size() == 14);
    CHECK(r.timeline[0].event_index == -1);
    CHECK(r.timeline[0].figures.reserved_bytes == 0);
    CHECK(r.timeline[1].figures.reserved_bytes == 20 * kMiB);
    CHECK(r.timeline[13].event_index == 12);
    CHECK(r.timeline[13].figures.allocated_bytes == 2 * kMiB);
    CHECK(report::FragWarnings(r).empty());
    CheckInvariants(r, "frag_trace.json at peak");
  }

  TEST_CASE("frag keeps pre-window blocks live and warns about events it cannot undo") {
    FragOptions options;
    options.at = FragMoment::kPeakAllocated;
    FragReport r = Analyze(LoadFixture("frag_ring.json"), options);
    REQUIRE(r.peaks.size() == 1);
    CHECK(r.peaks[0].peak_allocated.event_index == -1);
    CHECK(r.peaks[0].peak_allocated.figures.allocated_bytes == 8 * kMiB);
    REQUIRE(r.rewind.size() == 1);
    CHECK(r.rewind[0].pre_window_blocks == 1);
    CHECK(r.rewind[0].problems.alloc_without_block == 1);
    const std::vector<std::string> warnings = report::FragWarnings(r);
    REQUIRE(warnings.size() == 2);
    CHECK(warnings[0] ==
          "device 0: the trace begins mid-run (1 block, 8.0 MiB, is freed in it but was "
          "allocated before it): peaks and the timeline cover the trace window only");
    CHECK(warnings[1] ==
          "device 0: the trace could not be undone consistently (1 alloc(s) of a block not "
          "live); states reconstructed before those events are approximate");
  }

  TEST_CASE("frag rewinds a device's trace once, finding the allocated peak on the way") {
    // Before issue 37 a first rewind found the allocated peak and a second took the figures.
    Snapshot snap = LoadFixture("frag_trace.json");
    REQUIRE(snap.traces.size() == 1);
    const int64_t n = snap.traces[0].size();
    const int64_t want_peak = frag_internal::FindAllocatedPeak(snap, snap.traces[0]);
    for (FragMoment at : {FragMoment::kPeakReserved, FragMoment::kPeakAllocated}) {
      FragOptions options;
      options.at = at;
      const int64_t before = frag_internal::UndoneEvents();
      FragReport r = Analyze(snap, options);
      CHECK(frag_internal::UndoneEvents() - before == n);
      REQUIRE(r.peaks.size() == 1);
      CHECK(r.peaks[0].peak_allocated.event_index == want_peak);
      if (at == FragMoment::kPeakAllocated) {
        REQUIRE(r.devices.size() == 1);
        CHECK(r.devices[0].event_index == want_peak);
      }
    }
  }

  TEST_CASE("a teardown's many allocated-peak candidates find the peak by a second rewind") {
    // Going back through a teardown, every undone free raises the allocated bytes: each state is
    // a candidate, too many to keep each one's layout, so the peak's figures come from a second
    // rewind, to the peak only, and are those of the first moment with the most allocated.
    using testing::Ev;
    constexpr int kSegments = 200;
    std::vector<TraceEvent> events;
    auto base = [](int i) { return 0x7f0000000000 + static_cast<uint64_t>(i) * 2 * kMiB; };
    for (int i = 0; i < kSegments; ++i) {
      events.push_back(Ev(Action::kSegmentAlloc, base(i), 2 * kMiB));
      events.push_back(Ev(Action::kAlloc, base(i), kMiB));
    }
    for (int i = 0; i < kSegments; ++i) {
      events.push_back(Ev(Action::kFreeRequested, base(i), kMiB));
      events.push_back(Ev(Action::kFreeCompleted, base(i), kMiB));
      events.push_back(Ev(Action::kSegmentFree, base(i), 2 * kMiB));
    }
    Snapshot snap = testing::TraceSnapshot(std::move(events));
    const int64_t n = snap.traces[0].size();
    const int64_t peak = 2 * kSegments - 1;  // after the last alloc
    CHECK(frag_internal::FindAllocatedPeak(snap, snap.traces[0]) == peak);
    FragOptions options;
    options.at = FragMoment::kPeakAllocated;
    const int64_t before = frag_internal::UndoneEvents();
    FragReport r = Analyze(snap, options);
    CHECK(frag_internal::UndoneEvents() - before == n + (n - 1 - peak));
    REQUIRE(r.peaks.size() == 1);
    CHECK(r.peaks[0].peak_allocated.event_index == peak);
    CHECK(r.peaks[0].peak_allocated.figures.allocated_bytes == kSegments * kMiB);
    CHECK(r.peaks[0].peak_allocated.figures.reserved_bytes == 2 * kSegments * kMiB);
    REQUIRE(r.devices.size() == 1);
    CHECK(r.devices[0].event_index == peak);
    CHECK(r.devices[0].figures.allocated_bytes == kSegments * kMiB);
  }

  TEST_CASE("frag --at peak on a file without a trace is an error naming the file") {
    Snapshot snap = LoadFixture("frag_basic.json");
    snap.source.path = "basic.pickle";
    FragOptions options;
    options.at = FragMoment::kPeakReserved;
    auto r = AnalyzeFragmentation(snap, options);
    REQUIRE(!r.ok());
    CHECK(std::string(r.status().message()) ==
          "basic.pickle: --at peak needs a trace (device_traces); this file has none, so only "
          "--at end can be reported (the moments: end, peak, peak-reserved, peak-allocated, "
          "event:N, a time)");
  }

  TEST_CASE("frag --at without a trace echoes the moment as the user wrote it") {
    Snapshot snap = LoadFixture("frag_basic.json");
    snap.source.path = "basic.pickle";
    FragOptions options;
    options.at = FragMoment::kPeakAllocated;
    options.at_text = "peak-allocated";
    auto r = AnalyzeFragmentation(snap, options);
    REQUIRE(!r.ok());
    const std::string m(r.status().message());
    CHECK(m.rfind("basic.pickle: --at peak-allocated needs a trace", 0) == 0);
    CHECK(m.find("end, peak, peak-reserved, peak-allocated, event:N, a time") != std::string::npos);
  }

  TEST_CASE(
      "the fragmentation verdict is none, small, moderate or large at 5% and 15%, from 128 MiB") {
    const int64_t g = int64_t{1} << 30;  // shares of 10 GiB
    CHECK(JudgeFragmentation(0, 10 * g) == FragVerdict::kNone);
    CHECK(JudgeFragmentation(g, 0) == FragVerdict::kNone);
    CHECK(JudgeFragmentation(g / 100, 10 * g) == FragVerdict::kSmall);
    CHECK(JudgeFragmentation(10 * g * 49 / 1000, 10 * g) == FragVerdict::kSmall);
    CHECK(JudgeFragmentation(10 * g * 5 / 100, 10 * g) == FragVerdict::kModerate);
    CHECK(JudgeFragmentation(10 * g * 149 / 1000, 10 * g) == FragVerdict::kModerate);
    CHECK(JudgeFragmentation(10 * g * 15 / 100, 10 * g) == FragVerdict::kLarge);
    // Below 128 MiB stranded is small whatever its share: 9 MiB of a 22 MiB toy run.
    CHECK(JudgeFragmentation(9 * kMiB, 22 * kMiB) == FragVerdict::kSmall);
    CHECK(JudgeFragmentation(128 * kMiB, 256 * kMiB) == FragVerdict::kLarge);
    CHECK(FragVerdictName(FragVerdict::kLarge) == "large");
  }

  TEST_CASE("the answer is at the reserved peak and names the sites that pin stranded memory") {
    // Two 320 MiB segments, each with a 32 MiB block of model.py:31 around a 288 MiB hole, then
    // a 480 MiB segment for a 480 MiB block: the peak is the end, 1120 MiB reserved, 576 MiB
    // stranded (51.4%).
    Snapshot snap = LoadFixture("frag_fix.json");
    FragReport r = Analyze(snap);
    REQUIRE(r.costs.size() == 1);
    const FragCost& c = r.costs[0];
    CHECK(c.at_peak);
    CHECK(c.event_index == 14);
    CHECK(c.figures.reserved_bytes == 1120 * kMiB);
    CHECK(c.figures.stranded_bytes == 576 * kMiB);
    CHECK(c.figures.releasable_bytes == 0);
    CHECK(c.verdict == FragVerdict::kLarge);
    // The 480 MiB block fills its segment: it pins nothing.
    REQUIRE(c.pins.size() == 1);
    CHECK(c.pins[0].site == "model.py:31 forward");
    CHECK(c.pins[0].category == Category::kActivation);
    CHECK_FALSE(c.pins[0].synthetic);  // it names a line of the program
    CHECK(c.pins[0].blocks == 2);
    CHECK(c.pins[0].allocated_bytes == 64 * kMiB);
    CHECK(c.pins[0].segments == 2);
    CHECK(c.pins[0].stranded_bytes == 576 * kMiB);
    // pins = 0: the sites are not named.
    FragOptions none;
    none.pins = 0;
    CHECK(Analyze(snap, none).costs[0].pins.empty());
  }

  TEST_CASE("a replay proves that expandable segments lower the memory a fragmenting trace needs") {
    using testing::Ev;
    // Two 20 MiB segments, each left with a 2 MiB block and an 18 MiB hole, then a 30 MiB
    // request: no hole holds it, so the recorded settings cudaMalloc a 30 MiB segment (70 MiB).
    // One expandable segment maps 20 MiB pages: 40 MiB for the four blocks, then the 30 MiB
    // block grows it from the last block's end (22 MiB) to 52 MiB, three pages: 60 MiB.
    const uint64_t a = 0x7f0000000000, b = 0x7f0004000000, c = 0x7f0008000000;
    Snapshot snap = testing::TraceSnapshot({
        Ev(Action::kAlloc, a, 2 * kMiB),
        Ev(Action::kAlloc, a + 2 * kMiB, 18 * kMiB),
        Ev(Action::kAlloc, b, 2 * kMiB),
        Ev(Action::kFreeRequested, a + 2 * kMiB, 18 * kMiB),
        Ev(Action::kFreeCompleted, a + 2 * kMiB, 18 * kMiB),
        Ev(Action::kAlloc, c, 30 * kMiB),
    });
    auto fixes = FindFragFixes(snap);
    REQUIRE_MESSAGE(fixes.ok(), fixes.status().message());
    REQUIRE(fixes->size() == 1);
    const FragFix& f = (*fixes)[0];
    REQUIRE(f.settings.size() >= 3);
    CHECK(f.settings[0].conf == "recorded");
    CHECK(f.settings[0].peak_reserved == 70 * kMiB);
    CHECK(f.settings[1].conf == "expandable_segments:True");
    CHECK(f.settings[1].peak_reserved == 60 * kMiB);
    // The smallest memory each fits on: nothing less than those peaks, since the hole stays
    // pinned by its 2 MiB neighbour whatever the pressure.
    CHECK(f.settings[0].fits_on == 70 * kMiB);
    CHECK(f.settings[1].fits_on == 60 * kMiB);
    CHECK(f.live_peak == 34 * kMiB);  // 2 + 2 + 30 after the 18 MiB block is freed
    // roundup_power2_divisions:4 needs less still: the 18 MiB request rounds to 20 MiB and fills
    // a segment of its own, which the allocator's retry releases for the 30 MiB one under
    // pressure (its peak on no limit, 72 MiB, is the highest: the figure a fix must not use).
    REQUIRE(f.best >= 0);
    const FragSetting& best = f.settings[static_cast<size_t>(f.best)];
    CHECK(best.conf == "roundup_power2_divisions:4");
    CHECK(best.peak_reserved == 72 * kMiB);
    CHECK(best.fits_on < 60 * kMiB);
    CHECK(best.fits_on > f.live_peak);
    // No block reaches 128 MiB: that setting is the recorded run, not replayed again. The
    // candidates are those of every fit answer (oom's), garbage collection under a fraction too.
    bool gc_tried = false;
    for (const FragSetting& s : f.settings) {
      CAPTURE(s.conf);
      gc_tried |= s.conf.find("garbage_collection") != std::string::npos;
      if (s.conf == "max_split_size_mb:128") CHECK(s.same_as == "recorded");
    }
    CHECK(gc_tried);
    // Given only a setting that changes nothing, none is offered.
    FragFixOptions own;
    own.candidates = {"max_split_size_mb:512"};
    auto same = FindFragFixes(snap, own);
    REQUIRE(same.ok());
    CHECK((*same)[0].best == -1);
    CHECK((*same)[0].settings[1].peak_reserved == 70 * kMiB);
    CHECK((*same)[0].settings[1].fits_on == 70 * kMiB);
    own.candidates = {"expandable_segments:maybe"};
    CHECK(FindFragFixes(snap, own).status().code() == absl::StatusCode::kInvalidArgument);
  }

  TEST_CASE("a setting fits on its own unlimited peak: every replay of the search starts alike") {
    using testing::Ev;
    // Two blocks alive before the trace (freed without an alloc) in a 20 MiB segment the trace
    // frees at its end: a 2 MiB one at its base and one of 1 MiB + 1 byte at +18 MiB. Started
    // cold (allocated in address order) the second is split off right after the first, leaving
    // one 17 MiB - 512 hole, which the trace's 17 MiB - 512 request fills: 20 MiB reserved.
    // Started warm (the segment as it was) the hole is 16 MiB and the request needs a segment of
    // its own: 38 MiB. The search used to verify the cold run's peak with warm replays, which
    // failed up to 36 MiB, so the recorded settings "fit" on nothing (0), though they run
    // without a failure on their own 20 MiB peak.
    const uint64_t seg = 0x7f0000000000, big = 0x7f0100000000;
    const int64_t request = 17 * kMiB - 512;
    Snapshot snap = testing::TraceSnapshot({
        Ev(Action::kAlloc, big, request),
        Ev(Action::kFreeRequested, seg, 2 * kMiB),
        Ev(Action::kFreeCompleted, seg, 2 * kMiB),
        Ev(Action::kFreeRequested, seg + 18 * kMiB, kMiB + 1),
        Ev(Action::kFreeCompleted, seg + 18 * kMiB, kMiB + 1),
        Ev(Action::kFreeRequested, big, request),
        Ev(Action::kFreeCompleted, big, request),
        Ev(Action::kSegmentFree, seg, 20 * kMiB),
    });
    FragFixOptions only_recorded;
    only_recorded.candidates = {"max_split_size_mb:512"};
    only_recorded.start = FitStart::kCold;
    auto fixes = FindFragFixes(snap, only_recorded);
    REQUIRE_MESSAGE(fixes.ok(), fixes.status().message());
    REQUIRE(fixes->size() == 1);
    const FragSetting& recorded = (*fixes)[0].settings[0];
    CHECK_FALSE((*fixes)[0].warm);
    CHECK(recorded.peak_reserved == 20 * kMiB);
    CHECK(recorded.fits_on > 0);
    CHECK(recorded.fits_on <= recorded.peak_reserved);
    // From the recorded state (the default start) the request needs its own segment: 38 MiB on
    // no limit, and the search, from that start too, fits on no more.
    only_recorded.start = FitStart::kRecorded;
    auto warm = FindFragFixes(snap, only_recorded);
    REQUIRE(warm.ok());
    CHECK((*warm)[0].warm);
    CHECK((*warm)[0].settings[0].peak_reserved == 38 * kMiB);
    CHECK((*warm)[0].settings[0].fits_on > 0);
    CHECK((*warm)[0].settings[0].fits_on <= 38 * kMiB);
  }

  TEST_CASE(
      "a pin whose blocks have no stack is a synthetic row: typed as such, and left out of the "
      "text") {
    // frag_basic.json has no trace: its blocks are older than any recording, without a stack.
    FragReport r = Analyze(testing::LoadFixture("frag_basic.json"));
    REQUIRE_FALSE(r.costs.empty());
    REQUIRE_FALSE(r.costs[0].pins.empty());
    const StrandedPin& p = r.costs[0].pins[0];
    CHECK(p.site == kBeforeRecordingRow);
    CHECK(p.synthetic);
    CHECK(p.category == Category::kUnknown);
    // The typed answer of the device: its verdict and stranded figures, at the end (no trace).
    const FragAnswer a = FragAnswerOf(r.costs[0]);
    CHECK(a.verdict == r.costs[0].verdict);
    CHECK(a.stranded_bytes == r.costs[0].figures.stranded_bytes);
    CHECK_FALSE(a.at_peak);
    for (const report::AnswerLine& l : report::FragAnswer(r, r.costs[0])) {
      CHECK(l.text.find(kBeforeRecordingRow) == std::string::npos);
    }
  }

  TEST_CASE("the answer's lines say what fragmentation costs, the fix and who pins it") {
    Snapshot snap = LoadFixture("frag_fix.json");
    FragReport r = Analyze(snap);
    auto fixes = FindFragFixes(snap);
    REQUIRE(fixes.ok());
    r.fixes = *fixes;
    std::vector<report::AnswerLine> lines = report::FragAnswer(r, r.costs[0]);
    REQUIRE(lines.size() == 4);
    CHECK(lines[0].label == "answer");
    CHECK(lines[0].text ==
          "fragmentation costs 576.0 MiB (51.4% of the 1.1 GiB reserved) at the reserved peak "
          "(after event 14, +14.0 ms): large");
    CHECK(lines[1].label == "free");
    // One expandable segment: under pressure the pages behind freed blocks are unmapped, so the
    // run needs little more than its live peak; the recorded settings need the 1.1 GiB they
    // reserved (the stranded holes stay pinned).
    CHECK(lines[2].text ==
          "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the run fits on 640.0 MiB instead of "
          "1.1 GiB (-480.0 MiB, -42.9%), replayed from a cold start (the best of 6 settings; its "
          "live peak is 640.0 MiB)");
    CHECK(lines[3].label == "pinned by");
    CHECK(lines[3].text ==
          "model.py:31 forward [activation]: 2 blocks (64.0 MiB) keep 2 segments with 576.0 MiB "
          "stranded from being released");
    // Without the replays the fix line says so.
    r.fixes.clear();
    CHECK(report::FragAnswer(r, r.costs[0])[2].text.starts_with("not replayed (--no-replay)"));
  }

  TEST_CASE("without a trace the answer describes the end and says how to record a trace") {
    FragReport r = Analyze(LoadFixture("frag_basic.json"));
    REQUIRE(r.costs.size() == 1);
    const FragCost& c = r.costs[0];
    CHECK_FALSE(c.at_peak);
    CHECK(c.figures.stranded_bytes == r.totals.stranded_bytes);
    CHECK(c.figures.releasable_bytes == 20 * kMiB);
    CHECK(c.verdict == FragVerdict::kSmall);  // 26 MiB of 82 MiB: a large share, but 26 MiB
    std::vector<report::AnswerLine> lines = report::FragAnswer(r, c);
    REQUIRE(lines.size() >= 3);
    CHECK(lines[0].text.find("at the end of the snapshot (no trace") != std::string::npos);
    CHECK(lines[2].text.starts_with("cannot be proven without a trace"));
    CHECK(lines[2].text.find("_record_memory_history(max_entries=") != std::string::npos);
  }

  TEST_CASE("frag invariants hold on every corpus file, at the end and at the peak" *
            doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      auto snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      FragReport end = Analyze(*snap);
      CheckInvariants(end, path);
      // Every device has an answer; a site pins at most what its device strands, most first.
      for (const FragCost& c : end.costs) {
        INFO(path << " device " << c.device);
        CHECK(c.verdict == JudgeFragmentation(c.figures.stranded_bytes, c.figures.reserved_bytes));
        for (size_t i = 0; i < c.pins.size(); ++i) {
          CHECK(c.pins[i].stranded_bytes <= c.figures.stranded_bytes);
          CHECK(c.pins[i].blocks > 0);
          if (i > 0) CHECK(c.pins[i].stranded_bytes <= c.pins[i - 1].stranded_bytes);
        }
      }
      CHECK(end.totals.segments == static_cast<int64_t>(snap->segments.size()));
      bool traced = false;
      for (const auto& t : snap->traces) traced |= t.size() > 0;
      if (!traced) continue;
      FragOptions options;
      options.at = FragMoment::kPeakReserved;
      options.timeline_samples = 5;
      FragReport peak = Analyze(*snap, options);
      CheckInvariants(peak, path + " at peak");
      // The answer of a traced device is its reserved peak.
      for (const auto& p : peak.peaks) {
        for (const FragCost& c : peak.costs) {
          if (c.device != p.device) continue;
          CHECK(c.at_peak);
          CHECK(c.figures.reserved_bytes == p.peak_reserved.figures.reserved_bytes);
          CHECK(c.figures.stranded_bytes == p.peak_reserved.figures.stranded_bytes);
        }
      }
      for (const auto& p : peak.peaks) {
        CHECK(p.peak_reserved.figures.reserved_bytes >= p.peak_allocated.figures.reserved_bytes);
        CHECK(p.peak_allocated.figures.allocated_bytes >= p.peak_reserved.figures.allocated_bytes);
      }
      // A setting fits on its own unlimited peak (docs/simulator.md, "One starting state"),
      // unless a memory fraction below 1 caps it under the device, or the trace reserves
      // nothing (the search then answers its 1-byte floor).
      {
        auto fixes = FindFragFixes(*snap);
        REQUIRE_MESSAGE(fixes.ok(), fixes.status().message());
        // The default candidates set no fraction: the recorded one is every setting's.
        const bool capped =
            sim::ConfigFromSettings(snap->settings).memory_fraction.value_or(1.0) < 1.0;
        for (const FragFix& fix : *fixes) {
          for (const FragSetting& s : fix.settings) {
            // A candidate's own fraction needs its peak over the fraction.
            if (capped || s.peak_reserved == 0 ||
                s.conf.find("per_process_memory_fraction") != std::string::npos) {
              continue;
            }
            INFO(path << " device " << fix.device << " " << s.conf);
            CHECK(s.fits_on <= s.peak_reserved);
          }
        }
      }
      // The reserved peak agrees with the timeline pass, which walks the trace forwards.
      auto timeline = ReconstructTimeline(*snap);
      REQUIRE(timeline.ok());
      for (const auto& p : peak.peaks) {
        const DeviceTimeline* dt = timeline->Find(p.device);
        REQUIRE(dt != nullptr);
        INFO(path << " device " << p.device);
        CHECK(p.peak_reserved.figures.reserved_bytes == dt->peak_reserved);
        // frag's reserved peak is the timeline's point, the one definition (docs/figures.md).
        CHECK(p.peak_reserved.event_index == dt->peak_reserved_event.index());
        CHECK(dt->ReservedPeakIn(TimelinePoint::Start(), TimelinePoint::End(dt->num_events)) ==
              std::pair{dt->peak_reserved, dt->peak_reserved_event});
      }
      // The last sample is the final state.
      if (snap->traces.size() == 1) {
        CHECK(peak.timeline.back().figures.reserved_bytes == end.totals.reserved_bytes);
        CHECK(peak.timeline.back().figures.allocated_bytes == end.totals.allocated_bytes);
      }
    }
  }
}

}  // namespace
}  // namespace memsnap::analysis
