// What the input may hold (docs/reader.md, "Limits"): every size, address and count a file gives
// is checked against what PyTorch can write, in one place shared by both readers. Out-of-range
// values are clamped or dropped with one warning per kind naming the first value's key path, and
// are an error under --strict. Also the top-level dict typed by all its keys, however batched.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "pickle_builder.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ParseError;
using testing::ParseOrFail;
using testing::PickleBuilder;

// A one-segment, one-entry snapshot written by CPython, with `event` and `block` (Python dict
// literals) as the trace entry and the segment's only block.
std::string OneOfEach(const std::string& event, const std::string& block,
                      const std::string& segment_extra = "") {
  return testing::PythonPickle(
      "{'segments': [{'device': 0, 'address': 2**40, 'total_size': 2097152, 'allocated_size': "
      "2097152, 'active_size': 2097152, 'requested_size': 1000, 'stream': 0, 'segment_type': "
      "'small', 'frames': [], 'blocks': [" +
      block + "]" + segment_extra + "}], 'device_traces': [[" + event + "]]}");
}

const std::string kBlock =
    "{'address': 2**40, 'size': 2097152, 'requested_size': 1000, 'state': 'active_allocated', "
    "'frames': []}";
const std::string kEvent = "{'action': 'alloc', 'addr': 2**40, 'size': 1000, 'stream': 0}";

