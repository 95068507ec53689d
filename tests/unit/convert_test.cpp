// Snapshot writer and `memsnap convert`: corpus round trips (model -> pickle -> model; CPython's
// pickle.loads of our output against the original), JSON output, slicing.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "doctest/doctest.h"
#include "memsnap/io/gzip_writer.h"
#include "memsnap/parse/reader.h"
#include "memsnap/writer/snapshot_writer.h"
#include "memsnap/writer/trace_slice.h"
#include "test_util.h"

namespace memsnap {
namespace {

std::string StackText(const Snapshot& s, StackId id) {
  if (!id.valid()) return "<absent>";
  std::string out;
  for (FrameId f : s.stacks.Get(id)) absl::StrAppend(&out, s.FrameText(f), "\n");
  return out;
}

/// Checks that two snapshots hold the same segments, blocks, events and stacks (as text).
void CheckSameModel(const Snapshot& a, const Snapshot& b) {
  REQUIRE(a.segments.size() == b.segments.size());
  for (size_t i = 0; i < a.segments.size(); ++i) {
    const Segment &x = a.segments[i], &y = b.segments[i];
    CAPTURE(i);
    CHECK(x.device == y.device);
    CHECK(x.address == y.address);
    CHECK(x.total_size == y.total_size);
    CHECK(x.allocated_size == y.allocated_size);
    CHECK(x.active_size == y.active_size);
    CHECK(x.requested_size == y.requested_size);
    CHECK(x.stream == y.stream);
    CHECK(x.is_small == y.is_small);
    CHECK(x.is_expandable == y.is_expandable);
    CHECK(x.pool == y.pool);
    CHECK(x.num_blocks == y.num_blocks);
    // A segment without frames (2.0 flavour) is written with `frames: []`.
    if (x.stack.valid()) CHECK(StackText(a, x.stack) == StackText(b, y.stack));
  }
  REQUIRE(a.blocks.size() == b.blocks.size());
  for (size_t i = 0; i < a.blocks.size(); ++i) {
    const Block &x = a.blocks[i], &y = b.blocks[i];
    CAPTURE(i);
    CHECK(x.address == y.address);
    CHECK(x.size == y.size);
    CHECK(x.requested_size == y.requested_size);
    CHECK(x.state == y.state);
    if (x.stack.valid()) CHECK(StackText(a, x.stack) == StackText(b, y.stack));
  }
  REQUIRE(a.traces.size() == b.traces.size());
  REQUIRE(a.events.size() == b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const TraceEvent &x = a.events[i], &y = b.events[i];
    CAPTURE(i);
    CHECK(x.action == y.action);
    CHECK(x.addr == y.addr);
    CHECK(x.size == y.size);
    CHECK(x.time_us == y.time_us);
    CHECK(a.StreamOf(x) == b.StreamOf(y));  // the values: each file numbers its own streams
    CHECK(StackText(a, x.stack) == StackText(b, y.stack));
  }
  CHECK(a.annotations.size() == b.annotations.size());
  CHECK(a.settings.present == b.settings.present);
  CHECK(a.settings.conf == b.settings.conf);
  CHECK(a.settings.max_split_size == b.settings.max_split_size);
  CHECK(a.settings.roundup_power2_divisions == b.settings.roundup_power2_divisions);
}

std::string ToPickle(const Snapshot& s, int protocol) {
  std::ostringstream out;
  writer::SnapshotWriteOptions o;
  o.protocol = protocol;
  REQUIRE(writer::WriteSnapshotPickle(s, o, out).ok());
  return out.str();
}

using testing::WriteTemp;

Snapshot SmallTimedSnapshot() {
  return testing::ParseOrFail(testing::PythonPickle(R"({
    "segments": [], "device_traces": [
      [{"action": "alloc", "addr": 100 + i, "size": 512, "stream": 0, "time_us": 1000 + 10 * i}
       for i in range(10)],
      [{"action": "alloc", "addr": 900, "size": 512, "stream": 0, "time_us": 1055}]],
    "external_annotations": [
      {"stage": "START", "name": "a", "device": 0, "time_us": 1000},
      {"stage": "END", "name": "a", "device": 0, "time_us": 1090}]})"));
}

TEST_SUITE("convert") {
  TEST_CASE("every corpus file survives model -> pickle -> model unchanged, for protocols 2, 4, 5" *
            doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      CAPTURE(path);
      auto snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      for (int protocol : {2, 4, 5}) {
        CAPTURE(protocol);
        Snapshot back = testing::ParseOrFail(ToPickle(*snap, protocol));
        CHECK(back.source.pickle_protocol == protocol);
        CheckSameModel(*snap, back);
      }
    }
  }

