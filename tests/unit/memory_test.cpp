#include "memsnap/util/memory.h"

#include <doctest/doctest.h>

#include <numeric>

namespace memsnap {
namespace {

TEST_SUITE("memory") {
  TEST_CASE("a prefaulted vector keeps its contents while it grows and reallocates") {
    std::vector<uint64_t> v;
    v.reserve(3 << 20);
    Prefaulter prefault;
    for (uint64_t i = 0; i < (4u << 20); ++i) {  // past the reservation: one reallocation
      v.push_back(i);
      prefault.Touch(v);
    }
    CHECK(v.size() == (4u << 20));
    CHECK(std::accumulate(v.begin(), v.end(), uint64_t{0}) ==
          (uint64_t{4} << 20) * ((4u << 20) - 1) / 2);
  }
}

}  // namespace
}  // namespace memsnap
