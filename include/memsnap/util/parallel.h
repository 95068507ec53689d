// Runs independent jobs on all cores. Used for many-rank inputs and replay sweeps.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

namespace memsnap {

/// The threads a `--threads` value asks for: `requested`, or every core when it is 0.
inline size_t ThreadsFor(int requested) {
  if (requested > 0) return static_cast<size_t>(requested);
  return std::max(1u, std::thread::hardware_concurrency());
}

/// Calls fn(i) for every i in [0, n) on up to `max_threads` threads (0 = all cores) and returns
/// when all are done. Jobs are taken in index order; fn must be safe to run concurrently with
/// itself for different i. Results go wherever fn writes them (e.g. slot i of a vector).
inline void ParallelFor(size_t n, const std::function<void(size_t)>& fn, size_t max_threads = 0) {
  size_t threads = ThreadsFor(static_cast<int>(std::min<size_t>(max_threads, INT32_MAX)));
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

}  // namespace memsnap
