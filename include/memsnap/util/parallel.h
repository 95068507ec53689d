// Runs independent jobs on all cores. Used for many-rank inputs and replay sweeps.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
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
/// itself for different i. Results go wherever fn writes them (e.g. slot i of a vector). An
/// exception thrown by fn is rethrown here once every thread has stopped.
inline void ParallelFor(size_t n, const std::function<void(size_t)>& fn, size_t max_threads = 0) {
  size_t threads = ThreadsFor(static_cast<int>(std::min<size_t>(max_threads, INT32_MAX)));
  threads = std::min(threads, n);
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  // An exception (std::bad_alloc under `ulimit -v`) must not escape a thread, which would call
  // std::terminate: the first is kept, the other jobs are skipped, and it is rethrown here.
  std::exception_ptr error;
  std::mutex error_mu;
  std::vector<std::thread> pool;
  pool.reserve(threads);
  auto work = [&] {
    try {
      for (size_t i = next++; i < n; i = next++) fn(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mu);
      if (!error) error = std::current_exception();
      next = n;
    }
  };
  for (size_t t = 0; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had (an address-space limit): the others, or this one, go on
    }
  }
  if (pool.empty()) work();
  for (auto& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace memsnap
