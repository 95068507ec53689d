#include "memsnap/util/memory.h"

#include <sys/mman.h>
#include <unistd.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace memsnap {

namespace {

constexpr uintptr_t kPage = 4096;

// MADV_POPULATE_WRITE over [begin, end), page-aligned; false where the kernel refuses it.
bool Populate(uintptr_t begin, uintptr_t end) {
#ifdef MADV_POPULATE_WRITE
  return madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0;
#else
  (void)begin;
  (void)end;
  return false;
#endif
}

}  // namespace

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);  // /proc/meminfo MemTotal
}

uint64_t DefaultMemoryBudget() { return PhysicalMemoryBytes() / 4 * 3; }

void KeepFreedMemory() {
#ifdef __GLIBC__
  // Blocks up to 256 MiB come from the heap rather than their own mmap (which munmap returns
  // on free), and the top of the heap is not trimmed below 1 GiB.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

void DropPages(const void* data, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kPage - 1);
  // Only pages wholly inside the block: the allocator's own words around it stay untouched.
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

void SharedPopulate::Reset(uintptr_t begin, uintptr_t end) {
  next_.store((begin + kPage - 1) & ~(kPage - 1), std::memory_order_relaxed);
  end_.store(end & ~(kPage - 1), std::memory_order_relaxed);
}

void SharedPopulate::Stop() {
  end_.store(0, std::memory_order_relaxed);
  horizon_.store(UINTPTR_MAX, std::memory_order_release);
  horizon_.notify_all();
}

void SharedPopulate::SetHorizon(uintptr_t h) {
  if (h <= horizon_.load(std::memory_order_relaxed)) return;
  horizon_.store(h, std::memory_order_release);
  horizon_.notify_all();
}

bool SharedPopulate::WaitPast(uintptr_t seen) {
  // Stop sets the horizon to UINTPTR_MAX, past which it never moves.
  if (seen == UINTPTR_MAX || end_.load(std::memory_order_relaxed) == 0) return false;
  horizon_.wait(seen, std::memory_order_acquire);
  return end_.load(std::memory_order_relaxed) != 0;
}

uintptr_t SharedPopulate::Claim(uintptr_t from, uintptr_t bytes, uintptr_t limit) {
  limit = std::min(limit, end_.load(std::memory_order_relaxed)) & ~(kPage - 1);
  from &= ~(kPage - 1);
  bytes = (bytes + kPage - 1) & ~(kPage - 1);
  uintptr_t cur = next_.load(std::memory_order_relaxed);
  uintptr_t lo;
  uintptr_t hi;
  do {
    lo = std::max(cur, from);
    hi = std::min(lo + bytes, limit);
    if (hi <= lo) return 0;
  } while (!next_.compare_exchange_weak(cur, hi, std::memory_order_relaxed));
  Populate(lo, hi);
  return hi - lo;
}

void Prefaulter::Advance(uintptr_t data, uintptr_t end, uintptr_t cap_end) {
  if (data != data_) {  // the vector reallocated: start over in its new storage
    if (shared_ != nullptr && data_ != 0) {
      shared_->Stop();  // the others would populate the old storage
      shared_ = nullptr;
    }
    data_ = data;
    populated_ = data;
  }
  if (shared_ != nullptr) {
    shared_->SetHorizon(end + window_);
    if (shared_->claimed() < end + step_ / 2) shared_->Claim(end, step_, cap_end);
    const uintptr_t to = shared_->claimed();
    // Next time once the end is within a page of what is claimed (by any thread), or a step on,
    // to move the horizon.
    mark_ = to > end + kPage ? std::min(to - kPage, end + step_) : UINTPTR_MAX;
    return;
  }
  const uintptr_t from = std::max((populated_ + kPage - 1) & ~(kPage - 1), end & ~(kPage - 1));
  const uintptr_t to = std::min(from + step_, cap_end & ~(kPage - 1));
  mark_ = to > end + kPage ? to - kPage : UINTPTR_MAX;
  if (to <= from) return;
  if (!Populate(from, to)) {
    mark_ = UINTPTR_MAX;  // unsupported here: stop trying
    return;
  }
  populated_ = to;
}

}  // namespace memsnap
