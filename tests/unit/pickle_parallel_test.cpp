// The parallel decoding of one pickle (src/parse/pickle_parallel.cpp) against the sequential
// decoder (pickle_paths.h, CompareParallelDecoding): on every corpus file, every fixture, generated
// traces that exercise what the workers cannot decode, and byte-mutated inputs, decoding on
// several threads must give the same model, warnings and error, for several thread counts and
// chunk sizes down to one chunk a FRAME. Pickles with small FRAMEs come from CPython's pure-Python
// pickler with a smaller frame size target, so that small inputs are cut into many chunks.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/parse/reader.h"
#include "pickle_paths.h"
#include "test_util.h"

namespace memsnap {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Records [len][bytes] written by a Python script, back into strings.
std::vector<std::string> SplitU64Records(const std::string& out) {
  std::vector<std::string> records;
  for (size_t at = 0; at + 8 <= out.size();) {
    uint64_t n = 0;
    for (int k = 0; k < 8; ++k) n |= uint64_t{static_cast<unsigned char>(out[at + k])} << (8 * k);
    records.push_back(out.substr(at + 8, n));
    at += 8 + n;
  }
  return records;
}

// Python that defines small_frames(obj, target, protocol): a pickle cut into FRAMEs of about
// `target` bytes, and emit(b): one record on stdout.
const char* const kSmallFrames =
    "import io\n"
    "def small_frames(obj, target, protocol=4):\n"
    "    pickle._Framer._FRAME_SIZE_TARGET = target\n"
    "    f = io.BytesIO()\n"
    "    pickle._Pickler(f, protocol).dump(obj)\n"
    "    return f.getvalue()\n"
    "def emit(b):\n"
    "    sys.stdout.buffer.write(len(b).to_bytes(8, 'little') + b)\n";

// A training-loop-like trace on two devices in which new frames, stacks, actions and streams keep
// appearing (memo GETs of entries made after the head, which the workers cannot see), frame
// lists are both shared and new (and shared with an entry a worker decoded), an entry is now and
// then appended twice (a memo GET of a worker's entry), and some entries need the generic path
// (a dict as user_metadata, an unknown action, sizes out of range, a missing key, an extra key).
const char* const kTrace =
    "import random\n"
    "def trace(seed, n, late=1.0):\n"
    "    rng = random.Random(seed)\n"
    "    frames = [{'name': 'fn%d' % i, 'filename': 'f%d.py' % (i % 7), 'line': i}\n"
    "              for i in range(80)]\n"
    "    stacks = []\n"
    "    devices = [[], []]\n"
    "    actions = ['alloc', 'free_requested', 'free_completed', 'segment_alloc']\n"
    "    for i in range(n):\n"
    "        if not stacks or (i < late * n and rng.random() < 0.01):\n"
    "            k = min(len(frames), 3 + i * 80 // n)\n"
    "            stacks.append([frames[rng.randrange(k)] for _ in range(rng.randrange(1, 6))])\n"
    "        st = rng.choice(stacks)\n"
    "        fr = st if rng.random() < 0.5 else list(st)\n"
    "        if len(devices[0]) > 7 and rng.random() < 0.05: fr = devices[0][-7]['frames']\n"
    "        a = actions[rng.randrange(len(actions) if i > n // 2 else 3)]\n"
    // A new stream in each quarter after the head: the workers number it in their own tables,
    // and the adoption must give it the model's id, the same as the sequential decoder's.
    "        late_stream = 0 if i < n // 4 else 2**47 + 256 * (i * 4 // n)\n"
    "        e = dict(action=a, addr=2**40 + 512 * rng.randrange(1000),\n"
    "                 size=512 * rng.randrange(1, 100), stream=rng.choice((0, 0, 7, "
    "late_stream)),\n"
    "                 time_us=1000 + i, compile_context='N/A', user_metadata='', frames=fr)\n"
    "        r = rng.random()\n"
    "        if r < 0.01: e['user_metadata'] = {'step': i}\n"
    "        elif r < 0.015: e['action'] = 'brand_new'\n"
    "        elif r < 0.02: e['size'] = 2**41\n"
    "        elif r < 0.025: del e['time_us']\n"
    "        elif r < 0.03: e['extra'] = i\n"
    "        devices[0 if rng.random() < 0.9 else 1].append(e)\n"
    "        if len(devices[0]) > 5 and rng.random() < 0.003: devices[0].append(devices[0][-5])\n"
    "    return {'segments': [], 'device_traces': devices,\n"
    "            'allocator_settings': {'max_split_size': -1}}\n";

// Generated traces cut into frames of about `target` bytes (protocols 4 and 5); in the last, new
// stacks stop appearing after the first 2% of the entries, as in a training loop.
std::vector<std::string> Traces() {
  return SplitU64Records(testing::RunPython(
      std::string(kSmallFrames) + kTrace +
      "for seed, n, late, target, protocol in ((1, 3000, 1, 256, 4), (2, 3000, 1, 4096, 5),"
      " (3, 400, 1, 64, 4), (4, 20000, 0.02, 16384, 4)):\n"
      "    emit(small_frames(trace(seed, n, late), target, protocol))\n"));
}

// A training loop's trace on one device, in small frames: the shape the timeline streams.
std::string OneDeviceTrace() {
  return SplitU64Records(testing::RunPython(
      std::string(kSmallFrames) +
      "import random\n"
      "rng = random.Random(5)\n"
      "frames = [{'name': 'fn%d' % i, 'filename': 'f%d.py' % (i % 7), 'line': i} for i in "
      "range(40)]\n"
      "stacks = [[frames[rng.randrange(40)] for _ in range(3)] for _ in range(12)]\n"
      "live, trace = [], []\n"
      "for i in range(30000):\n"
      "    if live and rng.random() < 0.5:\n"
      "        a, s = live.pop(rng.randrange(len(live)))\n"
      "        for act in ('free_requested', 'free_completed'):\n"
      "            trace.append(dict(action=act, addr=a, size=s, stream=0, time_us=i,\n"
      "                              frames=rng.choice(stacks)))\n"
      "    else:\n"
      "        a, s = 2**40 + 512 * i, 512 * rng.randrange(1, 100)\n"
      "        live.append((a, s))\n"
      "        trace.append(dict(action='alloc', addr=a, size=s, stream=0, time_us=i,\n"
      "                          frames=rng.choice(stacks)))\n"
      "emit(small_frames({'segments': [], 'device_traces': [trace]}, 8192))\n"))[0];
}

// An observer that passes everything on to a BackgroundEventFeed and records how the decoder
// asks for help: SetHelped's calls (from the decoder's thread) and Help's calls from other threads.
class HelpRecorder final : public parse::EventObserver {
 public:
  explicit HelpRecorder(parse::BackgroundEventFeed& feed) : feed_(feed) {}
  void Publish(const TraceEvent* events, size_t count, std::span<const int64_t> streams) override {
    feed_.Publish(events, count, streams);
  }
  void Release() override { feed_.Release(); }
  void Invalidate() override { feed_.Invalidate(); }
  void SetHelped(bool helped) override {
    set_helped.push_back(helped);
    feed_.SetHelped(helped);
  }
  bool Help(bool wait) override {
    if (std::this_thread::get_id() != owner_) asked_by_others.fetch_add(1);
    return feed_.Help(wait);
  }

