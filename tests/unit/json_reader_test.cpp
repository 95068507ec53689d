// The JSON reader: known answers on hand-written fixtures, the same model as the pickle decoder
// for the same data (fixtures and the whole real corpus), and error messages with key paths.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "test_util.h"

namespace memsnap {
namespace {

using testing::ParseError;
using testing::ParseOrFail;

std::string ReaderFixture(const std::string& name) {
  return testing::ReadFileOrFail(testing::TestdataPath("formats/" + name));
}

}  // namespace

TEST_SUITE("json_reader") {
  TEST_CASE("a 2.1+ JSON snapshot with every optional key reads into the model") {
    Snapshot s = ParseOrFail(ReaderFixture("reader_2_1_full.json"), "full.json");
    CHECK(s.source.container == ContainerFormat::kJson);
    REQUIRE(s.segments.size() == 2);
    REQUIRE(s.blocks.size() == 4);
    CHECK(s.segments[0].address == 139637976727552u);
    CHECK(s.segments[0].is_small);
    CHECK(s.segments[1].device == 1);
    CHECK(s.segments[1].stream == 123288560);
    CHECK(s.segments[1].pool == PoolId{1, 7});
    CHECK(s.segments[1].is_expandable);
    CHECK(s.stacks.Get(s.segments[1].stack).size() == 1);  // frames written after blocks
    // 2^64-1 line is "unknown line"
    auto stack = s.stacks.Get(s.blocks[0].stack);
    REQUIRE(stack.size() == 2);
    CHECK(s.frames.Get(stack[0]).line == 42);
    CHECK(s.frames.Get(stack[1]).line == kUnknownLine);
    CHECK(s.blocks[1].state == BlockState::kActivePendingFree);
    CHECK(s.blocks[2].state == BlockState::kInactive);
    CHECK(s.blocks[2].requested_size == 0);  // stale on inactive blocks
    CHECK(s.blocks[2].stack == StackTable::kEmpty);
    REQUIRE(s.traces.size() == 3);
    CHECK(s.traces[0].size() == 6);
    CHECK(s.traces[1].size() == 0);
    CHECK(s.traces[2].device == 2);
    const TraceEvent& oom = s.events[3];
    CHECK(oom.action == Action::kOom);
    CHECK(oom.addr == 1048576);  // device_free
    CHECK(s.events[2].action == Action::kSnapshot);
    CHECK_FALSE(s.events[2].stack.valid());  // no frames key: absent, not empty
    CHECK(s.events[0].time_us == 1732000000000000);
    CHECK(s.events[5].action == Action::kUnknown);
    // extras: N/A and "" record nothing; a real compile context and a dict user_metadata do
    REQUIRE(s.event_extras.size() == 2);
    CHECK(s.strings.Get(s.event_extras[0].compile_context) == "Torch-Compiled Region: 0/1");
    CHECK(s.strings.Get(s.event_extras[0].user_metadata) == "{step: 3, phase: fwd}");
    CHECK(s.event_extras[1].event == 4);
    CHECK(s.event_extras[1].pool == PoolId{0, 0});
    // settings
    CHECK(s.settings.present);
    CHECK(s.settings.conf == "expandable_segments:True");
    CHECK(s.settings.max_split_size == -1);
    CHECK(s.settings.garbage_collection_threshold == 0.5);
    CHECK(s.settings.graph_capture_record_stream_reuse);
    CHECK(s.settings.roundup_power2_divisions[1] == 4);
    CHECK(s.settings.roundup_power2_divisions[10] == 8);
    CHECK(s.settings.roundup_power2_divisions[15] == 2);
    CHECK(s.settings.trace_alloc_overflowed == true);
    CHECK(s.settings.trace_alloc_max_entries == 100000);
    REQUIRE(s.annotations.size() == 2);
    CHECK(s.strings.Get(s.annotations[1].stage) == "END");
    CHECK(s.diagnostics.warnings.size() == 1);  // the unknown action
  }

  TEST_CASE("2.0-era blocks take address, requested size and stack from history[0]") {
    Snapshot s = ParseOrFail(ReaderFixture("reader_2_0_history.json"));
    CHECK(s.source.legacy_history);
    REQUIRE(s.blocks.size() == 2);
    CHECK(s.blocks[0].address == 1048576000u);
    CHECK(s.blocks[0].requested_size == 1000);
    REQUIRE(s.stacks.Get(s.blocks[0].stack).size() == 1);
    CHECK(s.blocks[1].address == 1048577024u);
    CHECK(s.blocks[1].requested_size == 0);
    CHECK(s.events[0].time_us == kNoTime);
    CHECK(s.diagnostics.empty());
  }

  TEST_CASE("a bare top-level list is the segments alone, addresses from offsets") {
    Snapshot s = ParseOrFail(ReaderFixture("reader_1_13_list.json"));
    CHECK(s.source.bare_segment_list);
    CHECK(s.traces.empty());
    REQUIRE(s.blocks.size() == 2);
    CHECK(s.blocks[1].address == 2097152000u + 512);
    CHECK(s.blocks[1].stack.valid() == false);
  }

  TEST_CASE("'traces' is accepted as an alias of 'device_traces'") {
    Snapshot s = ParseOrFail(ReaderFixture("reader_traces_alias.json"));
    REQUIRE(s.traces.size() == 1);
    CHECK(s.traces[0].size() == 3);
  }

  TEST_CASE("integers above 2^53 are exact and never go through double") {
    Snapshot s = ParseOrFail(
        R"({"segments": [], "device_traces": [[{"action": "alloc", "addr": 9007199254740993,)"
        R"( "size": 9223372036854775807, "stream": 18446744073709551615, "time_us": 9007199254740995}]]})");
    CHECK(s.events[0].addr == 9007199254740993u);
    CHECK(s.events[0].size == kMaxBytes);  // a size beyond 1 TiB is clamped, with a warning
    REQUIRE(s.diagnostics.warnings.size() == 1);
    CHECK(s.diagnostics.warnings[0] ==
          "/device_traces/0/0/size: 9223372036854775807 is not a trace entry size PyTorch can "
          "write (0 to 1 TiB); clamped into that range");
    CHECK(static_cast<uint64_t>(s.StreamOf(s.events[0])) == 18446744073709551615u);
    CHECK(s.events[0].time_us == 9007199254740995);
  }

  TEST_CASE("errors carry a JSON pointer to the offending value") {
    CHECK(ParseError(R"({"segments": [{"blocks": [{"size": "12", "state": "inactive"}]}]})",
                     "snap.json") ==
          "snap.json: /segments/0/blocks/0/size: expected integer, got string");
    CHECK(ParseError(R"({"segments": [], "device_traces": [[{"action": 3}]]})", "s.json") ==
          "s.json: /device_traces/0/0/action: expected string, got integer");
    CHECK(ParseError(R"({"segments": [{"blocks": [{"size": 1}]}]})", "s.json") ==
          "s.json: /segments/0/blocks/0: block has no 'state'");
    CHECK(ParseError(R"({"segments": [{"blocks": [{"state": "weird"}]}]})", "s.json") ==
          "s.json: /segments/0/blocks/0/state: unknown block state 'weird'");
    CHECK(ParseError(R"({"segments": 5})", "s.json") ==
          "s.json: /segments: expected array, got integer");
    // An object without total_size is not a segment (the pickle decoder agrees), so a file of
    // empty objects cannot pass for millions of segments.
    CHECK(ParseError(R"([{}, {}])", "s.json") == "s.json: /0: segment has no 'total_size'");
    CHECK(ParseError(R"({"a/b~": 1})", "s.json") ==
          "s.json: /: the JSON object is not a snapshot (no 'segments' or 'device_traces' key)");
    CHECK(ParseError(R"("hello")", "s.json").find("") == 0);
    CHECK(
        ParseError(
            R"({"segments": [], "device_traces": [[{"action": "alloc", "frames": [{"name": "x"}]}]]})",
            "s.json") ==
        "s.json: /device_traces/0/0/frames/0: expected a frame (an object "
        "with 'filename' and 'line')");
    CHECK(ParseError(R"({"segments": [{"segment_pool_id": [1]}]})", "s.json") ==
          "s.json: /segments/0/segment_pool_id: expected a pair of integers, got array");
    CHECK(ParseError(R"({"segments": [], "device_traces": [[{"size": 1}]]})", "s.json") ==
          "s.json: /device_traces/0/0: trace entry has no 'action'");
  }

  TEST_CASE("invalid JSON, NaN and integers beyond 64 bits are clear errors") {
    CHECK(ParseError(R"({"segments": [)", "s.json").rfind("s.json: invalid JSON: ", 0) == 0);
    CHECK(ParseError(
              R"({"segments": [], "allocator_settings": {"garbage_collection_threshold": NaN}})",
              "s.json")
              .rfind("s.json: invalid JSON: ", 0) == 0);
    std::string big =
        ParseError(R"({"segments": [{"address": 123456789012345678901234567890}]})", "s.json");
    CHECK(big.rfind("s.json: ", 0) == 0);
    CHECK_FALSE(big.empty());
  }

  TEST_CASE("duplicated keys are applied in order: the last one wins") {
    Snapshot s = ParseOrFail(R"({"segments": [{"device": 0, "total_size": 1, "total_size": 2}]})");
    CHECK(s.segments[0].total_size == 2);
  }

  TEST_CASE("JSON input that needs no padded copy reads the same as one that does") {
    std::string text = ReaderFixture("reader_2_1_full.json");
    std::string padded = text;
    padded.reserve(text.size() + 4096);
    auto a = io::FromMemory(text, "a");
    auto b = io::FromString(std::move(padded), "b");
    CHECK(b->padding() >= 64);
    auto sa = parse::ParseSnapshots(*a);
    auto sb = parse::ParseSnapshots(*b);
    REQUIRE(sa.ok());
    REQUIRE(sb.ok());
    CHECK(testing::ModelText((*sa)[0]) == testing::ModelText((*sb)[0]));
  }

  TEST_CASE("JSON and pickle of each hand-written fixture give the same model") {
    for (const char* name : {"reader_2_1_full.json", "reader_2_0_history.json",
                             "reader_1_13_list.json", "reader_traces_alias.json"}) {
      CAPTURE(name);
      Snapshot from_json = ParseOrFail(ReaderFixture(name));
      for (int protocol : {2, 4}) {
        Snapshot from_pickle = ParseOrFail(
            testing::PythonPickle(std::string("load_json('formats/") + name + "')", protocol));
        CHECK(testing::ModelText(from_json) == testing::ModelText(from_pickle));
        CHECK(testing::SummaryText(from_json) == testing::SummaryText(from_pickle));
      }
    }
  }

  TEST_CASE("JSON and pickle of every corpus snapshot give identical summaries and models" *
            doctest::test_suite("corpus")) {
    // One file at a time (the JSON of a 4 MB pickle is about 100 MB: frames are no longer shared),
    // deleted after use. A find_class that refuses everything: corpus files are read as data only.
    for (const std::string& path : testing::CorpusFiles()) {
      CAPTURE(path);
      std::string json_path = testing::TempDir() + "/corpus.json";
      testing::RunPython(
          "class Safe(pickle.Unpickler):\n"
          "    def find_class(self, module, name):\n"
          "        raise pickle.UnpicklingError('refused ' + module + '.' + name)\n"
          "with open('" +
          path +
          "', 'rb') as f: data = Safe(f).load()\n"
          "with open('" +
          json_path + "', 'w') as f: json.dump(data, f, separators=(',', ':'))\n");
      auto from_pickle = parse::ReadSnapshot(path);
      REQUIRE(from_pickle.ok());
      auto from_json = parse::ReadSnapshot(json_path);
      REQUIRE_MESSAGE(from_json.ok(), from_json.status().message());
      CHECK(testing::SummaryText(*from_json) == testing::SummaryText(*from_pickle));
      CHECK(testing::ModelText(*from_json) == testing::ModelText(*from_pickle));
      std::remove(json_path.c_str());
    }
  }
}

}  // namespace memsnap
