// CheckedCast: the narrowing the readers apply to counts and indices from the input
// (util/narrow.h).
#include "memsnap/util/narrow.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>

namespace memsnap {

TEST_SUITE("narrow") {
  TEST_CASE("a count that fits 32 bits is kept, one past it is refused, never wrapped") {
    constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
    CHECK(CheckedCast<uint32_t>(uint64_t{0}) == uint32_t{0});
    CHECK(CheckedCast<uint32_t>(kMax32) == std::numeric_limits<uint32_t>::max());
    CHECK_FALSE(CheckedCast<uint32_t>(kMax32 + 1).has_value());
    CHECK_FALSE(CheckedCast<uint32_t>(std::numeric_limits<size_t>::max()).has_value());
  }

  TEST_CASE("a device ordinal past 31 bits and a negative value are refused") {
    CHECK(CheckedCast<int32_t>(size_t{7}) == 7);
    CHECK_FALSE(CheckedCast<int32_t>(size_t{1} << 31).has_value());
    CHECK_FALSE(CheckedCast<uint32_t>(int64_t{-1}).has_value());
    CHECK_FALSE(CheckedCast<uint16_t>(65536).has_value());
  }
}

}  // namespace memsnap
