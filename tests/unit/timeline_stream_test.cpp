// The timeline built while the reader decodes (TimelineStream fed by BackgroundEventFeed) must be
// the timeline ReconstructTimeline builds after the read, field for field, whatever the chunking,
// and must fall back to it whenever what was fed is not the snapshot's one trace.
#include <random>
#include <sstream>
#include <thread>

#include "doctest/doctest.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/parse/reader.h"
#include "memsnap/writer/snapshot_writer.h"
#include "pickle_builder.h"
#include "test_util.h"
#include "trace_builders.h"

namespace memsnap::analysis {
namespace {

using testing::Ev;

constexpr uint64_t kStreamBase = 0x7f0000000000;

// A random trace over a few addresses (missing allocs and frees, reused addresses, segment
// events, times that step back) and a final state that partly matches it.
Snapshot RandomSnapshot(std::mt19937_64& rng, int n) {
  std::vector<TraceEvent> events;
  StreamTable streams;  // three streams, so that a lifetime's stream is compared too
  const StreamId on[] = {streams.Intern(0), streams.Intern(0x5a5a00), streams.Intern(7)};
  int64_t t = 100;
  for (int i = 0; i < n; ++i) {
    const int roll = std::uniform_int_distribution<int>(0, 99)(rng);
    const uint64_t addr = kStreamBase + 512 * std::uniform_int_distribution<uint64_t>(0, 40)(rng);
    const int64_t size = std::uniform_int_distribution<int64_t>(1, 5000)(rng);
    Action a = roll < 40   ? Action::kAlloc
               : roll < 60 ? Action::kFreeRequested
               : roll < 92 ? Action::kFreeCompleted
               : roll < 95 ? Action::kSegmentAlloc
               : roll < 97 ? Action::kSegmentFree
               : roll < 99 ? Action::kSegmentMap
                           : Action::kSegmentUnmap;
    TraceEvent e = Ev(a, a >= Action::kSegmentAlloc ? kStreamBase : addr, size,
                      on[std::uniform_int_distribution<int>(0, 2)(rng)]);
    t += std::uniform_int_distribution<int>(-1, 3)(rng);
    e.time_us = t;
    events.push_back(e);
  }
  Snapshot snap = testing::TraceSnapshot(std::move(events), std::move(streams));
  Segment seg;
  seg.address = kStreamBase;
  seg.total_size = 64 * 512;
  for (int k = 0; k < 8; ++k) {
    Block b;
    b.address = kStreamBase + 512 * static_cast<uint64_t>(k);
    b.size = 512;
    b.requested_size = 100 + k;
    b.state = k % 3 == 0 ? BlockState::kInactive : BlockState::kActiveAllocated;
    snap.blocks.push_back(b);
  }
  seg.num_blocks = static_cast<uint32_t>(snap.blocks.size());
  snap.segments.push_back(seg);
  return snap;
}

// What the commands ask for: timeline (every lifetime, or none), top at the peak (with or without
// the curve), at the end, at event:N (inside and past the trace), and at a time, which is not
// streamed.
std::vector<TimelineOptions> OptionSets() {
  std::vector<TimelineOptions> out(10);
  out[0].keep = KeepLifetimes::kAll;
  out[1].keep = KeepLifetimes::kNone;
  out[2].keep = KeepLifetimes::kLiveAt;
  out[3].keep = KeepLifetimes::kLiveAt;
  out[3].curve = false;
  out[4].keep = KeepLifetimes::kNone;
  out[4].curve = false;
  out[5].keep = KeepLifetimes::kLiveAt;
  out[5].moment = Moment{Moment::Kind::kEvent, 3};
  out[6].keep = KeepLifetimes::kLiveAt;
  out[6].moment = Moment{Moment::Kind::kEvent, 1 << 20};
  out[7].keep = KeepLifetimes::kLiveAt;
  out[7].moment = Moment{Moment::Kind::kEvent, -7};
  out[8].keep = KeepLifetimes::kLiveAt;
  out[8].moment = Moment{Moment::Kind::kEnd, 0};
  out[8].curve = false;
  out[9].keep = KeepLifetimes::kLiveAt;
  out[9].moment = Moment{Moment::Kind::kTime, 150};
  return out;
}

// Feeds `snap`'s events to a stream in random chunks, then checks Finish against the reference.
void CheckStreamed(const Snapshot& snap, const TimelineOptions& options, std::mt19937_64& rng,
                   bool expect_stream) {
  TimelineStream stream(options);
  size_t first = 0;
  while (first < snap.events.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 9)(rng);
    n = std::min(n, snap.events.size() - first);
    stream.Feed(std::span<const TraceEvent>(snap.events.data() + first, n), first,
                snap.streams.values());
    first += n;
  }
  auto got = stream.Finish(snap, first);
  auto want = ReconstructTimeline(snap, options);
  REQUIRE(got.ok());
  REQUIRE(want.ok());
  CHECK(stream.used_stream() == expect_stream);
  REQUIRE(got->devices.size() == want->devices.size());
  for (size_t d = 0; d < want->devices.size(); ++d) {
    CAPTURE(d);
    CHECK(got->devices[d].peak_requested == want->devices[d].peak_requested);
    CHECK(got->devices[d].peak_event == want->devices[d].peak_event);
    CHECK(got->devices[d].start_requested == want->devices[d].start_requested);
    CHECK(got->devices[d] == want->devices[d]);
  }
}

// Reads `bytes` with a BackgroundEventFeed feeding a TimelineStream, as LoadWithTimeline does.
struct StreamedRead {
  Snapshot snap;
  absl::StatusOr<Timeline> timeline;
  bool used_stream = false;
  size_t fed = 0;
};
StreamedRead ReadStreamed(io::InputSource& input, const TimelineOptions& options, bool threaded) {
  TimelineStream stream(options);
  parse::BackgroundEventFeed feed(
      [&](std::span<const TraceEvent> ev, size_t first, std::span<const int64_t> streams) {
        stream.Feed(ev, first, streams);
      },
      threaded);
  parse::ReadOptions ro;
  ro.events = &feed;
  auto snaps = parse::ParseSnapshots(input, ro);
  REQUIRE(snaps.ok());
  REQUIRE(snaps->size() == 1);
  feed.Release();
  StreamedRead out{std::move((*snaps)[0]), absl::UnknownError("unset")};
  out.fed = feed.fed();
  out.timeline = stream.Finish(out.snap, out.fed);
  out.used_stream = stream.used_stream();
  return out;
}
StreamedRead ReadStreamed(const std::string& bytes, const TimelineOptions& options, bool threaded) {
  auto input = io::FromString(bytes, "streamed.pickle");
  return ReadStreamed(*input, options, threaded);
}

void CheckSameAsRebuilt(const StreamedRead& r, const TimelineOptions& options) {
  auto want = ReconstructTimeline(r.snap, options);
  REQUIRE(r.timeline.ok());
  REQUIRE(want.ok());
  REQUIRE(r.timeline->devices.size() == want->devices.size());
  for (size_t d = 0; d < want->devices.size(); ++d) {
    CHECK(r.timeline->devices[d].peak_requested == want->devices[d].peak_requested);
    CHECK(r.timeline->devices[d] == want->devices[d]);
  }
}

void CheckReadStreamed(const std::string& bytes, const TimelineOptions& options, bool threaded,
                       bool expect_stream) {
  StreamedRead r = ReadStreamed(bytes, options, threaded);
  CHECK(r.used_stream == expect_stream);
  if (expect_stream) CHECK(r.fed == r.snap.events.size());
  CheckSameAsRebuilt(r, options);
}

std::string ToPickle(const Snapshot& snap) {
  std::ostringstream out;
  writer::SnapshotWriteOptions wo;
  REQUIRE(writer::WriteSnapshotPickle(snap, wo, out).ok());
  return out.str();
}

// A pickle of `n` trace entries of 17 bytes each (keys and actions by memo GET), fewer than the
// 24 bytes per entry the reader reserves for: its event vector must grow while being read.
std::string TinyEntriesPickle(int n) {
  testing::PickleBuilder p(4);
  auto memoize = [&] { p.Op(0x94); };
  p.Op('}');
  memoize();  // 0: the top dict
  p.Op('(');
  p.Str("segments");
  memoize();  // 1
  p.Op(']');
  memoize();  // 2
  p.Str("device_traces");
  memoize();  // 3
  p.Op(']');
  memoize();  // 4: outer list
  p.Op('(');
  p.Op(']');
  memoize();  // 5: device 0's list
  p.Op('(');
  // First entry defines the keys and actions in the memo: action 6, alloc 7, addr 8, size 9.
  p.Op('}');
  memoize();  // 6... the dict itself takes a memo slot first
  p.Op('(').Str("action");
  memoize();  // 7
  p.Str("alloc");
  memoize();  // 8
  p.Str("addr");
  memoize();  // 9
  p.Op('M').U16(16);
  p.Str("size");
  memoize();  // 10
  p.Op('K').U8(1);
  p.Op('u');
  p.Op('}');
  memoize();  // 11
  p.Op('(').Op('h').U8(7).Str("free_completed");
  memoize();  // 12
  p.Op('h').U8(9).Op('M').U16(16).Op('h').U8(10).Op('K').U8(1).Op('u');
  for (int i = 2; i < n; ++i) {
    const bool alloc = i % 2 == 0;
    const uint16_t addr = static_cast<uint16_t>(16 + 16 * ((i / 2) % 3000));
    p.Op('}');
    memoize();
    p.Op('(').Op('h').U8(7).Op('h').U8(alloc ? 8 : 12);
    p.Op('h').U8(9).Op('M').U16(addr).Op('h').U8(10).Op('K').U8(static_cast<uint8_t>(1 + i % 200));
    p.Op('u');
  }
  p.Op('e');  // APPENDS to device 0's list
  p.Op('e');  // APPENDS to the outer list
  p.Op('u');  // SETITEMS on the top dict
  p.Op('.');
  return p.bytes();
}

TEST_SUITE("timeline stream") {
  TEST_CASE(
      "a timeline fed in chunks equals the one rebuilt after the read, for every option set") {
    std::mt19937_64 rng(20261123);
    for (int round = 0; round < 150; ++round) {
      CAPTURE(round);
      Snapshot snap = RandomSnapshot(rng, std::uniform_int_distribution<int>(1, 120)(rng));
      for (const TimelineOptions& o : OptionSets()) {
        CheckStreamed(snap, o, rng, TimelineStream::Streams(o));
      }
    }
  }

  TEST_CASE("events of several devices are rebuilt after the read instead") {
    std::mt19937_64 rng(7);
    Snapshot snap = RandomSnapshot(rng, 50);
    snap.traces = {{0, 0, 20}, {1, 20, 50}};
    CheckStreamed(snap, TimelineOptions{}, rng, false);
  }

  TEST_CASE("--device naming a device without the streamed events rebuilds that device") {
    std::mt19937_64 rng(8);
    Snapshot snap = RandomSnapshot(rng, 50);
    Segment other = snap.segments[0];
    other.device = 1;
    other.first_block = 0;
    other.num_blocks = 0;
    snap.segments.push_back(other);
    TimelineOptions o;
    o.device = 1;
    CheckStreamed(snap, o, rng, false);
    o.device = 0;
    CheckStreamed(snap, o, rng, true);
  }

  TEST_CASE("a stream fed out of order or short of the trace is not used") {
    std::mt19937_64 rng(9);
    Snapshot snap = RandomSnapshot(rng, 40);
    TimelineStream gap{TimelineOptions{}};
    gap.Feed(std::span<const TraceEvent>(snap.events.data(), 10), 0, snap.streams.values());
    gap.Feed(std::span<const TraceEvent>(snap.events.data() + 20, 20), 20, snap.streams.values());
    auto got = gap.Finish(snap, 40);
    REQUIRE(got.ok());
    CHECK_FALSE(gap.used_stream());
    CHECK(got->devices[0] == ReconstructTimeline(snap)->devices[0]);

    TimelineStream short_stream{TimelineOptions{}};
    short_stream.Feed(std::span<const TraceEvent>(snap.events.data(), 30), 0,
                      snap.streams.values());
    REQUIRE(short_stream.Finish(snap, 30).ok());
    CHECK_FALSE(short_stream.used_stream());
  }

  TEST_CASE("a pickle read with the feed on a worker thread gives the same timeline") {
    std::mt19937_64 rng(10);
    // Several of the reader's 16384-event chunks.
    const std::string bytes = ToPickle(RandomSnapshot(rng, 40000));
    for (bool threaded : {true, false}) {
      CAPTURE(threaded);
      for (const TimelineOptions& o : OptionSets()) {
        CheckReadStreamed(bytes, o, threaded, TimelineStream::Streams(o));
      }
    }
  }

  TEST_CASE("a feed helped by the reader's threads feeds every event once, in order") {
    std::vector<TraceEvent> events(50000);
    for (size_t i = 0; i < events.size(); ++i) events[i].addr = i;
    const std::vector<int64_t> streams = {0};
    for (int round = 0; round < 20; ++round) {
      CAPTURE(round);
      size_t next = 0;  // the feed's own check of order and completeness
      bool in_order = true;
      parse::BackgroundEventFeed feed(
          [&](std::span<const TraceEvent> ev, size_t first, std::span<const int64_t>) {
            in_order = in_order && first == next && ev.front().addr == first;
            next = first + ev.size();
          },
          true);
      feed.SetHelped(true);
      // Two helpers, as the parallel decoder's workers: between chunks and, once they have none,
      // waiting for more until told to stop.
      std::vector<std::thread> helpers;
      for (int h = 0; h < 2; ++h) {
        helpers.emplace_back([&] {
          while (feed.Help(/*wait=*/true)) {
          }
        });
      }
      for (size_t n = 1000; n <= events.size(); n += 1000 + 7 * static_cast<size_t>(round)) {
        feed.Publish(events.data(), n, streams);
      }
      feed.Publish(events.data(), events.size(), streams);
      if (round % 2 == 0) {
        // The decoder is done: the helpers stop, the feed's own thread takes what is left.
        feed.SetHelped(false);
        for (std::thread& t : helpers) t.join();
        feed.Release();
      } else {
        // Released while still helped: what is left is fed on the releasing thread.
        feed.Release();
        feed.SetHelped(false);
        for (std::thread& t : helpers) t.join();
      }
      CHECK(in_order);
      CHECK(next == events.size());
      CHECK(feed.fed() == events.size());
    }
  }

  TEST_CASE("a stream first seen after the first published events reaches the fed timeline") {
    std::mt19937_64 rng(12);
    Snapshot snap = RandomSnapshot(rng, 40000);
    // From event 30,000 on (after the first of the reader's 16384-event publications), allocs
    // are on a stream the reader interns only then: the feed must pass its value on.
    const StreamId late = snap.streams.Intern(0xabc000);
    for (size_t i = 30000; i < snap.events.size(); ++i) snap.events[i].stream = late;
    const std::string bytes = ToPickle(snap);
    TimelineOptions all;
    all.keep = KeepLifetimes::kAll;
    for (bool threaded : {true, false}) {
      CAPTURE(threaded);
      StreamedRead r = ReadStreamed(bytes, all, threaded);
      REQUIRE(r.timeline.ok());
      CHECK(r.used_stream);
      size_t on_late = 0;
      for (const BlockLifetime& b : r.timeline->devices[0].blocks) on_late += b.stream == 0xabc000;
      CHECK(on_late > 1000);
      CheckSameAsRebuilt(r, all);
    }
  }

  TEST_CASE("an event vector that outgrows its reservation is released before it moves") {
    const std::string bytes = TinyEntriesPickle(60000);
    StreamedRead r = ReadStreamed(bytes, TimelineOptions{}, true);
    REQUIRE(r.snap.events.size() == 60000);
    CHECK(r.snap.events.size() * 24 > bytes.size());  // more entries than the reader reserved
    CHECK(r.used_stream);
    CheckReadStreamed(bytes, TimelineOptions{}, true, true);
  }

  TEST_CASE("a JSON file is read first and rebuilt; a gzipped pickle streams") {
    std::mt19937_64 rng(11);
    Snapshot snap = RandomSnapshot(rng, 300);
    std::ostringstream json;
    REQUIRE(writer::WriteSnapshotJson(snap, writer::SnapshotWriteOptions{}, json).ok());
    CheckReadStreamed(json.str(), TimelineOptions{}, true, false);
    const std::string gz = testing::RunPython(
        "from pyhelpers import *\nimport gzip\n"
        "sys.stdout.buffer.write(gzip.compress(pickle.dumps(load_json("
        "'timeline_training.json'), protocol=4)))");
    CheckReadStreamed(gz, TimelineOptions{}, true, true);
  }

  TEST_CASE("items set on a trace entry after it was published void the stream") {
    // A memo GET of entry 0 and a SETITEM on it after 60,000 entries (legal, never written by
    // PyTorch): what the worker was fed no longer holds, so the timeline is rebuilt.
    std::string bytes = TinyEntriesPickle(60000);
    const std::string tail = "eeu.";  // APPENDS, APPENDS, SETITEMS, STOP
    REQUIRE(bytes.substr(bytes.size() - 4) == tail);
    bytes.resize(bytes.size() - 4);
    testing::PickleBuilder set(4);
    set.Op('h').U8(6).Str("size").Op('K').U8(77).Op('s').Op('0');  // GET 6, SETITEM, POP
    bytes += set.bytes().substr(2) + tail;
    for (bool threaded : {true, false}) {
      StreamedRead r = ReadStreamed(bytes, TimelineOptions{}, threaded);
      REQUIRE(r.snap.events.size() == 60000);
      CHECK(r.snap.events[0].size == 77);
      CHECK_FALSE(r.used_stream);
      REQUIRE(r.timeline.ok());
      CHECK(r.timeline->devices[0] == ReconstructTimeline(r.snap)->devices[0]);
    }
  }

  TEST_CASE("on every corpus file the timeline built while reading is the one built after it" *
            doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    TimelineOptions timeline_opts;  // what `timeline` asks for
    timeline_opts.keep = KeepLifetimes::kNone;
    TimelineOptions top_opts;  // what `top` asks for
    top_opts.keep = KeepLifetimes::kLiveAt;
    top_opts.curve = false;
    int streamed = 0;
    for (const std::string& path : files) {
      CAPTURE(path);
      for (const TimelineOptions& o : {timeline_opts, top_opts}) {
        auto input = io::OpenFile(path);
        REQUIRE(input.ok());
        StreamedRead r = ReadStreamed(**input, o, true);
        CheckSameAsRebuilt(r, o);
        streamed += r.used_stream;
      }
    }
    MESSAGE(streamed << " of " << 2 * files.size() << " reads used the stream");
  }
}

}  // namespace
}  // namespace memsnap::analysis
