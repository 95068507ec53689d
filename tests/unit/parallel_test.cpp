// ParallelFor and ThreadsFor (util/parallel.h): what `--threads N` promises.
#include "memsnap/util/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "doctest/doctest.h"

namespace memsnap {
namespace {

// Runs n jobs that each hold their slot for a moment; returns the most that ran at once.
size_t MostAtOnce(size_t n, size_t max_threads) {
  std::atomic<size_t> running{0};
  std::atomic<size_t> most{0};
  ParallelFor(
      n,
      [&](size_t) {
        const size_t now = ++running;
        size_t seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        --running;
      },
      max_threads);
  return most.load();
}

TEST_CASE("--threads 0 means every core, and any other value is taken as given") {
  CHECK(ThreadsFor(0) == std::max(1u, std::thread::hardware_concurrency()));
  CHECK(ThreadsFor(1) == 1);
  CHECK(ThreadsFor(7) == 7);
}

TEST_CASE("ParallelFor runs every job once and never more of them at once than it was allowed") {
  std::vector<std::atomic<int>> ran(40);
  ParallelFor(
      ran.size(), [&](size_t i) { ++ran[i]; }, 3);
  for (const auto& r : ran) CHECK(r.load() == 1);
  CHECK(MostAtOnce(12, 1) == 1);
  CHECK(MostAtOnce(12, 3) <= 3);
  CHECK(MostAtOnce(12, 3) >= 2);  // 5 ms each: the threads overlap even on a busy machine
}

}  // namespace
}  // namespace memsnap
