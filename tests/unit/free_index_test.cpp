// The simulator's free-block index against the ordered set it replaced (issue 37): random inserts,
// erases, best-fit searches and walks, with duplicate keys and several streams, compared step by
// step with a std::set of (stream, size, ptr); Shrink (a split's remainder re-keyed in place)
// against erase then insert.
#include "memsnap/sim/free_index.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace memsnap::sim {
namespace {

using Key = std::tuple<uint64_t, int64_t, uint64_t>;  // stream, size, ptr

std::vector<std::tuple<uint64_t, int64_t, uint64_t, uint32_t>> Contents(const FreeIndex& index) {
  std::vector<std::tuple<uint64_t, int64_t, uint64_t, uint32_t>> out;
  index.ForEach([&](uint64_t stream, const FreeIndex::Entry& e) {
    out.emplace_back(stream, e.size, e.ptr, e.ref);
  });
  return out;
}

}  // namespace

// Random inserts, erases, best-fit searches, walks and shrinks, compared step by step with a
// std::set. `pick_size(next)` draws a size.
template <class PickSize>
void CheckAgainstOrderedSet(uint64_t seed, PickSize&& pick_size) {
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  FreeIndex index;
  std::set<Key> model;
  std::map<Key, uint32_t> refs;
  const uint64_t streams[] = {0, 7, 3};
  for (int step = 0; step < 60000; ++step) {
    const uint64_t r = next() % 10;
    // Few distinct sizes and addresses: many ties and duplicate inserts.
    const uint64_t stream = streams[next() % 3];
    const int64_t size = pick_size(next);
    const uint64_t ptr = (next() % 300) * 512;
    // Grow to a few thousand blocks, then shrink, so chunks split and empty out.
    const bool grow = (step / 15000) % 2 == 0;
    if (r < (grow ? 6u : 3u)) {
      const auto ref = static_cast<uint32_t>(step);
      index.Insert(stream, size, ptr, ref);
      if (model.insert({stream, size, ptr}).second) refs[{stream, size, ptr}] = ref;
    } else if (r < 8) {
      index.Erase(stream, size, ptr);
      model.erase({stream, size, ptr});
      refs.erase({stream, size, ptr});
    } else {
      // Best fit and a walk up and down from it, erasing what was found half the time.
      FreeIndex::Cursor c = index.LowerBound(stream, size);
      auto it = model.lower_bound({stream, size, 0});
      const bool found = it != model.end() && std::get<0>(*it) == stream;
      REQUIRE(c.valid() == found);
      if (found) {
        CHECK(c->size == std::get<1>(*it));
        CHECK(c->ptr == std::get<2>(*it));
        CHECK(c->ref == refs[*it]);
        const uint64_t act = next() % 4;
        if (act < 2) {
          index.Erase(c);
          refs.erase(*it);
          model.erase(it);
          continue;
        }
        if (act == 2 && c->size > 512) {
          // What a split leaves: the found block under a smaller size (any address, so the key
          // may land in an earlier bucket or on a key already present), as erase then insert.
          const int64_t smaller =
              next() % 2 == 0 && c->size >= 1024
                  ? static_cast<int64_t>(1 + next() % (c->size / 512 - 1)) * 512
                  : std::max<int64_t>(1, c->size - 1 - static_cast<int64_t>(next() % 4096));
          const uint64_t at = (next() % 300) * 512;
          const auto ref = static_cast<uint32_t>(step);
          index.Shrink(c, smaller, at, ref);
          refs.erase(*it);
          model.erase(it);
          if (model.insert({stream, smaller, at}).second) refs[{stream, smaller, at}] = ref;
          REQUIRE(index.size() == model.size());
          continue;
        }
        FreeIndex::Cursor up = c;
        auto mit = it;
        for (int k = 0; k < 5; ++k) {
          const bool more = up.Next();
          ++mit;
          REQUIRE(more == (mit != model.end() && std::get<0>(*mit) == stream));
          if (!more) break;
          CHECK(up->ptr == std::get<2>(*mit));
          CHECK(up->size == std::get<1>(*mit));
        }
      }
      // Down from the best fit: the blocks of the stream below it, largest first.
      auto below = model.lower_bound({stream, size, 0});
      for (int k = 0; k < 5; ++k) {
        const bool more = c.Prev();
        const bool model_more = below != model.begin() && std::get<0>(*std::prev(below)) == stream;
        REQUIRE(more == model_more);
        if (!more) break;
        --below;
        CHECK(c->size == std::get<1>(*below));
        CHECK(c->ptr == std::get<2>(*below));
      }
    }
    REQUIRE(index.size() == model.size());
    if (step % 997 == 0) {
      std::vector<std::tuple<uint64_t, int64_t, uint64_t, uint32_t>> want;
      for (const Key& k : model) {
        want.emplace_back(std::get<0>(k), std::get<1>(k), std::get<2>(k), refs[k]);
      }
      CHECK(Contents(index) == want);
    }
  }
}

TEST_SUITE("free index") {
  TEST_CASE("the free-block index orders, finds and walks as an ordered set does") {
    // Few distinct sizes and addresses: many ties and duplicate inserts.
    CheckAgainstOrderedSet(7,
                           [](auto& next) { return static_cast<int64_t>(1 + next() % 40) * 512; });
  }

  TEST_CASE("blocks of every size class, from one byte to terabytes, keep the set's order") {
    // Exact classes below 2 MiB, 16 classes per power of two above, sizes that are not multiples
    // of 512 (a seeded segment's blocks come from the file), and sizes on the class boundaries:
    // several sizes share a class and are ordered inside it.
    CheckAgainstOrderedSet(11, [](auto& next) -> int64_t {
      switch (next() % 5) {
        case 0:
          return static_cast<int64_t>(1 + next() % 4200) * 512;  // across the 2 MiB edge
        case 1:
          return static_cast<int64_t>(1 + next() % 100000);  // odd sizes
        case 2:
          return (int64_t{1} << (21 + next() % 20)) + static_cast<int64_t>(next() % 3) - 1;
        case 3:
          return static_cast<int64_t>(next() % 64) << (20 + next() % 22);
        default:
          return (int64_t{1} << 21) + static_cast<int64_t>(next() % 8) * (int64_t{1} << 17);
      }
    });
  }

  TEST_CASE("the size classes are ordered as the sizes are") {
    int64_t prev_size = 0;
    uint32_t prev = FreeIndex::Bucket(0);
    for (int shift = 0; shift < 63; ++shift) {
      for (int64_t d : {-1, 0, 1}) {
        const int64_t size = (int64_t{1} << shift) + d;
        if (size <= prev_size) continue;
        const uint32_t b = FreeIndex::Bucket(size);
        CHECK(b >= prev);
        CHECK(b < FreeIndex::kBuckets);
        prev = b;
        prev_size = size;
      }
    }
    CHECK(FreeIndex::Bucket(INT64_MAX) < FreeIndex::kBuckets);
    CHECK(FreeIndex::Bucket((int64_t{1} << 21) - 512) + 1 == FreeIndex::Bucket(int64_t{1} << 21));
  }
}

}  // namespace memsnap::sim
