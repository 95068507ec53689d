// The real CudaDriver: libcuda.so.1 loaded lazily with dlopen, every entry point resolved with
// dlsym into a table of function pointers typed from cuda.h. Compiled only when the toolkit's
// cuda.h is found (cmake/cuda_backend.cmake); never linked against libcuda.
#include <cuda.h>
#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "memsnap/sim/cuda_driver.h"

namespace memsnap::sim {

static_assert(kCudaSuccess == CUDA_SUCCESS);
static_assert(kCudaErrorInvalidValue == CUDA_ERROR_INVALID_VALUE);
static_assert(kCudaErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(kCudaErrorNotInitialized == CUDA_ERROR_NOT_INITIALIZED);
static_assert(kCudaErrorNoDevice == CUDA_ERROR_NO_DEVICE);
static_assert(kCudaErrorInvalidDevice == CUDA_ERROR_INVALID_DEVICE);
static_assert(kCudaErrorNotSupported == CUDA_ERROR_NOT_SUPPORTED);
static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t));
static_assert(sizeof(CUmemGenericAllocationHandle) == sizeof(uint64_t));

namespace {

// X(member, exported symbol, cuda.h declaration). The exported names carry the ABI version
// suffixes cuda.h's macros map to (cuMemAlloc -> cuMemAlloc_v2, ...).
#define MEMSNAP_CUDA_SYMBOLS(X)                                                     \
  X(init, "cuInit", cuInit)                                                         \
  X(device_get, "cuDeviceGet", cuDeviceGet)                                         \
  X(device_get_count, "cuDeviceGetCount", cuDeviceGetCount)                         \
  X(device_get_name, "cuDeviceGetName", cuDeviceGetName)                            \
  X(primary_ctx_retain, "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain)       \
  X(primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", cuDevicePrimaryCtxRelease) \
  X(ctx_set_current, "cuCtxSetCurrent", cuCtxSetCurrent)                            \
  X(mem_get_info, "cuMemGetInfo_v2", cuMemGetInfo)                                  \
  X(mem_alloc, "cuMemAlloc_v2", cuMemAlloc)                                         \
  X(mem_free, "cuMemFree_v2", cuMemFree)                                            \
  X(granularity, "cuMemGetAllocationGranularity", cuMemGetAllocationGranularity)    \
  X(address_reserve, "cuMemAddressReserve", cuMemAddressReserve)                    \
  X(address_free, "cuMemAddressFree", cuMemAddressFree)                             \
  X(mem_create, "cuMemCreate", cuMemCreate)                                         \
  X(mem_release, "cuMemRelease", cuMemRelease)                                      \
  X(mem_map, "cuMemMap", cuMemMap)                                                  \
  X(mem_unmap, "cuMemUnmap", cuMemUnmap)                                            \
  X(mem_set_access, "cuMemSetAccess", cuMemSetAccess)                               \
  X(stream_create, "cuStreamCreate", cuStreamCreate)                                \
  X(stream_synchronize, "cuStreamSynchronize", cuStreamSynchronize)                 \
  X(stream_destroy, "cuStreamDestroy_v2", cuStreamDestroy)                          \
  X(mem_alloc_async, "cuMemAllocAsync", cuMemAllocAsync)                            \
  X(mem_free_async, "cuMemFreeAsync", cuMemFreeAsync)                               \
  X(default_mem_pool, "cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool)       \
  X(pool_get_attribute, "cuMemPoolGetAttribute", cuMemPoolGetAttribute)             \
  X(pool_set_attribute, "cuMemPoolSetAttribute", cuMemPoolSetAttribute)             \
  X(pool_trim_to, "cuMemPoolTrimTo", cuMemPoolTrimTo)                               \
  X(get_error_string, "cuGetErrorString", cuGetErrorString)

struct CudaDriverApi {
#define MEMSNAP_CUDA_MEMBER(member, name, decl) decltype(&::decl) member = nullptr;
  MEMSNAP_CUDA_SYMBOLS(MEMSNAP_CUDA_MEMBER)
#undef MEMSNAP_CUDA_MEMBER
};

CUmemPool_attribute ToCu(PoolAttr a) {
  switch (a) {
    case PoolAttr::kReleaseThreshold:
      return CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
    case PoolAttr::kReservedMemCurrent:
      return CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT;
    case PoolAttr::kReservedMemHigh:
      return CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH;
    case PoolAttr::kUsedMemCurrent:
      return CU_MEMPOOL_ATTR_USED_MEM_CURRENT;
    case PoolAttr::kUsedMemHigh:
      return CU_MEMPOOL_ATTR_USED_MEM_HIGH;
  }
  return CU_MEMPOOL_ATTR_RELEASE_THRESHOLD;
}

CUdeviceptr Ptr(uint64_t p) { return static_cast<CUdeviceptr>(p); }
CUstream Stream(uint64_t s) { return reinterpret_cast<CUstream>(static_cast<uintptr_t>(s)); }

class DlopenCudaDriver final : public CudaDriver {
 public:
  DlopenCudaDriver(CudaDriverApi api, void* library) : api_(api), library_(library) {}
  ~DlopenCudaDriver() override {
    Close();
    // The library stays loaded: unloading a CUDA driver while its threads run is unsafe.
  }

  CuResult Init() override { return api_.init(0); }
  CuResult DeviceCount(int* count) override { return api_.device_get_count(count); }
  CuResult DeviceName(int ordinal, std::string* name) override {
    CUdevice dev;
    if (CUresult r = api_.device_get(&dev, ordinal); r != CUDA_SUCCESS) return r;
    char buf[256] = {};
    CUresult r = api_.device_get_name(buf, sizeof(buf) - 1, dev);
    if (r == CUDA_SUCCESS) *name = buf;
    return r;
  }
  CuResult Open(int ordinal) override {
    if (CUresult r = api_.device_get(&device_, ordinal); r != CUDA_SUCCESS) return r;
    CUcontext ctx = nullptr;
    if (CUresult r = api_.primary_ctx_retain(&ctx, device_); r != CUDA_SUCCESS) return r;
    open_ = true;
    return api_.ctx_set_current(ctx);
  }
  void Close() override {
    if (open_) api_.primary_ctx_release(device_);
    open_ = false;
  }
  CuResult MemGetInfo(int64_t* free_bytes, int64_t* total_bytes) override {
    size_t f = 0;
    size_t t = 0;
    CUresult r = api_.mem_get_info(&f, &t);
    *free_bytes = static_cast<int64_t>(f);
    *total_bytes = static_cast<int64_t>(t);
    return r;
  }
  CuResult MemAlloc(uint64_t* ptr, int64_t size) override {
    CUdeviceptr p = 0;
    CUresult r = api_.mem_alloc(&p, static_cast<size_t>(size));
    *ptr = p;
    return r;
  }
  CuResult MemFree(uint64_t ptr) override { return api_.mem_free(Ptr(ptr)); }
  CuResult AllocationGranularity(int64_t* bytes) override {
    CUmemAllocationProp prop = Prop();
    size_t g = 0;
    CUresult r = api_.granularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    *bytes = static_cast<int64_t>(g);
    return r;
  }
  CuResult AddressReserve(uint64_t* ptr, int64_t size, int64_t alignment) override {
    CUdeviceptr p = 0;
    CUresult r =
        api_.address_reserve(&p, static_cast<size_t>(size), static_cast<size_t>(alignment), 0, 0);
    *ptr = p;
    return r;
  }
  CuResult AddressFree(uint64_t ptr, int64_t size) override {
    return api_.address_free(Ptr(ptr), static_cast<size_t>(size));
  }
  CuResult MemCreate(uint64_t* handle, int64_t size) override {
    CUmemAllocationProp prop = Prop();
    CUmemGenericAllocationHandle h = 0;
    CUresult r = api_.mem_create(&h, static_cast<size_t>(size), &prop, 0);
    *handle = h;
    return r;
  }
  CuResult MemRelease(uint64_t handle) override { return api_.mem_release(handle); }
  CuResult MemMap(uint64_t ptr, int64_t size, uint64_t handle) override {
    return api_.mem_map(Ptr(ptr), static_cast<size_t>(size), 0, handle, 0);
  }
  CuResult MemUnmap(uint64_t ptr, int64_t size) override {
    return api_.mem_unmap(Ptr(ptr), static_cast<size_t>(size));
  }
  CuResult MemSetAccess(uint64_t ptr, int64_t size) override {
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = device_;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return api_.mem_set_access(Ptr(ptr), static_cast<size_t>(size), &desc, 1);
  }
  CuResult StreamCreate(uint64_t* stream) override {
    CUstream s = nullptr;
    CUresult r = api_.stream_create(&s, CU_STREAM_NON_BLOCKING);
    *stream = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s));
    return r;
  }
  CuResult StreamSynchronize(uint64_t stream) override {
    return api_.stream_synchronize(Stream(stream));
  }
  CuResult StreamDestroy(uint64_t stream) override { return api_.stream_destroy(Stream(stream)); }
  CuResult MemAllocAsync(uint64_t* ptr, int64_t size, uint64_t stream) override {
    CUdeviceptr p = 0;
    CUresult r = api_.mem_alloc_async(&p, static_cast<size_t>(size), Stream(stream));
    *ptr = p;
    return r;
  }
  CuResult MemFreeAsync(uint64_t ptr, uint64_t stream) override {
    return api_.mem_free_async(Ptr(ptr), Stream(stream));
  }
  CuResult PoolGetAttribute(PoolAttr attr, uint64_t* value) override {
    CUmemoryPool pool = nullptr;
    if (CUresult r = api_.default_mem_pool(&pool, device_); r != CUDA_SUCCESS) return r;
    cuuint64_t v = 0;
    CUresult r = api_.pool_get_attribute(pool, ToCu(attr), &v);
    *value = v;
    return r;
  }
  CuResult PoolSetAttribute(PoolAttr attr, uint64_t value) override {
    CUmemoryPool pool = nullptr;
    if (CUresult r = api_.default_mem_pool(&pool, device_); r != CUDA_SUCCESS) return r;
    cuuint64_t v = value;
    return api_.pool_set_attribute(pool, ToCu(attr), &v);
  }
  CuResult PoolTrimTo(uint64_t min_bytes_to_keep) override {
    CUmemoryPool pool = nullptr;
    if (CUresult r = api_.default_mem_pool(&pool, device_); r != CUDA_SUCCESS) return r;
    return api_.pool_trim_to(pool, static_cast<size_t>(min_bytes_to_keep));
  }
  std::string ErrorString(CuResult r) override {
    const char* s = nullptr;
    if (api_.get_error_string(static_cast<CUresult>(r), &s) != CUDA_SUCCESS || s == nullptr) {
      return absl::StrCat("CUresult ", r);
    }
    return s;
  }

