#include "memsnap/util/memory.h"

#include <sys/mman.h>

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

void Prefaulter::Advance(uintptr_t data, uintptr_t end, uintptr_t cap_end) {
  if (data != data_) {  // the vector reallocated: start over in its new storage
    data_ = data;
    populated_ = data;
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
