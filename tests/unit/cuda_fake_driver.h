// A fake CUDA driver for the GPU replay tests: a capacity counter with a call log, injectable
// failures and a stream-ordered pool model good enough to check the replay driver's logic.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "memsnap/sim/cuda_driver.h"

namespace memsnap::testing {

class FakeCudaDriver final : public sim::CudaDriver {
 public:
  int64_t capacity = int64_t{1} << 30;
  int64_t granularity = int64_t{2} << 20;
  int device_count = 1;
  sim::CuResult init_result = sim::kCudaSuccess;
  /// "MemAlloc" -> result returned from the Nth call of that kind on (1-based).
  std::map<std::string, std::pair<int, sim::CuResult>> fail;
  std::vector<std::string> log;  // memory calls, "MemAlloc 20971520"
  std::map<std::string, int> count;

  // State.
  int64_t used = 0;  // physical bytes held (segments, created handles, pool reserve)
  std::map<uint64_t, int64_t> segments;
  std::map<uint64_t, int64_t> handles;
  std::map<uint64_t, int64_t> reservations;
  std::map<uint64_t, uint64_t> mappings;  // addr -> handle
  std::set<uint64_t> streams;
  // Pool: freed bytes stay reserved (release threshold = max) until trimmed.
  int64_t pool_used = 0, pool_reserved = 0, pool_used_high = 0, pool_reserved_high = 0;
  std::map<uint64_t, int64_t> pool_live;
  bool open = false;

