// InputSource::Peek (memsnap/io/input.h): the bytes of a range, read with pread for a mapped file
// (the parallel pickle decoder's plan reads every FRAME header with it) and from memory otherwise.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "memsnap/io/input.h"
#include "test_util.h"

namespace memsnap {
namespace {

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + i / 4096) & 0xff);
  return s;
}

void CheckPeeks(const io::InputSource& in, const std::string& want) {
  REQUIRE(in.bytes() == want);
  for (size_t offset : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{70000},
                        want.size() - 9, want.size() - 1}) {
    const size_t n = std::min<size_t>(9, want.size() - offset);
    char got[9] = {};
    in.Peek(offset, got, n);
    CHECK_MESSAGE(std::string(got, n) == want.substr(offset, n), "offset ", offset);
  }
}

TEST_SUITE("input") {
  TEST_CASE("peeking at a mapped file gives the bytes its mapping holds, up to its last byte") {
    const std::string bytes = Pattern(3 * 65536 + 123);
    const std::string path = testing::TempDir() + "/peek.bin";
    {
      std::ofstream f(path, std::ios::binary);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    auto in = io::OpenFile(path);
    REQUIRE(in.ok());
    CheckPeeks(**in, bytes);
  }

  TEST_CASE("peeking at bytes in memory gives the same bytes") {
    const std::string bytes = Pattern(100000);
    CheckPeeks(*io::FromMemory(bytes), bytes);
    CheckPeeks(*io::FromString(bytes, "owned"), bytes);
  }
}

}  // namespace
}  // namespace memsnap