  TEST_CASE("CPython loads our pickles and JSON of corpus files into the original structure" *
            doctest::test_suite("corpus")) {
    std::vector<std::string> args;
    std::vector<std::string> names;
    int legacy = 0;
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    for (const std::string& path : files) {
      auto snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      // The 2.0 flavour (block `history`, no block address) is written in the 2.1+ form.
      if (snap->source.legacy_history) {
        ++legacy;
        continue;
      }
      std::string base = std::filesystem::path(path).filename().string();
      std::ostringstream json;
      REQUIRE(writer::WriteSnapshotJson(*snap, {}, json).ok());
      // Protocol 2 is covered by the model round trip above; CPython checks 4 and JSON (JSON
      // repeats every shared frame, so only for the smaller files: it keeps the test fast).
      std::vector<std::pair<std::string, std::string>> outputs = {{".p4", ToPickle(*snap, 4)}};
      if (std::filesystem::file_size(path) < (1 << 20)) outputs.push_back({".json", json.str()});
      for (const auto& [suffix, bytes] : outputs) {
        args.push_back(path);
        args.push_back(WriteTemp(base + suffix, bytes));
        names.push_back(base + suffix);
      }
    }
    REQUIRE(!args.empty());
    std::string list;
    for (const std::string& a : args) absl::StrAppend(&list, a, "\n");
    std::string list_path = WriteTemp("pairs.txt", list);
    std::string code = "import snapshot_compare\nsnapshot_compare.main(open('" + list_path +
                       "').read().split())\n";
    std::istringstream lines(testing::RunPython(code));
    std::string line;
    for (const std::string& name : names) {
      REQUIRE(std::getline(lines, line));
      CAPTURE(name);
      CHECK(line == "same");
    }
    CHECK(legacy <= 6);  // the six Yiyi_* files of the 2.0 era
  }