 private:
  CUmemAllocationProp Prop() const {
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = device_;
    return prop;
  }

  CudaDriverApi api_;
  [[maybe_unused]] void* library_;
  CUdevice device_ = 0;
  bool open_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaDriver>> CudaDriverFromResolver(const SymbolResolver& resolve) {
  CudaDriverApi api;
#define MEMSNAP_CUDA_RESOLVE(member, name, decl)                                      \
  api.member = reinterpret_cast<decltype(api.member)>(resolve(name));                 \
  if (api.member == nullptr) {                                                        \
    return absl::FailedPreconditionError(                                             \
        absl::StrCat("the CUDA driver lacks ", name, " (driver too old for CUDA ",    \
                     CUDA_VERSION / 1000, ".", CUDA_VERSION % 1000 / 10, " APIs?)")); \
  }
  MEMSNAP_CUDA_SYMBOLS(MEMSNAP_CUDA_RESOLVE)
#undef MEMSNAP_CUDA_RESOLVE
  return std::unique_ptr<CudaDriver>(new DlopenCudaDriver(api, nullptr));
}

absl::StatusOr<std::unique_ptr<CudaDriver>> LoadCudaDriver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return absl::FailedPreconditionError(
        absl::StrCat("no CUDA driver found (libcuda.so.1): ", err ? err : "dlopen failed"));
  }
  return CudaDriverFromResolver([lib](const char* name) { return dlsym(lib, name); });
}

}  // namespace memsnap::sim