  std::vector<bool> set_helped;
  std::atomic<int> asked_by_others{0};

 private:
  parse::BackgroundEventFeed& feed_;
  const std::thread::id owner_ = std::this_thread::get_id();
};

// The fixtures of testdata/ as pickles of protocols 4 and 5 with small frames.
std::vector<std::string> SmallFrameFixtures() {
  return SplitU64Records(testing::RunPython(
      std::string(kSmallFrames) +
      "import os\n"
      "from pyhelpers import load_json\n"
      "root = '" MEMSNAP_SOURCE_DIR
      "/testdata'\n"
      "names = sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root)\n"
      "               for f in fs if f.endswith('.json'))\n"
      "for name in names:\n"
      "    for protocol in (4, 5):\n"
      "        emit(small_frames(load_json(name), 128, protocol))\n"));
}

}  // namespace

TEST_SUITE("pickle_parallel") {
  TEST_CASE(
      "a pickle decoded on several threads gives the sequential model, with workers' "
      "entries adopted") {
    std::vector<std::string> traces = Traces();
    REQUIRE(traces.size() == 4);
    size_t best_share_percent = 0;
    for (size_t t = 0; t < traces.size(); ++t) {
      for (size_t threads : {2, 3, 5}) {
        for (size_t chunk : {size_t{1}, size_t{700}, size_t{5000}, size_t{1} << 20}) {
          CAPTURE(t);
          CAPTURE(threads);
          CAPTURE(chunk);
          // Scheduled as it comes, and with every chunk left to the workers (deterministic).
          std::string diff = testing::CompareParallelDecoding(traces[t], threads, chunk);
          CHECK_MESSAGE(diff == "", diff);
          parse::ParallelStats stats;
          diff = testing::CompareParallelDecoding(traces[t], threads, chunk, &stats, true);
          CHECK_MESSAGE(diff == "", diff);
          Snapshot s = testing::ParseOrFail(traces[t]);
          best_share_percent =
              std::max(best_share_percent, stats.events_adopted * 100 / s.events.size());
        }
      }
    }
    // The workers' entries are used, not only decoded and dropped: 43% of the last trace, whose
    // entries are often gaps by design (an action first seen halfway, lists shared with a worker's
    // entry, entries for the generic path, entries across FRAME boundaries).
    CHECK(best_share_percent >= 40);
  }

  TEST_CASE(
      "the decoder's workers feed the timeline between their chunks: the timeline rebuilt "
      "after the read") {
    const std::string bytes = OneDeviceTrace();
    const analysis::TimelineOptions to = analysis::SummaryTimelineOptions();
    for (size_t threads : {2, 3, 5}) {
      for (size_t chunk : {size_t{1}, size_t{20000}}) {
        // Scheduled as it comes, and with every chunk left to the workers: then each worker
        // surely asks for the feed's work before each of its chunks.
        for (bool wait : {false, true}) {
          CAPTURE(threads);
          CAPTURE(chunk);
          CAPTURE(wait);
          analysis::TimelineStream stream(to);
          parse::BackgroundEventFeed feed(
              [&](std::span<const TraceEvent> ev, size_t first, std::span<const int64_t> streams) {
                stream.Feed(ev, first, streams);
              },
              true);
          HelpRecorder recorder(feed);
          parse::PickleOptions options;
          options.threads = threads;
          options.parallel_min_bytes = 0;
          options.parallel_chunk_bytes = chunk;
          options.parallel_wait_for_workers = wait;
          auto input = io::FromMemory(bytes, "in.pickle");
          absl::StatusOr<Snapshot> snap = parse::ParsePickleWith(*input, &recorder, options);
          REQUIRE(snap.ok());
          feed.Release();
          // Helped from the plan on, and no longer once the decoder is done.
          CHECK(recorder.set_helped == std::vector<bool>{true, false});
          if (wait) CHECK(recorder.asked_by_others > 0);
          absl::StatusOr<analysis::Timeline> tl = stream.Finish(*snap, feed.fed());
          REQUIRE(tl.ok());
          CHECK(stream.used_stream());
          absl::StatusOr<analysis::Timeline> rebuilt = analysis::ReconstructTimeline(*snap, to);
          REQUIRE(rebuilt.ok());
          REQUIRE(tl->devices.size() == 1);
          CHECK(tl->devices[0] == rebuilt->devices[0]);
        }
      }
    }
  }

  TEST_CASE(
      "a FRAME whose length runs past the end of the input is refused on several threads as on "
      "one, naming its offset") {
    // The workers step over FRAME headers; one that claims more than the file holds must end
    // their segment, so that the sequential decoder reaches it and refuses it (issue 33). A trace
    // whose stacks are all defined early, so that the workers decode nearly all of it.
    const std::string bytes = OneDeviceTrace();
    // The FRAME headers, each found from the one before, that a worker steps over: between two
    // trace entries (an EMPTY_DICT follows), past the head. One inside an entry ends the worker's
    // segment anyway (the fast path does not take it), and the sequential decoder decodes it.
    std::vector<size_t> frames;
    for (size_t at = 2; at + 9 <= bytes.size() && static_cast<uint8_t>(bytes[at]) == 0x95;) {
      if (at > bytes.size() / 4 && at + 9 < bytes.size() && bytes[at + 9] == '}') {
        frames.push_back(at);
      }
      uint64_t len;
      std::memcpy(&len, bytes.data() + at + 1, 8);
      at += 9 + len;
    }
    REQUIRE(frames.size() >= 4);
    if (frames.size() > 12) frames.resize(12);
    for (size_t at : frames) {
      for (uint64_t len : {uint64_t{1000000000000}, ~uint64_t{0}}) {
        std::string bad = bytes;
        std::memcpy(bad.data() + at + 1, &len, 8);
        const std::string expected = absl::StrCat(
            "in.pickle: offset ", at, ": FRAME of ", len, " bytes runs past the end of the input (",
            bytes.size() - at - 9, " bytes left): pickle data was truncated");
        CHECK(testing::ParseError(bad, "in.pickle") == expected);
        for (size_t chunk : {size_t{1}, size_t{20000}}) {
          for (bool wait : {false, true}) {
            CAPTURE(at);
            CAPTURE(len);
            CAPTURE(chunk);
            CAPTURE(wait);
            parse::PickleOptions options;
            options.threads = 2;
            options.parallel_min_bytes = 0;
            options.parallel_chunk_bytes = chunk;
            options.parallel_wait_for_workers = wait;
            auto input = io::FromMemory(bad, "in.pickle");
            absl::StatusOr<Snapshot> snap = parse::ParsePickleWith(*input, nullptr, options);
            REQUIRE(!snap.ok());
            CHECK(snap.status().message() == expected);
          }
        }
      }
    }
  }

  TEST_CASE("a pickle of protocol 2, or one too small to cut, is decoded on one thread") {
    std::string p2 = testing::PythonPickle(
        "{'segments': [], 'device_traces': [[{'action': 'alloc', 'addr': 1, 'size': 2, 'stream': "
        "0} for _ in range(3000)]]}",
        2);
    parse::ParallelStats stats;
    CHECK(testing::CompareParallelDecoding(p2, 4, 1, &stats) == "");
    CHECK(stats.chunks == 0);
    std::string tiny = testing::PythonPickle("{'segments': [], 'device_traces': [[]]}", 4);
    CHECK(testing::CompareParallelDecoding(tiny, 4, 1, &stats) == "");
    CHECK(stats.chunks == 0);
  }

  TEST_CASE("every fixture with small frames decodes the same on several threads") {
    std::vector<std::string> pickles = SmallFrameFixtures();
    CHECK(pickles.size() >= 30);
    for (size_t i = 0; i < pickles.size(); ++i) {
      CAPTURE(i);
      for (size_t threads : {2, 3}) {
        std::string diff = testing::CompareParallelDecoding(pickles[i], threads, 1);
        CHECK_MESSAGE(diff == "", diff);
      }
    }
  }

  TEST_CASE("byte-mutated pickles decode the same on several threads, or fail the same way") {
    // Flips, truncations, duplicated and deleted ranges of the generated traces (the frames'
    // lengths then lie, entries straddle chunks, memo indices break): the fuzz_pickle_paths
    // target runs the same comparison on what libFuzzer makes.
    std::vector<std::string> bases = Traces();
    bases.resize(3);  // the small-frame ones
    std::mt19937_64 rng(19);
    int compared = 0, decoded = 0;
    for (const std::string& base : bases) {
      for (int m = 0; m < 60; ++m) {
        std::string b = testing::MutateBytes(base, rng, {.keep_half = true, .max_copy = 64});
        const size_t threads = 2 + rng() % 3;
        const size_t chunk = rng() % 2 ? 1 : 1 + rng() % 4096;
        std::string diff = testing::CompareParallelDecoding(b, threads, chunk);
        CHECK_MESSAGE(diff == "", diff);
        decoded += testing::DecodedPickleText(b, true).rfind("error: ", 0) != 0;
        ++compared;
      }
    }
    CHECK(compared == 180);
    CHECK(decoded > 5);  // the mutations reach past the first error, not only errors
  }

  TEST_CASE("every corpus file decodes the same on several threads" *
            doctest::test_suite("corpus")) {
    size_t pickles = 0, adopted = 0;
    for (const std::string& path : testing::CorpusFiles()) {
      for (const std::string& bytes : testing::PicklesIn(Slurp(path))) {
        CAPTURE(path);
        for (size_t threads : {2, 4}) {
          for (size_t chunk : {size_t{1}, size_t{1} << 18}) {
            parse::ParallelStats stats;
            // Two threads scheduled as they come; four with every chunk left to the workers, so
            // that whether workers' entries are adopted does not hang on the machine's load
            // (as they come, a loaded machine's workers may never get ahead of the reader).
            const bool wait_for_workers = threads == 4;
            std::string diff =
                testing::CompareParallelDecoding(bytes, threads, chunk, &stats, wait_for_workers);
            CHECK_MESSAGE(diff == "", diff.substr(0, 4000));
            adopted += stats.events_adopted;
          }
        }
        ++pickles;
      }
    }
    if (testing::CorpusDir()) {
      if (!testing::CorpusBounded()) CHECK(pickles >= 60);
      CHECK(adopted > 0);
    }
  }
}

}  // namespace memsnap
