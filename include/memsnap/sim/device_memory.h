// What the simulated allocator asks of a device: cudaMalloc/cudaFree for ordinary segments and
// cuMemAddressReserve/cuMemMap/cuMemUnmap for expandable ones. The default implementation is
// pure bookkeeping (VirtualDeviceMemory); a real CUDA backend can implement the same interface
// and be handed to CachingAllocator unchanged.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

namespace memsnap::sim {

inline constexpr int64_t kUnlimitedCapacity = std::numeric_limits<int64_t>::max();

/// Device memory as the caching allocator sees it. Sizes are bytes; calls are never concurrent.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  /// cudaMalloc(size): the base address, or nullopt when the device is out of memory.
  virtual std::optional<uint64_t> Malloc(int64_t size) = 0;
  /// cudaFree of a range Malloc returned.
  virtual void Free(uint64_t ptr, int64_t size) = 0;
  /// cuMemAddressReserve: `size` bytes of virtual address space aligned to `page`. Never fails.
  virtual uint64_t ReserveAddressSpace(int64_t size, int64_t page) = 0;
  /// cuMemAddressFree of a range ReserveAddressSpace returned (everything in it unmapped).
  virtual void ReleaseAddressSpace(uint64_t ptr, int64_t size) = 0;
  /// Backs [ptr, ptr+size) (whole pages) with physical memory; all or nothing. false = OOM.
  virtual bool Map(uint64_t ptr, int64_t size) = 0;
  /// Returns the physical pages of [ptr, ptr+size).
  virtual void Unmap(uint64_t ptr, int64_t size) = 0;
  /// Takes over [ptr, ptr+size) as already cudaMalloc'ed before the simulation began (the warm
  /// start of a replay). The virtual device only counts it.
  virtual void AdoptSegment(uint64_t ptr, int64_t size) = 0;
  /// cudaMemGetInfo's free bytes (what an `oom` trace entry records).
  virtual int64_t FreeBytes() const = 0;
  /// cudaMemGetInfo's total bytes; kUnlimitedCapacity when unbounded.
  virtual int64_t TotalBytes() const = 0;
};

/// A counter of physical bytes against a capacity, with synthetic addresses. Addresses come
/// from `address hints` first (validation mode: the recorded segment_alloc addresses, in order),
/// then from a monotone counter, so runs are deterministic.
class VirtualDeviceMemory final : public DeviceMemory {
 public:
  explicit VirtualDeviceMemory(int64_t capacity = kUnlimitedCapacity);
  /// Addresses Malloc returns, in order, before falling back to the counter.
  void SetMallocHints(std::vector<uint64_t> hints);
  /// Bases ReserveAddressSpace returns, in order, before falling back to the counter.
  void SetReserveHints(std::vector<uint64_t> hints);

  std::optional<uint64_t> Malloc(int64_t size) override;
  void Free(uint64_t ptr, int64_t size) override;
  uint64_t ReserveAddressSpace(int64_t size, int64_t page) override;
  void ReleaseAddressSpace(uint64_t ptr, int64_t size) override {}
  void AdoptSegment(uint64_t, int64_t size) override { used_ += size; }
  bool Map(uint64_t ptr, int64_t size) override;
  void Unmap(uint64_t ptr, int64_t size) override;
  int64_t FreeBytes() const override;
  int64_t TotalBytes() const override { return capacity_; }
  int64_t used() const { return used_; }
  /// Changes the capacity mid-run (a copy of a device resumed under another limit; the bytes in
  /// use must fit it).
  void SetCapacity(int64_t capacity) { capacity_ = capacity; }

 private:
  uint64_t NextAddress(int64_t size, uint64_t align);
  int64_t capacity_;
  int64_t used_ = 0;
  uint64_t next_va_ = 0x7f0000000000ULL;
  std::deque<uint64_t> malloc_hints_;
  std::deque<uint64_t> reserve_hints_;
};

}  // namespace memsnap::sim
