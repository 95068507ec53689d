// The string pool: ids, lookups and views that stay valid, across chunk boundaries and for
// strings of every length class (the first chunk is small and grows; long strings get their own).
#include "memsnap/model/string_pool.h"

#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace memsnap {

TEST_SUITE("string_pool") {
  TEST_CASE("strings of every length round-trip, first in a new pool or after others") {
    // Found by fuzz_pickle_paths on the first version of the growing chunks: an 11,273-byte
    // string as a pool's first was copied into a 4 KiB chunk.
    for (size_t before : {0, 1, 3000}) {
      for (size_t n : {1, 4095, 4096, 4097, 8192, 11273, 16383, 16384, 16385, 65536, 100000}) {
        CAPTURE(before);
        CAPTURE(n);
        StringPool pool;
        const std::string first(before, 'a');
        const StrId a = pool.Intern(first);
        const std::string text(n, static_cast<char>('b' + n % 20));
        const StrId b = pool.Intern(text);
        CHECK(pool.Get(b) == text);
        CHECK(pool.Get(a) == first);
        CHECK(pool.Find(text) == b);
        CHECK(pool.Intern(text) == b);
        // The chunks hold every byte stored (without ASan, the overflow showed only here).
        CHECK(pool.MemoryUsage() >= before + n);
      }
    }
  }

  TEST_CASE("views stay valid and ids dense while the pool grows over many chunks") {
    StringPool pool;
    CHECK(pool.size() == 1);  // the empty string
    CHECK(pool.Get(StringPool::kEmpty).empty());
    std::vector<std::string> texts;
    std::vector<std::string_view> views;
    for (int i = 0; i < 20000; ++i) {
      texts.push_back(std::to_string(i) + std::string(static_cast<size_t>(i % 97), 'x'));
      const StrId id = pool.Intern(texts.back());
      CHECK(id.v == static_cast<uint32_t>(i + 1));
      views.push_back(pool.Get(id));
    }
    for (size_t i = 0; i < texts.size(); ++i) REQUIRE(views[i] == texts[i]);
    CHECK(pool.MemoryUsage() > 20000 * 50);
    CHECK(!pool.Find("not there").valid());
  }
}

}  // namespace memsnap