bool HasWarning(const Snapshot& s, std::string_view needle) {
  return std::any_of(s.diagnostics.warnings.begin(), s.diagnostics.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

using testing::WriteTemp;

std::string StrictError(const std::string& bytes) {
  auto input = io::FromMemory(bytes, "snap.pickle");
  parse::ReadOptions options;
  options.strict = true;
  auto snaps = parse::ParseSnapshots(*input, options);
  return snaps.ok() ? "" : std::string(snaps.status().message());
}

}  // namespace

TEST_SUITE("input_limits") {
  TEST_CASE("a well-formed snapshot gives no limit warning") {
    Snapshot s = ParseOrFail(OneOfEach(kEvent, kBlock));
    CHECK(s.diagnostics.warnings.empty());
    CHECK(StrictError(OneOfEach(kEvent, kBlock)) == "");
  }

  TEST_CASE("a trace entry of 2^63-1 bytes is clamped to 1 TiB before any pass sees it") {
    // The issue: timeline's RoundSize overflowed on 9223372036854775807 + 511.
    Snapshot s = ParseOrFail(
        OneOfEach("{'action': 'alloc', 'addr': 2**40, 'size': 2**63 - 1, 'stream': 0}", kBlock));
    REQUIRE(s.events.size() == 1);
    CHECK(s.events[0].size == kMaxBytes);
    CHECK(HasWarning(s, "/device_traces/0/0/size"));
  }

  TEST_CASE("a trace entry of 2^62 bytes is clamped with the key path of the first such entry") {
    std::string bytes =
        OneOfEach(kEvent +
                      ", {'action': 'alloc', 'addr': 2**40 + 4096, 'size': 2**62, 'stream': 0}, "
                      "{'action': 'alloc', 'addr': 2**40 + 8192, 'size': 2**62, 'stream': 0}",
                  kBlock);
    Snapshot s = ParseOrFail(bytes);
    CHECK(s.events[1].size == kMaxBytes);
    CHECK(s.events[2].size == kMaxBytes);
    // One warning for the kind, naming the first entry; the count covers both.
    int size_warnings = 0;
    for (const std::string& w : s.diagnostics.warnings) {
      if (w.find("trace entry size") != std::string::npos) {
        ++size_warnings;
        CHECK(w.find("/device_traces/0/1/size") != std::string::npos);
        CHECK(w.find("2 trace entry sizes") != std::string::npos);
      }
    }
    CHECK(size_warnings == 1);
  }

  TEST_CASE("--strict turns an impossible trace entry size into exit 2 naming the key path") {
    std::string path = WriteTemp(
        "huge_entry.pickle",
        OneOfEach(kEvent + ", {'action': 'alloc', 'addr': 2**40, 'size': 2**62, 'stream': 0}",
                  kBlock));
    for (const char* command : {"timeline", "summary", "top"}) {
      CAPTURE(command);
      testing::RunResult r = testing::RunMemsnap({command, path, "--strict"});
      CHECK(r.exit_code == 2);
      CHECK(r.err.find("/device_traces/0/1/size") != std::string::npos);
      r = testing::RunMemsnap({command, path});
      CHECK(r.exit_code == 0);
      CHECK(r.err.find("/device_traces/0/1/size") != std::string::npos);
    }
    // Without --strict the peak is a size a device can have, not 4.6 EB.
    testing::RunResult r = testing::RunMemsnap({"timeline", path, "--json"});
    CHECK(r.out.find("4611686018427387904") == std::string::npos);
  }

  TEST_CASE("a block requested_size of -1 is reported with its key path, not accepted silently") {
    std::string bytes = OneOfEach(
        kEvent,
        "{'address': 2**40, 'size': 2097152, 'requested_size': -1, 'state': 'active_allocated', "
        "'frames': []}");
    Snapshot s = ParseOrFail(bytes);
    CHECK(HasWarning(s, "/segments/0/blocks/0/requested_size"));
    CHECK(s.blocks[0].requested_size == 2097152);  // dropped: the block's size stands in
    CHECK(StrictError(bytes).find("/segments/0/blocks/0/requested_size") != std::string::npos);
  }

  TEST_CASE("an active block cannot have requested more than its size") {
    std::string bytes =
        OneOfEach(kEvent,
                  "{'address': 2**40, 'size': 2097152, 'requested_size': 2097153, 'state': "
                  "'active_allocated', 'frames': []}");
    Snapshot s = ParseOrFail(bytes);
    CHECK(HasWarning(s, "/segments/0/blocks/0/requested_size"));
    CHECK(s.blocks[0].requested_size == 2097152);
    CHECK(StrictError(bytes) != "");
  }

  TEST_CASE("block and segment sizes outside 0..1 TiB are clamped with their key paths") {
    std::string bytes = OneOfEach(
        kEvent,
        "{'address': 2**40, 'size': 2**41, 'requested_size': 1000, 'state': 'active_allocated', "
        "'frames': []}");
    Snapshot s = ParseOrFail(bytes);
    CHECK(s.blocks[0].size == kMaxBytes);
    CHECK(HasWarning(s, "/segments/0/blocks/0/size"));
    CHECK(StrictError(bytes).find("/segments/0/blocks/0/size") != std::string::npos);

    std::string negative = testing::PythonPickle(
        "{'segments': [{'device': 0, 'address': 2**40, 'total_size': -4096, 'blocks': []}], "
        "'device_traces': []}");
    Snapshot n = ParseOrFail(negative);
    CHECK(n.segments[0].total_size == 0);
    CHECK(HasWarning(n, "/segments/0/total_size"));
  }

  TEST_CASE("addresses beyond the 57-bit virtual address space are reported") {
    std::string bytes =
        OneOfEach("{'action': 'alloc', 'addr': 2**60, 'size': 1000, 'stream': 0}", kBlock);
    Snapshot s = ParseOrFail(bytes);
    CHECK(HasWarning(s, "/device_traces/0/0/addr"));
    CHECK(StrictError(bytes).find("/device_traces/0/0/addr") != std::string::npos);

    std::string segment = testing::PythonPickle(
        "{'segments': [{'device': 0, 'address': 2**64 - 4096, 'total_size': 2097152, "
        "'blocks': [{'size': 2097152, 'state': 'inactive'}]}], 'device_traces': []}");
    Snapshot g = ParseOrFail(segment);
    CHECK(HasWarning(g, "/segments/0/address"));
    CHECK(StrictError(segment).find("/segments/0/address") != std::string::npos);
  }

  TEST_CASE("the JSON reader reports the same kinds with the same key paths") {
    std::string json =
        R"({"segments": [{"device": 0, "address": 1099511627776, "total_size": 2097152,)"
        R"( "blocks": [{"size": 2097152, "requested_size": -1, "state": "active_allocated"}]}],)"
        R"( "device_traces": [[{"action": "alloc", "addr": 1099511627776, "size": 1000,)"
        R"( "stream": 0}, {"action": "alloc", "addr": 1, "size": 4611686018427387904,)"
        R"( "stream": 0}]]})";
    Snapshot s = ParseOrFail(json, "snap.json");
    CHECK(s.events[1].size == kMaxBytes);
    CHECK(HasWarning(s, "/device_traces/0/1/size"));
    CHECK(HasWarning(s, "/segments/0/blocks/0/requested_size"));
  }

  TEST_CASE("the allocator settings' sizes and division counts are bounded") {
    std::string bytes = testing::PythonPickle(
        "{'segments': [], 'device_traces': [], 'allocator_settings': {'max_split_size': 2**62, "
        "'roundup_power2_divisions': {'1': 2**60, '2': 4}}}");
    Snapshot s = ParseOrFail(bytes);
    CHECK(HasWarning(s, "/allocator_settings/max_split_size"));
    CHECK(HasWarning(s, "/allocator_settings/roundup_power2_divisions"));
    CHECK(s.settings.roundup_power2_divisions[1] == 4);
    CHECK(s.settings.roundup_power2_divisions[0] <= (int64_t{1} << 30));
  }
}

TEST_SUITE("pickle_reader") {
  TEST_CASE("a top-level dict whose first SETITEMS batch of 1000 holds no snapshot key is read") {
    // CPython's pickler writes dict items in batches of 1000: 1,001 other keys first put
    // 'segments' and 'device_traces' in the second batch.
    std::string reference = testing::ModelText(
        ParseOrFail(testing::PythonPickle("load_json('formats/reader_2_1_full.json')")));
    for (int protocol : {2, 4, 5}) {
      CAPTURE(protocol);
      std::string bytes = testing::PythonPickle(
          "dict([('extra_%d' % i, i) for i in range(1001)] + "
          "list(load_json('formats/reader_2_1_full.json').items()))",
          protocol);
      auto input = io::FromMemory(bytes, "snap.pickle");
      auto snaps = parse::ParseSnapshots(*input);
      REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
      CHECK(testing::ModelText((*snaps)[0]) == reference);
    }
  }

  TEST_CASE("top-level keys split across SETITEM and SETITEMS type the dict by all its keys") {
    // {'note': 1} by SETITEM, then 'segments' and 'device_traces' by SETITEMS, then
    // 'allocator_settings' by a last SETITEM.
    PickleBuilder b(4);
    b.Op('}').Str("note").Int1(1).Op('s');
    b.Mark().Str("segments").Op(']').Str("device_traces").Op(']').Op(']');
    b.Op('}').Mark().Str("action").Str("alloc").Str("addr").Int4(4096).Str("size").Int2(512);
    b.Str("stream").Int1(0).Op('u');
    b.Op('a').Op('a').Op('u');  // inner.append(entry), outer.append(inner), SETITEMS
    b.Str("allocator_settings").Op('}').Str("expandable_segments").Op(0x88).Op('s').Op('s');
    b.Stop();
    Snapshot s = ParseOrFail(b.bytes());
    REQUIRE(s.events.size() == 1);
    CHECK(s.events[0].size == 512);
    CHECK(s.settings.expandable_segments);
  }
}

}  // namespace memsnap
