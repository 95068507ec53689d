// What a directory of ranks may skip and what it must report (issue 33): an input whose content is
// not a snapshot at all is parse::IsNotASnapshot; a snapshot that fails to read (truncated,
// corrupt, empty) is not, so a CI gate over the directory reports it instead of passing on the
// others.
#include <doctest/doctest.h>

#include <string>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "test_util.h"

namespace memsnap {
namespace {

absl::Status ReadError(const std::string& bytes) {
  auto input = io::FromMemory(bytes, "rank.bin");
  auto snaps = parse::ParseSnapshots(*input);
  REQUIRE_FALSE(snaps.ok());
  const std::string message(snaps.status().message());
  CHECK_MESSAGE(message.rfind("rank.bin: ", 0) == 0, message);
  return snaps.status();
}

std::string Pickle() {
  return testing::PythonPickle("load_json('formats/reader_2_1_full.json')", 4);
}

}  // namespace

TEST_SUITE("not_a_snapshot") {
  TEST_CASE("text, JSON without snapshot keys and an HTML page without a payload are no snapshot") {
    CHECK(parse::IsNotASnapshot(ReadError("ranks of run 42\n")));
    CHECK(parse::IsNotASnapshot(ReadError("{\"world_size\": 8, \"ranks\": [0, 1]}")));
    CHECK(parse::IsNotASnapshot(ReadError("42")));
    // The corpus's manifest.json: a list of files, not the 1.13 list of segments.
    CHECK(parse::IsNotASnapshot(ReadError("[{\"file\": \"a.pickle\", \"blocks\": 3}]")));
    CHECK(parse::IsNotASnapshot(ReadError("[1, 2]")));
    CHECK(parse::IsNotASnapshot(ReadError("<html><body>a report</body></html>")));
  }

  TEST_CASE("a truncated pickle, broken JSON and an empty file are snapshots that failed to read") {
    const std::string whole = Pickle();
    CHECK_FALSE(parse::IsNotASnapshot(ReadError(whole.substr(0, whole.size() / 2))));
    CHECK_FALSE(parse::IsNotASnapshot(ReadError(whole.substr(0, 3))));
    CHECK_FALSE(parse::IsNotASnapshot(ReadError("{\"segments\": [{\"total_size\": ")));
    CHECK_FALSE(parse::IsNotASnapshot(ReadError("{not json")));
    // A 1.13 list of segments with a broken segment is a snapshot that failed to read.
    CHECK_FALSE(parse::IsNotASnapshot(ReadError("[{\"total_size\": 1024, \"blocks\": 7}]")));
    CHECK_FALSE(parse::IsNotASnapshot(ReadError("")));
    CHECK_FALSE(parse::IsNotASnapshot(ReadError("\x1f\x8b\x08\x00")));  // gzip cut short
  }

  TEST_CASE("gzip of a text file is no snapshot, as the text is not") {
    const std::string gz = testing::RunPython(
        "import gzip, sys\nsys.stdout.buffer.write(gzip.compress(b'ranks of run 42\\n'))\n");
    CHECK(parse::IsNotASnapshot(ReadError(gz)));
  }
}

}  // namespace memsnap
