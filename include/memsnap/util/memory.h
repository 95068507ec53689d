// Large per-event vectors fault in 4 KiB pages one by one, which costs a third of the time of a
// pass over a multi-million-event trace. Faulting them in with a few large MADV_POPULATE_WRITE
// calls instead saves most of the per-fault overhead. Transparent huge pages would save more on
// a quiet machine but are not used: in a VM they come from large blocks of guest memory the host
// may not back yet (or got back), and their first touch then costs far more; measured again on
// 2026-11-25 on a fresh VM: 72 MiB in 3-40 ms with huge pages against 86-143 ms without, but
// 275-800 ms in 5 of 16 runs (docs/BENCHMARKS.md, "issue 19, 2026-11-25").
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace memsnap {

/// The machine's physical memory in bytes (sysconf), 0 when unknown.
uint64_t PhysicalMemoryBytes();
/// The memory budget when --max-memory is not given: 75% of physical memory (0, no budget, when
/// that is unknown).
uint64_t DefaultMemoryBudget();

/// Tells the C library to keep the memory the process frees instead of handing it back to the
/// kernel: memsnap is a batch process, and what the reader frees (its memo table) is needed again
/// moments later by the analysis (the timeline's curve), which would otherwise fault it back in
/// page by page (about 5 ms of the 2.2M-event benchmark's timeline; docs/BENCHMARKS.md). Peak
/// memory is unchanged on real and generated snapshots; inputs whose vectors grow by doubling
/// keep the outgrown buffers resident (hostile shapes: up to 1.25x; docs/reader.md), and the
/// process does not shrink before it exits. Call it first thing in main; a no-op outside glibc.
void KeepFreedMemory();

/// Asks for the cache line `bytes` past `p` (to write it when kWrite): for a pass over memory that
/// the hardware prefetcher does not follow across 4 KiB pages (the mapped input, events written
/// on another core). A prefetch never faults, past the end of a buffer included.
template <bool kWrite = false>
[[gnu::always_inline]] inline void PrefetchAhead(const void* p, size_t bytes) {
  __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(p) + bytes),
                     kWrite ? 1 : 0);
}

/// MADV_DONTNEED over the whole pages inside [data, data + bytes): their contents become zero.
/// The memory must be owned by the caller (allocated, not yet freed).
void DropPages(const void* data, size_t bytes);

/// Frees `v`'s storage, first dropping the whole pages inside it from the resident set
/// (MADV_DONTNEED). For buffers that live only during a read: with KeepFreedMemory the allocator
/// keeps freed memory resident, which would count them against the peak twice.
template <class T>
void FreeAndDropPages(std::vector<T>& v) {
  DropPages(v.data(), v.capacity() * sizeof(T));
  std::vector<T>().swap(v);
}

/// One buffer's pages populated (MADV_POPULATE_WRITE) from several threads: each Claim takes the
/// next range past what was claimed so far, so no page is populated twice and the threads never
/// wait for each other. The parallel pickle decoder's workers populate the model's arrays ahead of
/// the sequential decoder with it, which moves that kernel work (a third of the sequential
/// decoder's time on the 2.2 M-event benchmark) off the thread that decides the wall time. Pages
/// a thread writes before they are claimed simply fault in as usual; populating never changes
/// what memory holds.
class SharedPopulate {
 public:
  /// Only [begin, end) (page-rounded inwards) is ever populated; nothing before Reset.
  void Reset(uintptr_t begin, uintptr_t end);
  /// Stops every later Claim (the buffer is about to move, or is done) and wakes WaitPast.
  void Stop();
  /// Claims the range from the first unclaimed byte at or after `from` (page-rounded down), of at
  /// most `bytes`, below `limit` and the end given to Reset, and populates it. Returns the bytes
  /// claimed (0: none left below the limit).
  uintptr_t Claim(uintptr_t from, uintptr_t bytes, uintptr_t limit);
  /// The end of what is claimed so far, by every thread.
  uintptr_t claimed() const { return next_.load(std::memory_order_relaxed); }
  /// How far the buffer's owner wants it populated for now: the others populate only below it,
  /// so that pages are not resident long before they are written (peak memory).
  uintptr_t horizon() const { return horizon_.load(std::memory_order_relaxed); }
  /// Moves the horizon forward (never back) and wakes WaitPast.
  void SetHorizon(uintptr_t h);
  /// Blocks until the horizon is past `seen` or Stop; false after Stop.
  bool WaitPast(uintptr_t seen);

 private:
  std::atomic<uintptr_t> next_{0};
  std::atomic<uintptr_t> end_{0};
  std::atomic<uintptr_t> horizon_{0};
};

/// Pre-faults a growing vector's capacity ahead of its end, a few MiB at a time, with
/// MADV_POPULATE_WRITE: one system call per chunk instead of one page fault per 4 KiB page.
/// Call it after appending; it does nothing until the end crosses the populated mark. Where the
/// kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) pages fault as usual.
class Prefaulter {
 public:
  /// Faults in `step` bytes at a time (4 MiB: one system call per 100,000 trace entries).
  explicit Prefaulter(uintptr_t step = uintptr_t{4} << 20) : step_(step) {}
  /// From now on, takes its ranges through `shared` (other threads populate ahead through it too,
  /// up to `window` bytes past the vector's end), until the vector moves. Null: alone again.
  void Share(SharedPopulate* shared, uintptr_t window) {
    shared_ = shared;
    window_ = window;
  }
  /// The end of what this prefaulter populated itself.
  uintptr_t populated() const { return populated_; }
  template <class T>
  void Touch(const std::vector<T>& v) {
    const auto end = reinterpret_cast<uintptr_t>(v.data() + v.size());
    if (end < mark_) [[likely]]
      return;
    Advance(reinterpret_cast<uintptr_t>(v.data()), end,
            reinterpret_cast<uintptr_t>(v.data() + v.capacity()));
  }

 private:
  void Advance(uintptr_t data, uintptr_t end, uintptr_t cap_end);
  uintptr_t data_ = 0;
  uintptr_t populated_ = 0;
  uintptr_t mark_ = 0;
  uintptr_t step_;
  SharedPopulate* shared_ = nullptr;
  uintptr_t window_ = 0;
};

}  // namespace memsnap
