#include "memsnap/analysis/sites/summary.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <span>
#include <sstream>

#include "memsnap/io/input.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/writer/snapshot_writer.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ParseOrFail;
using testing::PythonPickle;

using testing::kMiB;

// A trace that begins mid-run: frees of blocks allocated before it, allocs over addresses still
// live (a missed free), ooms, times out of order, live blocks at the end of both kinds.
Snapshot MidRunSnapshot(int events) {
  std::mt19937_64 rng(19);
  Snapshot snap;
  for (int i = 0; i < events; ++i) {
    TraceEvent e;
    const uint64_t r = rng() % 100;
    e.action = r < 45   ? Action::kAlloc
               : r < 90 ? Action::kFreeCompleted
               : r < 95 ? Action::kFreeRequested
               : r < 98 ? Action::kSegmentAlloc
                        : Action::kOom;
    e.addr = 0x10000 * (1 + rng() % 40);
    e.size = 512 * static_cast<int64_t>(1 + rng() % 8);
    e.time_us = rng() % 10 == 0 ? kNoTime : 1000 + static_cast<int64_t>(rng() % 100000);
    snap.events.push_back(e);
  }
  snap.traces.push_back({0, 0, static_cast<uint32_t>(events)});
  Segment seg;
  seg.address = 0x10000;
  seg.total_size = 0x10000 * 48;
  seg.first_block = 0;
  for (uint64_t a = 1; a <= 48; ++a) {
    Block b;
    b.address = 0x10000 * a;
    b.size = 0x10000;
    b.requested_size = 1000;
    b.state = a % 3 == 0 ? BlockState::kInactive : BlockState::kActiveAllocated;
    snap.blocks.push_back(b);
  }
  seg.num_blocks = static_cast<uint32_t>(snap.blocks.size());
  snap.segments.push_back(seg);
  return snap;
}

