// Real device memory for the allocator simulator: CudaDeviceMemory implements sim::DeviceMemory
// with CUDA driver calls (through the CudaDriver interface of cuda_driver.h), so that
// CachingAllocator's decisions become real cuMemAlloc/cuMemFree (native segments) and
// cuMemAddressReserve + per-page cuMemCreate/cuMemMap/cuMemSetAccess, cuMemUnmap/cuMemRelease
// (expandable segments), each call timed.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "memsnap/sim/cuda_driver.h"
#include "memsnap/sim/device_memory.h"

namespace memsnap::sim {

/// The driver calls whose time the GPU replay reports.
enum class CudaCall : uint8_t {
  kMemAlloc,
  kMemFree,
  kAddressReserve,
  kAddressFree,
  kMemCreate,
  kMemMap,
  kMemSetAccess,
  kMemUnmap,
  kMemRelease,
  kMemAllocAsync,
  kMemFreeAsync,
  kCount,
};
/// "cuMemAlloc", "cuMemFree", ... (the driver API names).
const char* CudaCallName(CudaCall c);

/// Nanoseconds from a monotonic clock; injectable so tests are deterministic.
using NanoClock = std::function<int64_t()>;
/// std::chrono::steady_clock in nanoseconds.
int64_t SteadyNowNs();

/// One call kind's timing summary.
struct CallSummary {
  std::string name;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t p50_ns = 0;
  int64_t p99_ns = 0;
};

/// The nearest-rank `q` quantile (0 < q <= 1) of `samples`; 0 when empty. Sorts `samples`.
int64_t NearestRank(std::vector<int64_t>& samples, double q);

/// Per-kind durations of driver calls.
class CallTimer {
 public:
  explicit CallTimer(NanoClock clock = SteadyNowNs) : clock_(std::move(clock)) {}
  /// Runs `call`, records its duration under `kind`, returns its result.
  template <typename F>
  CuResult Time(CudaCall kind, F&& call) {
    const int64_t t0 = clock_();
    CuResult r = call();
    samples_[static_cast<size_t>(kind)].push_back(clock_() - t0);
    return r;
  }
  /// Kinds with at least one call, in CudaCall order.
  std::vector<CallSummary> Summaries() const;

 private:
  NanoClock clock_;
  std::array<std::vector<int64_t>, static_cast<size_t>(CudaCall::kCount)> samples_;
};

/// The driver's view of device memory: cuMemGetInfo sampled at the start and after every
/// allocation that may have grown usage. Untimed.
class DriverWatermark {
 public:
  explicit DriverWatermark(CudaDriver* driver);
  /// Samples cuMemGetInfo; updates the peak.
  void Sample();
  int64_t total() const { return total_; }
  int64_t free_before() const { return free_before_; }
  int64_t last_free() const { return last_free_; }
  /// max(used) - used at construction: what this replay made the driver hand out at most.
  int64_t peak_growth() const { return peak_used_ - (total_ - free_before_); }
  /// used at the last sample - used at construction.
  int64_t growth() const { return free_before_ - last_free_; }

 private:
  CudaDriver* driver_;
  int64_t total_ = 0;
  int64_t free_before_ = 0;
  int64_t last_free_ = 0;
  int64_t peak_used_ = 0;
};

/// sim::DeviceMemory backed by a real (or fake) CUDA device. The driver must be Open()ed. A
/// CUDA_ERROR_OUT_OF_MEMORY becomes the simulator's OOM path (nullopt / false); any other error
/// is fatal: it is kept in status(), no further driver call is made, and every later request
/// fails as if out of memory so the simulator runs to the end.
class CudaDeviceMemory final : public DeviceMemory {
 public:
  CudaDeviceMemory(CudaDriver* driver, CallTimer* timer, DriverWatermark* watermark);
  /// Returns everything still held (ReleaseAll).
  ~CudaDeviceMemory() override;

  std::optional<uint64_t> Malloc(int64_t size) override;
  void Free(uint64_t ptr, int64_t size) override;
  uint64_t ReserveAddressSpace(int64_t size, int64_t page) override;
  void ReleaseAddressSpace(uint64_t ptr, int64_t size) override;
  bool Map(uint64_t ptr, int64_t size) override;
  void Unmap(uint64_t ptr, int64_t size) override;
  /// A real cuMemAlloc of `size` stands in for the segment at the simulator's `ptr`; running
  /// out of memory here is fatal (the interface cannot fail).
  void AdoptSegment(uint64_t ptr, int64_t size) override;
  int64_t FreeBytes() const override;
  int64_t TotalBytes() const override { return watermark_->total(); }

  /// Frees every segment, mapping and reservation still held (the allocator has no teardown).
  void ReleaseAll();
  /// OK, or the first fatal driver error.
  const absl::Status& status() const { return status_; }
  /// CUDA_ERROR_OUT_OF_MEMORY results seen (cuMemAlloc and cuMemCreate).
  int64_t driver_ooms() const { return driver_ooms_; }

 private:
  struct Reservation {
    int64_t size = 0;
    int64_t page = 0;
  };
  /// false after a fatal error; records the error when `r` is neither success nor OOM.
  bool Check(CuResult r, const char* what);
  bool MapPage(uint64_t addr, int64_t page);
  void UnmapPage(uint64_t addr, int64_t page);

  CudaDriver* driver_;
  CallTimer* timer_;
  DriverWatermark* watermark_;
  absl::Status status_;
  int64_t driver_ooms_ = 0;
  int64_t granularity_ = 0;  // 0: not queried yet
  struct Segment {
    uint64_t real = 0;  // what cuMemAlloc returned (differs from the key for adopted segments)
    int64_t size = 0;
  };
  absl::flat_hash_map<uint64_t, Segment> segments_;  // by the simulator's address
  std::map<uint64_t, Reservation> reservations_;     // by base, for page lookups
  std::map<uint64_t, uint64_t> pages_;               // mapped page -> cuMemCreate handle
};

}  // namespace memsnap::sim
