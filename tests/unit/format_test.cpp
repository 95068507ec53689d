// Human-readable figures (util/format.h): the units a reader meets in every command's output.
#include "memsnap/util/format.h"

#include <doctest/doctest.h>

namespace memsnap {
namespace {

TEST_SUITE("format") {
  TEST_CASE("a duration reads in the unit that suits its length, from microseconds to days") {
    CHECK(FormatDuration(350) == "350 us");
    CHECK(FormatDuration(25'300) == "25.3 ms");
    CHECK(FormatDuration(1'500'000) == "1.500 s");
    CHECK(FormatDuration(612'000'000) == "10 min 12.000 s");
    CHECK(FormatDuration(int64_t{2} * 3'600'000'000 + 5 * 60'000'000) == "2 h 5 min");
    CHECK(FormatDuration(int64_t{151} * 86'400'000'000 + 5 * 3'600'000'000) == "151.2 days");
    CHECK(FormatDuration(-25'300) == "25.3 ms");  // a length: no sign
  }

  TEST_CASE("a time since the start of a trace carries its sign") {
    CHECK(FormatRelativeTime(350) == "+350 us");
    CHECK(FormatRelativeTime(-1'500'000) == "-1.500 s");
    CHECK(FormatRelativeTime(int64_t{-9} * 86'400'000'000) == "-9.0 days");
  }

  TEST_CASE("a size set beside another does not read as it when the two differ") {
    constexpr int64_t kGiB = int64_t{1} << 30;
    const int64_t card = 11 * kGiB;
    CHECK(FormatBytes(card + 28 * (kGiB >> 10)) == "11.0 GiB");
    CHECK(FormatBytesApart(card + 28 * (kGiB >> 10), card) == "11.03 GiB");
    CHECK(FormatBytesApart(card + 2 * (kGiB >> 10), card) == "11.002 GiB");
    CHECK(FormatBytesApart(card, card) == "11.0 GiB");             // the same size
    CHECK(FormatBytesApart(card + kGiB / 2, card) == "11.5 GiB");  // already apart
    CHECK(FormatBytesApart(card - 40 * (kGiB >> 10), card) == "10.96 GiB");
  }
}

}  // namespace
}  // namespace memsnap
