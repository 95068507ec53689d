#include "memsnap/util/memory.h"

#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <numeric>
#include <thread>

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

  TEST_CASE("shared populating claims each range once, in order, within its end and limit") {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    const size_t pages = 16;
    void* map =
        mmap(nullptr, pages * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    REQUIRE(map != MAP_FAILED);
    const auto b = reinterpret_cast<uintptr_t>(map);
    SharedPopulate shared;
    shared.Reset(b + 1, b + 10 * page + 5);  // rounded inwards: pages 1 to 9
    CHECK(shared.claimed() == b + page);
    CHECK(shared.Claim(0, 2 * page, UINTPTR_MAX) == 2 * page);     // pages 1-2
    CHECK(shared.Claim(b + 5 * page, page, UINTPTR_MAX) == page);  // page 5: 3-4 skipped
    CHECK(shared.claimed() == b + 6 * page);
    CHECK(shared.Claim(b, page, UINTPTR_MAX) == page);           // behind: from the cursor
    CHECK(shared.Claim(0, 8 * page, b + 8 * page + 7) == page);  // up to the limit (page 7)
    CHECK(shared.Claim(0, 8 * page, UINTPTR_MAX) == 2 * page);   // up to the end (8-9)
    CHECK(shared.Claim(0, page, UINTPTR_MAX) == 0);              // nothing left
    // Resident exactly where claimed (MADV_POPULATE_WRITE needs Linux 5.14; skip before).
    std::vector<unsigned char> resident(pages);
    REQUIRE(mincore(map, pages * page, resident.data()) == 0);
    if ((resident[1] & 1) != 0) {
      const std::vector<int> want = {0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0};
      for (size_t i = 0; i < pages; ++i) CHECK_MESSAGE((resident[i] & 1) == want[i], "page ", i);
    }
    shared.Reset(b + 12 * page, b + 16 * page);
    shared.Stop();
    CHECK(shared.Claim(0, page, UINTPTR_MAX) == 0);
    munmap(map, pages * page);
  }

  TEST_CASE("a thread waiting for the horizon wakes when it moves and when populating stops") {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    std::vector<char> buffer(64 * page);
    const auto b = (reinterpret_cast<uintptr_t>(buffer.data()) + page - 1) & ~(page - 1);
    SharedPopulate shared;
    shared.Reset(b, b + 32 * page);
    shared.SetHorizon(b + 4 * page);
    shared.SetHorizon(b + 2 * page);  // never back
    CHECK(shared.horizon() == b + 4 * page);
    std::atomic<uintptr_t> bytes{0};
    std::atomic<int> wakes{0};
    std::thread waiter([&] {
      while (true) {
        const uintptr_t horizon = shared.horizon();
        while (const uintptr_t n = shared.Claim(0, page, horizon)) bytes += n;
        if (!shared.WaitPast(horizon)) return;
        ++wakes;
      }
    });
    while (shared.claimed() < b + 4 * page) std::this_thread::yield();
    shared.SetHorizon(b + 8 * page);
    while (shared.claimed() < b + 8 * page) std::this_thread::yield();
    shared.Stop();
    waiter.join();
    CHECK(bytes.load() == 8 * page);  // up to each horizon, never past it
    CHECK(wakes.load() >= 1);
    CHECK_FALSE(shared.WaitPast(shared.horizon()));  // after Stop: returns at once
  }

  TEST_CASE("threads populating one buffer together claim every page exactly once") {
    const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
    std::vector<char> buffer(300 * page);
    const auto b = reinterpret_cast<uintptr_t>(buffer.data());
    SharedPopulate shared;
    shared.Reset(b, b + buffer.size());
    std::atomic<uintptr_t> bytes{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        while (const uintptr_t n = shared.Claim(0, 3 * page, UINTPTR_MAX)) bytes += n;
      });
    }
    for (auto& t : threads) t.join();
    const uintptr_t first = (b + page - 1) & ~(page - 1);
    const uintptr_t last = (b + buffer.size()) & ~(page - 1);
    CHECK(shared.claimed() == last);
    CHECK(bytes.load() == last - first);  // an overlap would count a page twice
  }
}

}  // namespace
}  // namespace memsnap
