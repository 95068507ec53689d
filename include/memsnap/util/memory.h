// Large per-event vectors fault in 4 KiB pages one by one, which costs a third of the time of a
// pass over a multi-million-event trace. Two remedies, both advisory (ignored where unsupported):
// transparent huge pages, and pre-faulting ahead of a growing vector's end in a few large steps.
#pragma once

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace memsnap {

/// v.reserve(n), then advises the kernel to back the reserved range with transparent huge pages.
/// Untouched capacity still costs no resident memory. Beware: huge pages come from free 2 MiB
/// blocks, which a virtual machine's free page reporting may have handed back to the host; the
/// first touch then costs far more than 4 KiB pages would (docs/BENCHMARKS.md).
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
/// Call it after appending; it does nothing until the end crosses the populated mark. Where the
/// kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) pages fault as usual.
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
  void Advance(uintptr_t data, uintptr_t end, uintptr_t cap_end);
  uintptr_t data_ = 0;
  uintptr_t populated_ = 0;
  uintptr_t mark_ = 0;
};

}  // namespace memsnap