TEST_SUITE("summary") {
  TEST_CASE("summary totals follow the _memory_viz stats definitions") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('summary_basic.json')"));
    analysis::SummaryReport r = analysis::Summarize(snap);
    CHECK(r.totals.segments == 2);
    CHECK(r.totals.blocks == 5);
    CHECK(r.totals.reserved_bytes == 20971520 + 2097152);
    CHECK(r.totals.allocated_bytes == 4194304 + 1024);
    CHECK(r.totals.active_bytes == 4194304 + 2097152 + 1024);
    CHECK(r.totals.requested_bytes == 4000000 + 2097152 + 1000);
    CHECK(r.totals.inactive_bytes == 14680064 + 2096128);
    CHECK(r.totals.trace_entries == 6);
    CHECK(r.totals.actions[static_cast<int>(Action::kAlloc)] == 2);
    CHECK(r.totals.actions[static_cast<int>(Action::kOom)] == 1);
    REQUIRE(r.devices.size() == 1);
    CHECK(r.devices[0].pools.size() == 2);
    CHECK(r.devices[0].streams.size() == 2);
    CHECK(r.devices[0].frees_without_alloc == 1);
    // The small block was allocated before the trace began; the large one's alloc is in it.
    CHECK(r.devices[0].ghost_blocks == 1);
    CHECK(r.devices[0].ghost_bytes == 1024);
    CHECK(r.devices[0].last_time_us - r.devices[0].first_time_us == 50);
  }

  TEST_CASE("summary reads the oom entry's device_free in place of an address") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('summary_basic.json')"));
    const TraceEvent& oom = snap.events[5];
    CHECK(oom.action == Action::kOom);
    CHECK(oom.addr == 1048576);
    CHECK(oom.size == 1073741824);
  }

  TEST_CASE("summary tells an oom of demand from one the allocator failed to place") {
    // oom_demand: 60 MiB live and a 10 MiB request on a 64 MiB device. oom_fragmentation: 4 MiB
    // live and a 30 MiB request on 64 MiB, refused only because no free piece is large enough.
    analysis::SummaryReport demand = analysis::Summarize(testing::LoadFixture("oom_demand.json"));
    REQUIRE(demand.devices.size() == 1);
    REQUIRE(demand.devices[0].ooms.size() == 1);
    const analysis::SummaryOom& d = demand.devices[0].ooms[0];
    REQUIRE(d.live_bytes.has_value());
    CHECK(*d.live_bytes == 60 * kMiB);
    CHECK(d.capacity == 64 * kMiB);
    CHECK(d.demand());

    analysis::SummaryReport frag =
        analysis::Summarize(testing::LoadFixture("oom_fragmentation.json"));
    REQUIRE(frag.devices[0].ooms.size() == 1);
    const analysis::SummaryOom& f = frag.devices[0].ooms[0];
    REQUIRE(f.live_bytes.has_value());
    CHECK(*f.live_bytes == 4 * kMiB);
    CHECK(f.capacity == 64 * kMiB);
    CHECK_FALSE(f.demand());
    std::ostringstream text;
    report::RenderSummaryText(frag, text);
    CHECK(text.str().find("placement: 4.0 MiB live + this 30.0 MiB fit in the 64.0 MiB") !=
          std::string::npos);

    // Without a timeline the figures are unknown, and summary says nothing it cannot back.
    analysis::SummaryReport bare =
        analysis::Summarize(testing::LoadFixture("oom_demand.json"), nullptr);
    REQUIRE(bare.devices[0].ooms.size() == 1);
    CHECK_FALSE(bare.devices[0].ooms[0].live_bytes.has_value());
    CHECK_FALSE(bare.devices[0].ooms[0].demand());
  }

  TEST_CASE("summary gives the same figures for every pickle protocol") {
    analysis::SummaryReport base =
        analysis::Summarize(ParseOrFail(PythonPickle("load_json('summary_basic.json')", 4)));
    for (int protocol : {2, 3, 5}) {
      CAPTURE(protocol);
      analysis::SummaryReport r = analysis::Summarize(
          ParseOrFail(PythonPickle("load_json('summary_basic.json')", protocol)));
      CHECK(r.totals.reserved_bytes == base.totals.reserved_bytes);
      CHECK(r.totals.requested_bytes == base.totals.requested_bytes);
      CHECK(r.totals.trace_entries == base.totals.trace_entries);
      CHECK(r.unique_stacks == base.unique_stacks);
      CHECK(r.unique_frames == base.unique_frames);
    }
  }

  TEST_CASE("summary records the allocator settings and roundup table") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('summary_basic.json')"));
    CHECK(snap.settings.present);
    CHECK(snap.settings.conf == "max_split_size_mb:128");
    CHECK(snap.settings.max_split_size == 134217728);
    CHECK(snap.settings.roundup_power2_divisions[2] == 4);
    CHECK(snap.annotations.size() == 2);
  }

  TEST_CASE("summary of many files names the outlier rank") {
    std::string dir = testing::TempDir() + "/ranks";
    testing::RunPython("import os\nos.makedirs('" + dir +
                       "', exist_ok=True)\n"
                       "from pyhelpers import *\n"
                       "for r in range(4):\n"
                       "    d = load_json('summary_basic.json')\n"
                       "    if r == 2:\n"
                       "        d['segments'][0]['total_size'] *= 3\n"
                       "        d['segments'][0]['blocks'][2]['size'] += 2 * 20971520\n"
                       "    pickle.dump(d, open(os.path.join('" +
                       dir +
                       "', f'rank{r}.pickle'), 'wb'))\n"
                       "open(os.path.join('" +
                       dir + "', 'README.md'), 'w').write('not a snapshot')\n");
    testing::RunResult r = testing::RunMemsnap({"summary", "--json", dir});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("\"outliers\"") != std::string::npos);
    CHECK(r.out.find("rank2.pickle\",\n        \"metric\": \"reserved_bytes\"") !=
          std::string::npos);
    CHECK(r.out.find("README.md") == std::string::npos);
  }

  TEST_CASE(
      "summary gives each device's live and reserved peak, with event and time, and its "
      "oom entries") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('summary_basic.json')"));
    analysis::SummaryReport r = analysis::Summarize(snap);
    REQUIRE(r.devices[0].peaks.has_value());
    const analysis::TracePeaks& p = *r.devices[0].peaks;
    CHECK(p.live_bytes == 4000000 + 2097152 + 1512);  // both traced allocs + the pre-trace block
    CHECK(p.live_event == analysis::TimelinePoint::After(2));
    CHECK(p.live_time_us == 1700000000000020);
    CHECK(p.reserved_bytes == 20971520 + 2097152);
    // Reserved is at its most from the segment_alloc (event 0) on; the reserved peak is where that
    // memory holds the most live bytes (docs/figures.md): the live peak's event.
    CHECK(p.reserved_event == analysis::TimelinePoint::After(2));
    REQUIRE(r.devices[0].ooms.size() == 1);
    CHECK(r.devices[0].ooms[0].event == 5);
    CHECK(r.devices[0].ooms[0].requested == 1073741824);
    CHECK(r.devices[0].ooms[0].device_free == 1048576);
    analysis::SummaryOptions no_peaks;
    no_peaks.peaks = false;
    CHECK_FALSE(analysis::Summarize(snap, no_peaks).devices[0].peaks.has_value());
  }

  TEST_CASE("summary takes the peaks from the timeline it is given, whatever that keeps") {
    Snapshot snap = ParseOrFail(PythonPickle("load_json('summary_basic.json')"));
    const nlohmann::ordered_json rebuilt = report::SummaryToJson(analysis::Summarize(snap));
    for (analysis::KeepLifetimes keep :
         {analysis::KeepLifetimes::kAll, analysis::KeepLifetimes::kLiveAt,
          analysis::KeepLifetimes::kNone}) {
      for (bool curve : {true, false}) {
        CAPTURE(static_cast<int>(keep));
        CAPTURE(curve);
        analysis::TimelineOptions to;
        to.keep = keep;
        to.curve = curve;
        absl::StatusOr<analysis::Timeline> tl = analysis::ReconstructTimeline(snap, to);
        REQUIRE(tl.ok());
        CHECK(report::SummaryToJson(analysis::Summarize(snap, &*tl)) == rebuilt);
      }
    }
    // The peaks are the timeline's: without one there are none, everything else is the same.
    analysis::SummaryReport none = analysis::Summarize(snap, nullptr);
    CHECK_FALSE(none.devices[0].peaks.has_value());
    CHECK(none.devices[0].ooms.size() == 1);
    CHECK(none.totals.trace_entries == 6);
  }

  TEST_CASE("summary of a corpus file is the same with the command's timeline as rebuilt" *
            doctest::test_suite("corpus")) {
    // `memsnap summary FILE` passes the kLiveAt timeline it builds during the read.
    analysis::TimelineOptions to;
    to.keep = analysis::KeepLifetimes::kLiveAt;
    to.curve = false;
    for (const std::string& path : testing::CorpusFiles()) {
      INFO(path);
      absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      absl::StatusOr<analysis::Timeline> tl = analysis::ReconstructTimeline(*snap, to);
      REQUIRE(tl.ok());
      CHECK(report::SummaryToJson(analysis::Summarize(*snap, &*tl)) ==
            report::SummaryToJson(analysis::Summarize(*snap)));
    }
  }

  TEST_CASE("summary's pass over the events gives the same report on any number of threads") {
    constexpr int kEvents = 20000;
    Snapshot snap = MidRunSnapshot(kEvents);
    analysis::SummaryOptions one;
    one.min_events_per_thread = 1;
    const analysis::SummaryReport base = analysis::Summarize(snap, nullptr, one);
    REQUIRE(base.devices.size() == 1);
    CHECK(base.devices[0].frees_without_alloc > 0);
    CHECK(base.devices[0].ghost_blocks > 0);
    CHECK(base.devices[0].ghost_blocks < 32);  // some live blocks' allocs are in the trace
    CHECK(base.devices[0].ooms.size() > 100);
    const nlohmann::ordered_json expected = report::SummaryToJson(base);
    for (int threads : {2, 3, 7, 64}) {
      CAPTURE(threads);
      analysis::SummaryOptions many = one;
      many.threads = threads;
      CHECK(report::SummaryToJson(analysis::Summarize(snap, nullptr, many)) == expected);
    }
  }

  // The report from the counts a timeline took in its pass, and from a pass of Summarize's own.
  void CheckCountsGiveOwnPass(const Snapshot& snap, const analysis::Timeline& tl) {
    analysis::SummaryOptions own;
    own.own_pass = true;
    CHECK(report::SummaryToJson(analysis::Summarize(snap, &tl)) ==
          report::SummaryToJson(analysis::Summarize(snap, &tl, own)));
  }

  TEST_CASE("the timeline's counts give the report of summary's own pass over the events") {
    // Frees before the trace, allocs over live addresses, ooms, times out of order and missing,
    // live blocks whose allocs the trace saw and ghosts: every figure the counts feed.
    Snapshot snap = MidRunSnapshot(20000);
    for (analysis::KeepLifetimes keep :
         {analysis::KeepLifetimes::kAll, analysis::KeepLifetimes::kLiveAt,
          analysis::KeepLifetimes::kNone}) {
      CAPTURE(static_cast<int>(keep));
      analysis::TimelineOptions to;
      to.keep = keep;
      absl::StatusOr<analysis::Timeline> tl = analysis::ReconstructTimeline(snap, to);
      REQUIRE(tl.ok());
      const analysis::SummaryReport r = analysis::Summarize(snap, &*tl);
      REQUIRE(r.devices.size() == 1);
      CHECK(r.devices[0].frees_without_alloc > 0);
      CHECK(r.devices[0].ghost_blocks > 0);
      CHECK(r.devices[0].ooms.size() > 100);
      CheckCountsGiveOwnPass(snap, *tl);
    }
    // Two devices: each takes its own timeline's counts.
    snap.traces = {{0, 0, 10000}, {1, 10000, 20000}};
    absl::StatusOr<analysis::Timeline> two =
        analysis::ReconstructTimeline(snap, analysis::SummaryTimelineOptions());
    REQUIRE(two.ok());
    REQUIRE(two->devices.size() == 2);
    CheckCountsGiveOwnPass(snap, *two);
    // They are what the report is made of: counts that differ from the events show.
    analysis::Timeline changed = *two;
    ++changed.devices[1].counts.unmatched_frees;
    CHECK(report::SummaryToJson(analysis::Summarize(snap, &changed)) !=
          report::SummaryToJson(analysis::Summarize(snap, &*two)));
    // A timeline of other events than the trace's (another device, a shorter trace) is not used.
    analysis::Timeline other = *two;
    other.devices[1].num_events -= 1;
    other.devices[1].counts = {};
    analysis::SummaryOptions own;
    own.own_pass = true;
    CHECK(report::SummaryToJson(analysis::Summarize(snap, &other)) ==
          report::SummaryToJson(analysis::Summarize(snap, &other, own)));
  }

  TEST_CASE(
      "the timeline's counts taken on the reader's feed thread give the report of summary's own "
      "pass") {
    // As the summary command reads one file: the reader publishes, BackgroundEventFeed hands the
    // events to another thread, which feeds the timeline's pass (scripts/tsan.sh runs this file
    // under ThreadSanitizer).
    Snapshot written = MidRunSnapshot(60000);
    std::ostringstream out;
    REQUIRE(writer::WriteSnapshotPickle(written, writer::SnapshotWriteOptions{}, out).ok());
    for (bool threaded : {false, true}) {
      CAPTURE(threaded);
      analysis::TimelineStream stream(analysis::SummaryTimelineOptions(), 60000);
      parse::BackgroundEventFeed feed(
          [&](std::span<const TraceEvent> ev, size_t first, std::span<const int64_t> streams) {
            stream.Feed(ev, first, streams);
          },
          threaded);
      parse::ReadOptions ro;
      ro.events = &feed;
      auto input = io::FromString(out.str(), "fed.pickle");
      auto snaps = parse::ParseSnapshots(*input, ro);
      REQUIRE(snaps.ok());
      REQUIRE(snaps->size() == 1);
      feed.Release();
      CHECK(feed.fed() == 60000);
      const Snapshot& snap = (*snaps)[0];
      absl::StatusOr<analysis::Timeline> tl = stream.Finish(snap, feed.fed());
      REQUIRE(tl.ok());
      CHECK(stream.used_stream());
      CheckCountsGiveOwnPass(snap, *tl);
    }
  }

  TEST_CASE("the timeline's counts give the report of summary's own pass on every corpus file" *
            doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      INFO(path);
      absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      absl::StatusOr<analysis::Timeline> tl =
          analysis::ReconstructTimeline(*snap, analysis::SummaryTimelineOptions());
      REQUIRE(tl.ok());
      CheckCountsGiveOwnPass(*snap, *tl);
    }
  }

  TEST_CASE("the ring-buffer guess needs a trace exactly as long as a full ring buffer") {
    // `n` frees of blocks the trace never allocated: every event is one.
    auto frees = [](int64_t n) {
      Snapshot snap;
      for (int64_t i = 0; i < n; ++i) {
        TraceEvent e;
        e.action = Action::kFreeCompleted;
        e.addr = 0x100000 + static_cast<uint64_t>(i) * 512;
        e.size = 512;
        snap.events.push_back(e);
      }
      snap.traces.push_back({0, 0, static_cast<uint32_t>(n)});
      return snap;
    };
    auto start = [](const Snapshot& snap) {
      const analysis::SummaryReport r = analysis::Summarize(snap);
      REQUIRE(r.devices.size() == 1);
      return r.devices[0].trace_start;
    };
    auto said = [](const Snapshot& snap) {
      const std::vector<std::string> words = report::SummaryWarnings(analysis::Summarize(snap));
      REQUIRE_FALSE(words.empty());
      return words[0];
    };
    // One free without its alloc: recording began mid-run, nothing says the buffer overflowed.
    Snapshot one = frees(1);
    CHECK(start(one) == analysis::TraceStart::kMidRun);
    CHECK(said(one) ==
          "device 0: the trace begins mid-run (1 block is freed in it but was allocated before "
          "it)");
    // The same trace when the file says the buffer holds one entry: it is full.
    one.settings.trace_alloc_max_entries = 1;
    CHECK(start(one) == analysis::TraceStart::kRingLikelyOverflowed);
    CHECK(said(one).find("likely overflowed") != std::string::npos);
    // A buffer that overflowed holds exactly its capacity: 22,332 events is no capacity anyone
    // passes, so those frees say the recording began mid-run; 20,000 and 16,384 are.
    CHECK(start(frees(22332)) == analysis::TraceStart::kMidRun);
    CHECK(start(frees(20000)) == analysis::TraceStart::kRingLikelyOverflowed);
    CHECK(start(frees(16384)) == analysis::TraceStart::kRingLikelyOverflowed);
    // The file's own flag wins.
    Snapshot flagged = frees(3);
    flagged.settings.trace_alloc_overflowed = true;
    CHECK(start(flagged) == analysis::TraceStart::kRingOverflowed);
    // ... and is said once: the device's sentence, not a second file-wide line beside it.
    const std::vector<std::string> flagged_words =
        report::SummaryWarnings(analysis::Summarize(flagged));
    REQUIRE(flagged_words.size() == 1);
    CHECK(flagged_words[0].find("device 0: the trace's ring buffer overflowed") == 0);
    // A flagged file whose trace shows nothing of it still says so, once, from the flag.
    Snapshot flagged_empty;
    flagged_empty.settings.trace_alloc_overflowed = true;
    const std::vector<std::string> flag_only =
        report::SummaryWarnings(analysis::Summarize(flagged_empty));
    REQUIRE(flag_only.size() == 1);
    CHECK(flag_only[0].find("trace_alloc_overflowed is set") != std::string::npos);
  }

  TEST_CASE("settings are described in the words summary and diff share") {
    AllocatorSettings s;
    s.present = true;
    s.max_split_size = -1;
    std::vector<analysis::SettingText> a = analysis::DescribeSettings(s);
    s.max_split_size = 536870912;
    std::vector<analysis::SettingText> b = analysis::DescribeSettings(s);
    REQUIRE(a[1].name == "max_split_size");
    CHECK(a[1].value == "unlimited");
    CHECK(b[1].value == "512.0 MiB");
    CHECK(a[1].is_default);
    CHECK_FALSE(b[1].is_default);
  }

  TEST_CASE("summary gives every device a section up to 64 devices and a line each past them") {
    // One 2 MiB segment per device (issue 54: 100,000 sections were most of the cost).
    auto report_of = [](int devices) {
      analysis::SummaryReport r;
      for (int d = 0; d < devices; ++d) {
        analysis::DeviceSummary dev;
        dev.device = d;
        dev.totals.segments = 1;
        dev.totals.reserved_bytes = 2 * kMiB;
        r.devices.push_back(dev);
      }
      return r;
    };
    auto text_of = [](const analysis::SummaryReport& r) {
      std::ostringstream out;
      report::RenderSummaryText(r, out);
      return out.str();
    };
    const std::string full = text_of(report_of(64));
    CHECK(full.find("\ndevice 63\n") != std::string::npos);
    CHECK(full.find("one line each") == std::string::npos);
    const std::string compact = text_of(report_of(65));
    CHECK(compact.find("\ndevice 0\n") == std::string::npos);
    CHECK(compact.find("65 devices, one line each (a full section per device up to 64): "
                       "`memsnap summary --device N` prints device N's") != std::string::npos);
    CHECK(compact.find("\n  64      ") != std::string::npos);  // device 64's row
  }
}

}  // namespace
}  // namespace memsnap