  TEST_CASE("frames and whole stacks are shared through the memo as PyTorch shares them") {
    Snapshot snap = testing::ParseOrFail(testing::PythonPickle(R"(
      (lambda f, tb: {"segments": [], "device_traces": [[
          {"action": "alloc", "addr": i, "size": 512, "stream": 0, "frames": tb} for i in range(50)
      ]]})(None, [frame("f%d" % i, "a.py", i) for i in range(30)]))"));
    std::string p = ToPickle(snap, 4);
    // 30 frames of ~20 bytes written once, then 49 one-GET references: far below 50 copies.
    CHECK(p.size() < 3000);
    std::string out =
        testing::RunPython("d = pickle.load(open('" + WriteTemp("shared.pickle", p) +
                           "', 'rb'))\n"
                           "t = d['device_traces'][0]\n"
                           "print(all(e['frames'] is t[0]['frames'] for e in t), "
                           "t[0]['frames'][3] == {'name': 'f3', 'filename': 'a.py', 'line': 3})\n");
    CHECK(out == "True True\n");
  }

  TEST_CASE("slice bounds parse events, time offsets with units, and absolute times") {
    using Kind = writer::SliceBound::Kind;
    auto b = writer::ParseSliceBound("event:1000");
    REQUIRE(b.ok());
    CHECK(b->kind == Kind::kEvent);
    CHECK(b->value == 1000);
    CHECK(writer::ParseSliceBound("event:-5")->value == -5);
    CHECK(writer::ParseSliceBound("250ms")->value == 250000);
    CHECK(writer::ParseSliceBound("-5s")->value == -5000000);
    CHECK(writer::ParseSliceBound("1.5s")->value == 1500000);
    CHECK(writer::ParseSliceBound("+1500us")->kind == Kind::kTimeOffset);
    CHECK(writer::ParseSliceBound("1500")->kind == Kind::kAbsTime);  // a bare number is a time_us
    CHECK(writer::ParseSliceBound("abs:1700000000000000")->kind == Kind::kAbsTime);
    CHECK(writer::ParseSliceBound("")->kind == Kind::kNone);
    CHECK_FALSE(writer::ParseSliceBound("event:x").ok());
    CHECK_FALSE(writer::ParseSliceBound("5 parsecs").ok());
  }

  TEST_CASE(
      "slicing keeps events in [from, to) on every device and the annotations in that window") {
    Snapshot snap = SmallTimedSnapshot();
    auto slice = writer::ComputeSlice(snap, *writer::ParseSliceBound("+20us"),
                                      *writer::ParseSliceBound("60us"));
    REQUIRE(slice.ok());
    REQUIRE(slice->ranges.size() == 2);
    CHECK(slice->ranges[0].begin == 2);                         // time 1020
    CHECK(slice->ranges[0].end == 6);                           // 1060 excluded
    CHECK(slice->ranges[1].end - slice->ranges[1].begin == 1);  // 1055
    CHECK(slice->events == 5);
    writer::SnapshotWriteOptions o;
    o.event_ranges = slice->ranges;
    o.min_time_us = slice->min_time_us;
    o.max_time_us = slice->max_time_us;
    std::ostringstream out;
    REQUIRE(writer::WriteSnapshotPickle(snap, o, out).ok());
    Snapshot back = testing::ParseOrFail(out.str());
    CHECK(back.events.size() == 5);
    CHECK(back.events.front().addr == 102);
    CHECK(back.annotations.empty());  // both annotations are outside [1020, 1060)

    auto last = writer::ComputeSlice(snap, *writer::ParseSliceBound("event:-3"), {});
    REQUIRE(last.ok());
    CHECK(last->ranges[0].begin == 7);
    CHECK(last->ranges[1].end - last->ranges[1].begin == 1);
  }

  TEST_CASE("a slice past the trace or reversed is an error naming the flag, not an empty file") {
    Snapshot snap = SmallTimedSnapshot();
    auto err = [&](const char* from, const char* to) {
      auto f = writer::ParseSliceBound(from, "--from");
      auto t = writer::ParseSliceBound(to, "--to");
      if (!f.ok()) return std::string(f.status().message());
      if (!t.ok()) return std::string(t.status().message());
      auto s = writer::ComputeSlice(snap, *f, *t);
      return s.ok() ? std::string() : std::string(s.status().message());
    };
    CHECK(err("event:5", "event:1").find("--from event:5 is after --to event:1") == 0);
    CHECK(err("event:99999", "").find("--from event:99999: out of range") == 0);
    CHECK(err("", "+1h").find("--to +1h") == 0);  // no such unit
    CHECK(err("", "+10min").find("--to +10min: after the trace ended") == 0);
    CHECK(err("5", "").find("before the trace began") != std::string::npos);
    CHECK(err("event:1", "event:3").empty());
  }

  TEST_CASE("a gzip-compressed JSON reads back as the same snapshot") {
    Snapshot snap = SmallTimedSnapshot();
    std::ostringstream plain;
    REQUIRE(writer::WriteSnapshotJson(snap, {}, plain).ok());
    std::ostringstream packed;
    {
      io::GzipOstream z(packed);
      REQUIRE(writer::WriteSnapshotJson(snap, {}, z).ok());
      REQUIRE(z.Finish().ok());
    }
    CHECK(packed.str().substr(0, 2) == "\x1f\x8b");  // the gzip magic
    CHECK(packed.str().size() < plain.str().size());
    Snapshot back = testing::ParseOrFail(packed.str());
    CHECK(back.source.gzip);
    CHECK(back.events.size() == snap.events.size());
    CHECK(back.events[3].time_us == snap.events[3].time_us);
  }

  TEST_CASE("time slicing a trace without time_us is a clear error") {
    Snapshot snap = testing::ParseOrFail(testing::PythonPickle(
        R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 2, "stream": 0}]]})"));
    auto slice = writer::ComputeSlice(snap, *writer::ParseSliceBound("1s"), {});
    REQUIRE_FALSE(slice.ok());
    CHECK(std::string(slice.status().message()).find("event:N") != std::string::npos);
  }

  TEST_CASE("JSON output escapes control characters and replaces invalid UTF-8") {
    Snapshot snap;
    StrId name = snap.strings.Intern("bad\xff\x01\"q\" \xc3\xa9");
    StrId file = snap.strings.Intern("a.py");
    FrameId f = snap.frames.Intern(Frame{name, file, 3});
    snap.traces.push_back(DeviceTrace{0, 0, 1});
    TraceEvent e;
    e.action = Action::kAlloc;
    e.stack = snap.stacks.Intern(std::span<const FrameId>(&f, 1));
    snap.events.push_back(e);
    std::ostringstream out;
    REQUIRE(writer::WriteSnapshotJson(snap, {}, out).ok());
    CHECK(out.str().find(R"("name":"bad\ufffd\u0001\"q\" )"
                         "\xc3\xa9\"") != std::string::npos);
  }

  TEST_CASE("convert picks JSON from the .json extension and writes nothing on failure") {
    std::string dir = testing::TempDir();
    std::string in =
        WriteTemp("in.pickle", testing::PythonPickle(R"({"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 1, "size": 2, "stream": 0, "time_us": 5}]]})"));
    auto r = testing::RunMemsnap({"convert", "-q", in, dir + "/out.json"});
    CHECK(r.exit_code == 0);
    std::ifstream f(dir + "/out.json");
    std::string text((std::istreambuf_iterator<char>(f)), {});
    CHECK(
        text ==
        R"({"segments":[],"device_traces":[[{"action":"alloc","addr":1,"size":2,"stream":0,"time_us":5}]]})"
        "\n");
    auto bad = testing::RunMemsnap({"convert", "--from", "event:x", in, dir + "/never.pickle"});
    CHECK(bad.exit_code == 2);
    CHECK_FALSE(std::filesystem::exists(dir + "/never.pickle"));
  }
}

}  // namespace
}  // namespace memsnap
