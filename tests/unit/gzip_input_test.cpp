// gzip input (src/io/input.cpp Gunzip): each container gzipped, truncation, corruption, the bomb
// cap, and gzip inside gzip.
#include <doctest/doctest.h>

#include "memsnap/io/input.h"
#include "model_text.h"
#include "test_util.h"

namespace memsnap {
namespace {

std::string Gzip(const std::string& python_bytes_expr) {
  return testing::RunPython(
      "from pyhelpers import *\nimport gzip\nsys.stdout.buffer.write(gzip.compress(" +
      python_bytes_expr + "))\n");
}

}  // namespace

TEST_SUITE("gzip_input") {
  TEST_CASE("gzip of a pickle, of JSON and of a bare list read like the plain files") {
    std::string pickle = testing::PythonPickle("load_json('formats/reader_2_1_full.json')", 4);
    Snapshot plain = testing::ParseOrFail(pickle);
    Snapshot gz = testing::ParseOrFail(
        Gzip("pickle.dumps(load_json('formats/reader_2_1_full.json'), protocol=4)"));
    CHECK(gz.source.gzip);
    CHECK(testing::ModelText(gz) == testing::ModelText(plain));
    Snapshot json_gz =
        testing::ParseOrFail(Gzip("open(TESTDATA + '/formats/reader_2_1_full.json', 'rb').read()"));
    CHECK(json_gz.source.container == ContainerFormat::kJson);
    CHECK(testing::ModelText(json_gz) == testing::ModelText(plain));
    Snapshot list_gz = testing::ParseOrFail(
        Gzip("open(TESTDATA + '/formats/reader_1_13_list.json', 'rb').read()"));
    CHECK(list_gz.source.bare_segment_list);
  }

  TEST_CASE("truncated gzip at every offset is an error naming the file") {
    std::string gz = Gzip("pickle.dumps(load_json('formats/reader_2_0_history.json'), protocol=2)");
    for (size_t n = 2; n < gz.size(); ++n) {
      CAPTURE(n);
      std::string err = testing::ParseError(gz.substr(0, n), "cut.gz");
      REQUIRE(!err.empty());
      CHECK(err.rfind("cut.gz: ", 0) == 0);
    }
  }

  TEST_CASE("corrupt gzip data reports an offset") {
    std::string gz = Gzip("b'x' * 100000");
    gz[12] = static_cast<char>(gz[12] ^ 0x55);
    gz[13] = static_cast<char>(gz[13] ^ 0x55);
    auto out = io::Gunzip(gz, "bad.gz");
    REQUIRE_FALSE(out.ok());
    CHECK(std::string(out.status().message()).rfind("bad.gz: ", 0) == 0);
  }

  TEST_CASE("a gzip bomb is refused at the output cap") {
    std::string gz = Gzip("b'\\0' * (64 << 20)");
    CHECK(gz.size() < 200000);
    auto out = io::Gunzip(gz, "bomb.gz", 8 << 20);
    REQUIRE_FALSE(out.ok());
    CHECK(std::string(out.status().message()) ==
          "bomb.gz: gzip data inflates beyond 8388608 bytes; refusing");
    auto exact = io::Gunzip(gz, "bomb.gz", 64 << 20);
    REQUIRE(exact.ok());
    CHECK(exact->size() == (64u << 20));
  }

  TEST_CASE("a lying size trailer is caught by zlib's length check, without a 2 GB reserve") {
    std::string gz = Gzip("b'abc' * 1000");
    gz.replace(gz.size() - 4, 4, std::string("\xff\xff\xff\x7f", 4));
    auto out = io::Gunzip(gz, "lie.gz");
    REQUIRE_FALSE(out.ok());
    CHECK(std::string(out.status().message()).find("lie.gz: offset ") == 0);
    CHECK(std::string(out.status().message()).find("incorrect length check") != std::string::npos);
  }

  TEST_CASE("gzip inside gzip is refused") {
    std::string inner = Gzip("b'[]'");
    std::string outer = testing::RunPython(
        "import gzip\nsys.stdout.buffer.write(gzip.compress(gzip.compress(b'[]')))\n");
    CHECK(testing::ParseError(outer, "twice.gz") == "twice.gz: gzip inside gzip");
    CHECK(testing::ParseError(inner, "once.gz") == "");
  }
}

}  // namespace memsnap
