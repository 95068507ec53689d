// The slice of the CUDA driver API the GPU replay uses, behind a small interface so that the
// replay logic builds and is tested everywhere (tests/unit/cuda_backend_test.cpp drives it with a
// fake), while the real implementation (src/sim/backend/cuda/driver_dlopen.cpp, built only when
// the toolkit is found) loads libcuda.so.1 lazily with dlopen: memsnap never links libcuda or
// libcudart and starts on machines without a driver.
//
// The types here are memsnap's, not cuda.h's: handles and pointers are uint64_t, results are the
// CUresult numbers (the constants below are checked against cuda.h in driver_dlopen.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace memsnap::sim {

/// A CUresult value.
using CuResult = int;
inline constexpr CuResult kCudaSuccess = 0;
inline constexpr CuResult kCudaErrorInvalidValue = 1;
inline constexpr CuResult kCudaErrorOutOfMemory = 2;
inline constexpr CuResult kCudaErrorNotInitialized = 3;
inline constexpr CuResult kCudaErrorNoDevice = 100;
inline constexpr CuResult kCudaErrorInvalidDevice = 101;
inline constexpr CuResult kCudaErrorNotSupported = 801;

/// The default memory pool attributes the cudaMallocAsync replay reads or resets.
enum class PoolAttr : uint8_t {
  kReleaseThreshold,
  kReservedMemCurrent,
  kReservedMemHigh,
  kUsedMemCurrent,
  kUsedMemHigh,
};

/// One CUDA device context: every call after Open() applies to the opened device. Calls are
/// made from one thread. Pointers, handles and streams are opaque 64-bit values.
class CudaDriver {
 public:
  virtual ~CudaDriver() = default;
  /// cuInit(0).
  virtual CuResult Init() = 0;
  /// cuDeviceGetCount.
  virtual CuResult DeviceCount(int* count) = 0;
  /// cuDeviceGetName of `ordinal`.
  virtual CuResult DeviceName(int ordinal, std::string* name) = 0;
  /// cuDeviceGet + cuDevicePrimaryCtxRetain + cuCtxSetCurrent.
  virtual CuResult Open(int ordinal) = 0;
  /// cuDevicePrimaryCtxRelease of the opened device (no-op when none).
  virtual void Close() = 0;
  /// cuMemGetInfo_v2.
  virtual CuResult MemGetInfo(int64_t* free_bytes, int64_t* total_bytes) = 0;
  /// cuMemAlloc_v2 / cuMemFree_v2.
  virtual CuResult MemAlloc(uint64_t* ptr, int64_t size) = 0;
  virtual CuResult MemFree(uint64_t ptr) = 0;
  /// cuMemGetAllocationGranularity (minimum) for pinned device memory on the opened device.
  virtual CuResult AllocationGranularity(int64_t* bytes) = 0;
  /// cuMemAddressReserve(size, alignment) / cuMemAddressFree.
  virtual CuResult AddressReserve(uint64_t* ptr, int64_t size, int64_t alignment) = 0;
  virtual CuResult AddressFree(uint64_t ptr, int64_t size) = 0;
  /// cuMemCreate of `size` bytes of pinned device memory on the opened device / cuMemRelease.
  virtual CuResult MemCreate(uint64_t* handle, int64_t size) = 0;
  virtual CuResult MemRelease(uint64_t handle) = 0;
  /// cuMemMap(ptr, size, 0, handle, 0) / cuMemUnmap.
  virtual CuResult MemMap(uint64_t ptr, int64_t size, uint64_t handle) = 0;
  virtual CuResult MemUnmap(uint64_t ptr, int64_t size) = 0;
  /// cuMemSetAccess: read-write for the opened device.
  virtual CuResult MemSetAccess(uint64_t ptr, int64_t size) = 0;
  /// cuStreamCreate(CU_STREAM_NON_BLOCKING) / cuStreamSynchronize / cuStreamDestroy.
  virtual CuResult StreamCreate(uint64_t* stream) = 0;
  virtual CuResult StreamSynchronize(uint64_t stream) = 0;
  virtual CuResult StreamDestroy(uint64_t stream) = 0;
  /// cuMemAllocAsync / cuMemFreeAsync on the device's default memory pool.
  virtual CuResult MemAllocAsync(uint64_t* ptr, int64_t size, uint64_t stream) = 0;
  virtual CuResult MemFreeAsync(uint64_t ptr, uint64_t stream) = 0;
  /// cuDeviceGetDefaultMemPool + cuMemPoolGetAttribute / cuMemPoolSetAttribute / cuMemPoolTrimTo.
  virtual CuResult PoolGetAttribute(PoolAttr attr, uint64_t* value) = 0;
  virtual CuResult PoolSetAttribute(PoolAttr attr, uint64_t value) = 0;
  virtual CuResult PoolTrimTo(uint64_t min_bytes_to_keep) = 0;
  /// cuGetErrorString, e.g. "out of memory"; "CUresult N" when unknown.
  virtual std::string ErrorString(CuResult r) = 0;
};

/// Resolves a driver symbol by name (dlsym); nullptr when missing.
using SymbolResolver = std::function<void*(const char* name)>;

/// Loads libcuda.so.1 with dlopen and resolves every symbol. Errors (FailedPrecondition):
/// "no CUDA driver found (libcuda.so.1): <dlerror>", "CUDA driver lacks <symbol>", and
/// "memsnap was built without CUDA; ..." when the backend was not compiled in.
absl::StatusOr<std::unique_ptr<CudaDriver>> LoadCudaDriver();

/// As LoadCudaDriver but with symbols from `resolve` (tests inject fake C functions and
/// missing symbols). Needs the backend compiled in (BuiltWithCuda()).
absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriverFromResolver(const SymbolResolver& resolve);

/// The message for a CUresult: "<ErrorString> (CUresult N)".
std::string DescribeCuResult(CudaDriver& driver, CuResult r);

}  // namespace memsnap::sim