  sim::CuResult Init() override { return init_result; }
  sim::CuResult DeviceCount(int* n) override {
    *n = device_count;
    return sim::kCudaSuccess;
  }
  sim::CuResult DeviceName(int ordinal, std::string* name) override {
    *name = absl::StrCat("Fake GPU ", ordinal);
    return sim::kCudaSuccess;
  }
  sim::CuResult Open(int ordinal) override {
    open = true;
    return Hit("Open") ? fail["Open"].second : sim::kCudaSuccess;
  }
  void Close() override { open = false; }
  sim::CuResult MemGetInfo(int64_t* f, int64_t* t) override {
    *f = capacity - used;
    *t = capacity;
    return sim::kCudaSuccess;
  }
  sim::CuResult MemAlloc(uint64_t* p, int64_t size) override {
    Log("MemAlloc", size);
    if (Hit("MemAlloc")) return fail["MemAlloc"].second;
    if (size > capacity - used) return sim::kCudaErrorOutOfMemory;
    used += size;
    *p = next_ += uint64_t{1} << 32;
    segments[*p] = size;
    return sim::kCudaSuccess;
  }
  sim::CuResult MemFree(uint64_t p) override {
    Log("MemFree", segments.count(p) ? segments[p] : -1);
    if (!segments.count(p)) return sim::kCudaErrorInvalidValue;
    used -= segments[p];
    segments.erase(p);
    return sim::kCudaSuccess;
  }
  sim::CuResult AllocationGranularity(int64_t* g) override {
    *g = granularity;
    return sim::kCudaSuccess;
  }
  sim::CuResult AddressReserve(uint64_t* p, int64_t size, int64_t align) override {
    Log("AddressReserve", size, align);
    *p = next_ += uint64_t{1} << 40;
    reservations[*p] = size;
    return sim::kCudaSuccess;
  }
  sim::CuResult AddressFree(uint64_t p, int64_t size) override {
    Log("AddressFree", size);
    return reservations.erase(p) ? sim::kCudaSuccess : sim::kCudaErrorInvalidValue;
  }
  sim::CuResult MemCreate(uint64_t* h, int64_t size) override {
    Log("MemCreate", size);
    if (Hit("MemCreate")) return fail["MemCreate"].second;
    if (size > capacity - used) return sim::kCudaErrorOutOfMemory;
    used += size;
    *h = ++next_handle_;
    handles[*h] = size;
    return sim::kCudaSuccess;
  }
  sim::CuResult MemRelease(uint64_t h) override {
    Log("MemRelease", handles.count(h) ? handles[h] : -1);
    if (!handles.count(h)) return sim::kCudaErrorInvalidValue;
    used -= handles[h];
    handles.erase(h);
    return sim::kCudaSuccess;
  }
  sim::CuResult MemMap(uint64_t p, int64_t size, uint64_t h) override {
    Log("MemMap", size);
    if (Hit("MemMap")) return fail["MemMap"].second;
    mappings[p] = h;
    return sim::kCudaSuccess;
  }
  sim::CuResult MemUnmap(uint64_t p, int64_t size) override {
    Log("MemUnmap", size);
    return mappings.erase(p) ? sim::kCudaSuccess : sim::kCudaErrorInvalidValue;
  }
  sim::CuResult MemSetAccess(uint64_t, int64_t size) override {
    Log("MemSetAccess", size);
    return sim::kCudaSuccess;
  }
  sim::CuResult StreamCreate(uint64_t* s) override {
    *s = ++next_handle_;
    streams.insert(*s);
    Log("StreamCreate");
    return sim::kCudaSuccess;
  }
  sim::CuResult StreamSynchronize(uint64_t) override {
    Log("StreamSynchronize");
    return sim::kCudaSuccess;
  }
  sim::CuResult StreamDestroy(uint64_t s) override {
    Log("StreamDestroy");
    return streams.erase(s) ? sim::kCudaSuccess : sim::kCudaErrorInvalidValue;
  }
  sim::CuResult MemAllocAsync(uint64_t* p, int64_t size, uint64_t) override {
    Log("MemAllocAsync", size);
    if (Hit("MemAllocAsync")) return fail["MemAllocAsync"].second;
    const int64_t grow = std::max<int64_t>(0, pool_used + size - pool_reserved);
    if (grow > capacity - used) return sim::kCudaErrorOutOfMemory;
    used += grow;
    pool_reserved += grow;
    pool_used += size;
    pool_used_high = std::max(pool_used_high, pool_used);
    pool_reserved_high = std::max(pool_reserved_high, pool_reserved);
    *p = next_ += uint64_t{1} << 32;
    pool_live[*p] = size;
    return sim::kCudaSuccess;
  }
  sim::CuResult MemFreeAsync(uint64_t p, uint64_t) override {
    Log("MemFreeAsync", pool_live.count(p) ? pool_live[p] : -1);
    if (!pool_live.count(p)) return sim::kCudaErrorInvalidValue;
    pool_used -= pool_live[p];
    pool_live.erase(p);
    return sim::kCudaSuccess;
  }
  sim::CuResult PoolGetAttribute(sim::PoolAttr a, uint64_t* v) override {
    switch (a) {
      case sim::PoolAttr::kReservedMemHigh:
        *v = pool_reserved_high;
        break;
      case sim::PoolAttr::kUsedMemHigh:
        *v = pool_used_high;
        break;
      case sim::PoolAttr::kReservedMemCurrent:
        *v = pool_reserved;
        break;
      case sim::PoolAttr::kUsedMemCurrent:
        *v = pool_used;
        break;
      case sim::PoolAttr::kReleaseThreshold:
        *v = UINT64_MAX;
        break;
    }
    return sim::kCudaSuccess;
  }
  sim::CuResult PoolSetAttribute(sim::PoolAttr a, uint64_t v) override {
    Log("PoolSetAttribute", static_cast<int>(a), v == UINT64_MAX ? -1 : static_cast<int64_t>(v));
    if (a == sim::PoolAttr::kReservedMemHigh) pool_reserved_high = pool_reserved;
    if (a == sim::PoolAttr::kUsedMemHigh) pool_used_high = pool_used;
    return sim::kCudaSuccess;
  }
  sim::CuResult PoolTrimTo(uint64_t keep) override {
    Log("PoolTrimTo", static_cast<int64_t>(keep));
    const int64_t release =
        std::max<int64_t>(0, pool_reserved - std::max<int64_t>(pool_used, keep));
    pool_reserved -= release;
    used -= release;
    return sim::kCudaSuccess;
  }
  std::string ErrorString(sim::CuResult r) override {
    return r == sim::kCudaErrorOutOfMemory ? "out of memory" : absl::StrCat("fake error ", r);
  }

  /// The log entries whose text starts with `prefix`.
  std::vector<std::string> Calls(const std::string& prefix) const {
    std::vector<std::string> out;
    for (const std::string& s : log) {
      if (s.rfind(prefix, 0) == 0) out.push_back(s);
    }
    return out;
  }

 private:
  bool Hit(const std::string& kind) {
    int n = ++count[kind];
    auto it = fail.find(kind);
    return it != fail.end() && n >= it->second.first;
  }
  template <typename... A>
  void Log(const char* what, A... args) {
    std::string s = what;
    ((s += " " + std::to_string(args)), ...);
    log.push_back(s);
  }
  uint64_t next_ = 0;
  uint64_t next_handle_ = 0;
};

}  // namespace memsnap::testing
