// A trace entry holds a 16-bit StreamId; the stream values live once in the snapshot's StreamTable
// (docs/design.md, "The model"). Interning must be exact whichever reader or path decodes an entry,
// and a file with more distinct streams than a table holds is an error naming the file, never a
// silent truncation.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "memsnap/writer/snapshot_writer.h"
#include "pickle_paths.h"
#include "test_util.h"

namespace memsnap {
namespace {

// The stream of entry i of the files below: 0 for the first, then pointer-like values and values
// of 2^63 and above (written as unsigned), all distinct.
int64_t StreamValue(int64_t i) {
  if (i == 0) return 0;
  if (i % 2 == 0) return 0x7f0000000000 + 256 * i;
  return static_cast<int64_t>(~uint64_t{0} - static_cast<uint64_t>(i));
}

// A snapshot of `n` alloc entries on `n` distinct streams, as a pickle (protocol 4) or JSON.
std::string ManyStreams(int n, bool json) {
  return testing::RunPython(
      "from pyhelpers import *\n"
      "def stream(i):\n"
      "    return 0 if i == 0 else 0x7f0000000000 + 256 * i if i % 2 == 0 else 2**64 - 1 - i\n"
      "snap = {'segments': [], 'device_traces': [[dict(action='alloc', addr=4096 * (i + 1),"
      " size=512, stream=stream(i), time_us=i) for i in range(" +
      std::to_string(n) + ")]]}\n" +
      (json ? "sys.stdout.write(json.dumps(snap))\n"
            : "sys.stdout.buffer.write(pickle.dumps(snap, protocol=4))\n"));
}

void CheckStreams(const Snapshot& s, int n) {
  REQUIRE(s.events.size() == static_cast<size_t>(n));
  CHECK(s.streams.size() == static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (s.StreamOf(s.events[i]) != StreamValue(i)) {
      FAIL_CHECK("entry " << i << ": stream " << s.StreamOf(s.events[i]) << ", want "
                          << StreamValue(i));
      return;
    }
  }
}

}  // namespace

TEST_SUITE("streams") {
  TEST_CASE("a StreamTable gives each value one id, stream 0 id 0, and refuses the 65,536th") {
    StreamTable t;
    CHECK(t.size() == 1);
    CHECK(t.Intern(0) == StreamTable::kDefault);
    CHECK(TraceEvent{}.stream == StreamTable::kDefault);  // a default entry is on stream 0
    // The first values are found by a scan, the rest through the index: the same ids either way.
    std::vector<StreamId> ids;
    for (int64_t i = 1; i < 100; ++i) ids.push_back(t.Intern(StreamValue(i)));
    for (int64_t i = 1; i < 100; ++i) {
      CAPTURE(i);
      CHECK(ids[i - 1] == StreamId(static_cast<uint16_t>(i)));
      CHECK(t.Intern(StreamValue(i)) == ids[i - 1]);
      CHECK(t.Get(ids[i - 1]) == StreamValue(i));
    }
    for (int64_t v = 1; t.size() < StreamTable::kMaxStreams; ++v) REQUIRE(t.Intern(v).valid());
    CHECK(t.size() == 65535);
    CHECK_FALSE(t.Intern(-12345).valid());  // one more: refused, the table unchanged
    CHECK(t.size() == 65535);
    CHECK(t.Intern(StreamValue(50)) == ids[49]);  // values it holds are still found
    CHECK(t.Get(StreamId(65534)) == 65535 - 100);
  }

  TEST_CASE("65,535 distinct streams read and convert back exactly, in both readers") {
    const int n = 65535;
    const Snapshot from_pickle = testing::ParseOrFail(ManyStreams(n, false), "many.pickle");
    CheckStreams(from_pickle, n);
    CheckStreams(testing::ParseOrFail(ManyStreams(n, true), "many.json"), n);
    // convert: the values go back into the file, whatever ids they had in the model.
    std::ostringstream pickle, json;
    REQUIRE(writer::WriteSnapshotPickle(from_pickle, {}, pickle).ok());
    REQUIRE(writer::WriteSnapshotJson(from_pickle, {}, json).ok());
    CheckStreams(testing::ParseOrFail(pickle.str(), "back.pickle"), n);
    CheckStreams(testing::ParseOrFail(json.str(), "back.json"), n);
  }

  TEST_CASE("one stream more than a table holds is an error naming the file and the entry") {
    const std::string pickle = ManyStreams(65536, false);
    const std::string json = ManyStreams(65536, true);
    std::string err = testing::ParseError(pickle, "many.pickle");
    CHECK_MESSAGE(err.rfind("many.pickle: offset ", 0) == 0, err);
    CHECK_MESSAGE(err.find("more than 65535 distinct streams") != std::string::npos, err);
    err = testing::ParseError(json, "many.json");
    CHECK_MESSAGE(err.rfind("many.json: /device_traces/0/65535/stream: more than 65535", 0) == 0,
                  err);
    // The parallel decoder leaves the entry to the sequential one, which reports it the same way.
    for (size_t chunk : {size_t{1}, size_t{1} << 16}) {
      CAPTURE(chunk);
      std::string diff = testing::CompareParallelDecoding(pickle, 3, chunk, nullptr, true);
      CHECK_MESSAGE(diff == "", diff);
      CHECK(testing::DecodedPickleText(pickle, true).rfind("error: in.pickle: offset ", 0) == 0);
    }
    // The CLI: exit 2, the file named, nothing on stdout.
    const std::string path = testing::TempDir() + "/many_streams.pickle";
    std::ofstream(path, std::ios::binary) << pickle;
    testing::RunResult r = testing::RunMemsnap({"summary", path});
    CHECK(r.exit_code == 2);
    CHECK_MESSAGE(r.err.find(path + ": offset ") != std::string::npos, r.err);
    CHECK(r.err.find("distinct streams") != std::string::npos);
    CHECK(r.out.empty());
  }
}

}  // namespace memsnap
