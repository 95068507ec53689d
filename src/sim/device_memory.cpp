#include "memsnap/sim/device_memory.h"

#include <algorithm>

namespace memsnap::sim {

namespace {
constexpr uint64_t kSegmentAlign = 2 << 20;  // cudaMalloc ranges are 2 MiB aligned
}

VirtualDeviceMemory::VirtualDeviceMemory(int64_t capacity) : capacity_(capacity) {}

void VirtualDeviceMemory::SetMallocHints(std::vector<uint64_t> hints) {
  malloc_hints_.assign(hints.begin(), hints.end());
  for (uint64_t h : hints) next_va_ = std::max(next_va_, h + (uint64_t{1} << 40));
}

void VirtualDeviceMemory::SetReserveHints(std::vector<uint64_t> hints) {
  reserve_hints_.assign(hints.begin(), hints.end());
  for (uint64_t h : hints) next_va_ = std::max(next_va_, h + (uint64_t{1} << 40));
}

uint64_t VirtualDeviceMemory::NextAddress(int64_t size, uint64_t align) {
  uint64_t p = (next_va_ + align - 1) / align * align;
  next_va_ = p + static_cast<uint64_t>(size);
  return p;
}

std::optional<uint64_t> VirtualDeviceMemory::Malloc(int64_t size) {
  if (size > capacity_ - used_) return std::nullopt;
  used_ += size;
  if (!malloc_hints_.empty()) {
    uint64_t p = malloc_hints_.front();
    malloc_hints_.pop_front();
    return p;
  }
  return NextAddress(size, kSegmentAlign);
}

void VirtualDeviceMemory::Free(uint64_t, int64_t size) { used_ -= size; }

uint64_t VirtualDeviceMemory::ReserveAddressSpace(int64_t size, int64_t page) {
  if (!reserve_hints_.empty()) {
    uint64_t p = reserve_hints_.front();
    reserve_hints_.pop_front();
    return p;
  }
  return NextAddress(size, static_cast<uint64_t>(page));
}

bool VirtualDeviceMemory::Map(uint64_t, int64_t size) {
  if (size > capacity_ - used_) return false;
  used_ += size;
  return true;
}

void VirtualDeviceMemory::Unmap(uint64_t, int64_t size) { used_ -= size; }

int64_t VirtualDeviceMemory::FreeBytes() const { return capacity_ - used_; }

}  // namespace memsnap::sim
