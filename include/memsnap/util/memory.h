// Large per-event vectors fault in 4 KiB pages one by one, which costs a third of the time of a
// pass over a multi-million-event trace; asking for transparent huge pages cuts that.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace memsnap {

/// v.reserve(n), then advises the kernel to back the reserved range with transparent huge pages.
/// Advisory only: ignored where unsupported. Untouched capacity still costs no resident memory.
template <class T>
void ReserveHuge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(v.data()) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(v.data()) + n * sizeof(T)) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

/// Pre-faults a growing vector's capacity ahead of its end, a few MiB at a time, with
/// MADV_POPULATE_WRITE: one system call per chunk instead of one page fault per 4 KiB page.
/// Call it after appending; it does nothing until the end crosses the populated mark. Advisory
/// only: where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) pages fault as usual.
class Prefaulter {
 public:
  template <class T>
  void Touch(const std::vector<T>& v) {
    const auto end = reinterpret_cast<uintptr_t>(v.data() + v.size());
    if (end < mark_) [[likely]] return;
    Advance(reinterpret_cast<uintptr_t>(v.data()), end,
            reinterpret_cast<uintptr_t>(v.data() + v.capacity()));
  }

 private:
  void Advance(uintptr_t data, uintptr_t end, uintptr_t cap_end) {
    constexpr uintptr_t kPage = 4096;
    constexpr uintptr_t kChunk = uintptr_t{4} << 20;
    if (data != data_) {  // the vector reallocated: start over in its new storage
      data_ = data;
      populated_ = data;
    }
    const uintptr_t from = std::max((populated_ + kPage - 1) & ~(kPage - 1), end & ~(kPage - 1));
    const uintptr_t to = std::min(from + kChunk, cap_end & ~(kPage - 1));
    mark_ = to > end + kPage ? to - kPage : UINTPTR_MAX;
    if (to <= from) return;
#ifdef MADV_POPULATE_WRITE
    if (madvise(reinterpret_cast<void*>(from), to - from, MADV_POPULATE_WRITE) != 0) {
      mark_ = UINTPTR_MAX;  // unsupported here: stop trying
      return;
    }
#else
    mark_ = UINTPTR_MAX;
#endif
    populated_ = to;
  }
  uintptr_t data_ = 0;
  uintptr_t populated_ = 0;
  uintptr_t mark_ = 0;
};

}  // namespace memsnap
