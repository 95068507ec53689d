/* A CPU-only stand-in for libcuda.so.1, built as a test library (tests/fake_libcuda/) so that
 * `memsnap replay --backend cuda` runs end to end through the real dlopen/dlsym path on machines
 * without a GPU. It implements exactly the entry points memsnap resolves, with cuda.h's
 * signatures, as a byte counter against a capacity: no memory is touched.
 *
 * Environment: FAKE_LIBCUDA_MEM_MIB (device size, default 16384), FAKE_LIBCUDA_DEVICES (count,
 * default 1; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE). */
#include <cuda.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

typedef struct {
  unsigned long long key;
  size_t size;
} Entry;

/* A growable list of (key, size); linear search is plenty for test traces. */
typedef struct {
  Entry* v;
  size_t n, cap;
} List;

static void list_put(List* l, unsigned long long key, size_t size) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->v = (Entry*)realloc(l->v, l->cap * sizeof(Entry));
  }
  l->v[l->n].key = key;
  l->v[l->n].size = size;
  l->n++;
}

/* Removes `key`; returns its size, or (size_t)-1 when absent. */
static size_t list_take(List* l, unsigned long long key) {
  for (size_t i = 0; i < l->n; ++i) {
    if (l->v[i].key == key) {
      size_t s = l->v[i].size;
      l->v[i] = l->v[--l->n];
      return s;
    }
  }
  return (size_t)-1;
}

static int g_devices = -1;
static size_t g_capacity, g_used;
static unsigned long long g_next_va = 0x7f0000000000ull, g_next_handle;
static List g_segments, g_handles, g_pool_live;
static size_t g_pool_used, g_pool_reserved, g_pool_used_high, g_pool_reserved_high;
static cuuint64_t g_release_threshold;

static size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

CUresult CUDAAPI cuInit(unsigned int flags) {
  const char* d = getenv("FAKE_LIBCUDA_DEVICES");
  const char* m = getenv("FAKE_LIBCUDA_MEM_MIB");
  g_devices = d ? atoi(d) : 1;
  g_capacity = (m ? (size_t)atoll(m) : 16384) * MIB;
  return g_devices > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

CUresult CUDAAPI cuDeviceGetCount(int* count) {
  if (g_devices < 0) return CUDA_ERROR_NOT_INITIALIZED;
  *count = g_devices;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice* device, int ordinal) {
  if (ordinal < 0 || ordinal >= g_devices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char* name, int len, CUdevice dev) {
  strncpy(name, "memsnap fake libcuda", (size_t)len);
  name[len - 1] = 0;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice dev) {
  *ctx = (CUcontext)(uintptr_t)(dev + 1);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = g_capacity - g_used;
  *total = g_capacity;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr* ptr, size_t size) {
  size_t s = round_up(size, 2 * MIB);
  if (s > g_capacity - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
  g_used += s;
  *ptr = g_next_va;
  g_next_va += round_up(s, 1ull << 30);
  list_put(&g_segments, *ptr, s);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  size_t s = list_take(&g_segments, ptr);
  if (s == (size_t)-1) return CUDA_ERROR_INVALID_VALUE;
  g_used -= s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* g, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  *g = 2 * MIB;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  if (size % (2 * MIB) != 0 || (alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
  *ptr = round_up(g_next_va, alignment ? alignment : 2 * MIB);
  g_next_va = *ptr + round_up(size, 1ull << 30);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) { return CUDA_SUCCESS; }

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  if (size % (2 * MIB) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > g_capacity - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
  g_used += size;
  *handle = ++g_next_handle;
  list_put(&g_handles, *handle, size);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle) {
  size_t s = list_take(&g_handles, handle);
  if (s == (size_t)-1) return CUDA_ERROR_INVALID_VALUE;
  g_used -= s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                size_t count) {
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamCreate(CUstream* stream, unsigned int flags) {
  *stream = (CUstream)(uintptr_t)(++g_next_handle);
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuStreamSynchronize(CUstream stream) { return CUDA_SUCCESS; }
CUresult CUDAAPI cuStreamDestroy(CUstream stream) { return CUDA_SUCCESS; }

/* The pool grows in 2 MiB steps and keeps what it has (release threshold = max) until trimmed. */
CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr* ptr, size_t size, CUstream stream) {
  size_t s = round_up(size, 512);
  if (g_pool_used + s > g_pool_reserved) {
    size_t grow = round_up(g_pool_used + s - g_pool_reserved, 2 * MIB);
    if (grow > g_capacity - g_used) return CUDA_ERROR_OUT_OF_MEMORY;
    g_used += grow;
    g_pool_reserved += grow;
  }
  g_pool_used += s;
  if (g_pool_used > g_pool_used_high) g_pool_used_high = g_pool_used;
  if (g_pool_reserved > g_pool_reserved_high) g_pool_reserved_high = g_pool_reserved;
  *ptr = g_next_va;
  g_next_va += round_up(s, 2 * MIB);
  list_put(&g_pool_live, *ptr, s);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr ptr, CUstream stream) {
  size_t s = list_take(&g_pool_live, ptr);
  if (s == (size_t)-1) return CUDA_ERROR_INVALID_VALUE;
  g_pool_used -= s;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool* pool, CUdevice dev) {
  *pool = (CUmemoryPool)(uintptr_t)0x1000;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  cuuint64_t* v = (cuuint64_t*)value;
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      *v = g_release_threshold;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
      *v = g_pool_reserved;
      break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      *v = g_pool_reserved_high;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
      *v = g_pool_used;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      *v = g_pool_used_high;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  cuuint64_t v = *(cuuint64_t*)value;
  switch (attr) {
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
      g_release_threshold = v;
      break;
    /* As the driver: only 0 is accepted, and it resets the watermark to the current value. */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      g_pool_reserved_high = g_pool_reserved;
      break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
      if (v != 0) return CUDA_ERROR_INVALID_VALUE;
      g_pool_used_high = g_pool_used;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t keep) {
  size_t floor = round_up(g_pool_used > keep ? g_pool_used : keep, 2 * MIB);
  if (g_pool_reserved > floor) {
    g_used -= g_pool_reserved - floor;
    g_pool_reserved = floor;
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char** str) {
  switch (error) {
    case CUDA_SUCCESS:
      *str = "no error";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *str = "invalid argument";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *str = "out of memory";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *str = "initialization error";
      break;
    case CUDA_ERROR_NO_DEVICE:
      *str = "no CUDA-capable device is detected";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *str = "invalid device ordinal";
      break;
    default:
      *str = NULL;
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}
