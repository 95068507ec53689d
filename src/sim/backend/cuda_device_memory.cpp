// CudaDeviceMemory, call timing and the driver watermark. Built everywhere: it only talks to the
// CudaDriver interface (the real driver lives in backend/cuda/, compiled with the toolkit).
#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "memsnap/sim/cuda_backend.h"

namespace memsnap::sim {

const char* CudaCallName(CudaCall c) {
  switch (c) {
    case CudaCall::kMemAlloc:
      return "cuMemAlloc";
    case CudaCall::kMemFree:
      return "cuMemFree";
    case CudaCall::kAddressReserve:
      return "cuMemAddressReserve";
    case CudaCall::kAddressFree:
      return "cuMemAddressFree";
    case CudaCall::kMemCreate:
      return "cuMemCreate";
    case CudaCall::kMemMap:
      return "cuMemMap";
    case CudaCall::kMemSetAccess:
      return "cuMemSetAccess";
    case CudaCall::kMemUnmap:
      return "cuMemUnmap";
    case CudaCall::kMemRelease:
      return "cuMemRelease";
    case CudaCall::kMemAllocAsync:
      return "cuMemAllocAsync";
    case CudaCall::kMemFreeAsync:
      return "cuMemFreeAsync";
    case CudaCall::kCount:
      break;
  }
  return "?";
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t NearestRank(std::vector<int64_t>& samples, double q) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const double rank = std::ceil(q * static_cast<double>(samples.size()));
  const size_t i = static_cast<size_t>(std::clamp(rank, 1.0, double(samples.size()))) - 1;
  return samples[i];
}

std::vector<CallSummary> CallTimer::Summaries() const {
  std::vector<CallSummary> out;
  for (size_t k = 0; k < samples_.size(); ++k) {
    if (samples_[k].empty()) continue;
    std::vector<int64_t> s = samples_[k];
    CallSummary c;
    c.name = CudaCallName(static_cast<CudaCall>(k));
    c.calls = static_cast<int64_t>(s.size());
    for (int64_t ns : s) c.total_ns += ns;
    c.p50_ns = NearestRank(s, 0.50);
    c.p99_ns = NearestRank(s, 0.99);
    out.push_back(std::move(c));
  }
  return out;
}

std::string DescribeCuResult(CudaDriver& driver, CuResult r) {
  return absl::StrCat(driver.ErrorString(r), " (CUresult ", r, ")");
}

DriverWatermark::DriverWatermark(CudaDriver* driver) : driver_(driver) {
  int64_t f = 0;
  if (driver_->MemGetInfo(&f, &total_) != kCudaSuccess) f = total_ = 0;
  free_before_ = last_free_ = f;
  peak_used_ = total_ - f;
}

void DriverWatermark::Sample() {
  int64_t f = 0;
  int64_t t = 0;
  if (driver_->MemGetInfo(&f, &t) != kCudaSuccess) return;
  last_free_ = f;
  peak_used_ = std::max(peak_used_, t - f);
}

CudaDeviceMemory::CudaDeviceMemory(CudaDriver* driver, CallTimer* timer, DriverWatermark* watermark)
    : driver_(driver), timer_(timer), watermark_(watermark) {}

CudaDeviceMemory::~CudaDeviceMemory() { ReleaseAll(); }

bool CudaDeviceMemory::Check(CuResult r, const char* what) {
  if (r == kCudaSuccess) return true;
  if (r == kCudaErrorOutOfMemory) {
    ++driver_ooms_;
    return false;
  }
  if (status_.ok()) {
    status_ = absl::InternalError(absl::StrCat(what, " failed: ", DescribeCuResult(*driver_, r)));
  }
  return false;
}

std::optional<uint64_t> CudaDeviceMemory::Malloc(int64_t size) {
  if (!status_.ok()) return std::nullopt;
  uint64_t ptr = 0;
  CuResult r = timer_->Time(CudaCall::kMemAlloc, [&] { return driver_->MemAlloc(&ptr, size); });
  if (!Check(r, "cuMemAlloc")) return std::nullopt;
  segments_[ptr] = {ptr, size};
  watermark_->Sample();
  return ptr;
}

void CudaDeviceMemory::Free(uint64_t ptr, int64_t size) {
  auto it = segments_.find(ptr);
  if (it == segments_.end() || !status_.ok()) return;
  const uint64_t real = it->second.real;
  segments_.erase(it);
  Check(timer_->Time(CudaCall::kMemFree, [&] { return driver_->MemFree(real); }), "cuMemFree");
}

void CudaDeviceMemory::AdoptSegment(uint64_t ptr, int64_t size) {
  if (!status_.ok()) return;
  uint64_t real = 0;
  CuResult r = timer_->Time(CudaCall::kMemAlloc, [&] { return driver_->MemAlloc(&real, size); });
  if (r == kCudaErrorOutOfMemory) {
    status_ = absl::ResourceExhaustedError(absl::StrCat(
        "cuMemAlloc of a ", size, "-byte segment alive before the trace: out of memory"));
    return;
  }
  if (!Check(r, "cuMemAlloc")) return;
  segments_[ptr] = {real, size};
  watermark_->Sample();
}

uint64_t CudaDeviceMemory::ReserveAddressSpace(int64_t size, int64_t page) {
  if (!status_.ok()) return 0;
  if (granularity_ == 0) {
    if (!Check(driver_->AllocationGranularity(&granularity_), "cuMemGetAllocationGranularity")) {
      granularity_ = 0;
      return 0;
    }
  }
  if (granularity_ <= 0 || page % granularity_ != 0) {
    status_ =
        absl::FailedPreconditionError(absl::StrCat("expandable segment page of ", page,
                                                   " bytes is not a multiple of this device's "
                                                   "allocation granularity (",
                                                   granularity_, " bytes)"));
    return 0;
  }
  // Alignment 0 (the driver's granularity) as PyTorch passes: the pages are mapped at
  // page-multiple offsets, so the base needs no stronger alignment.
  uint64_t ptr = 0;
  CuResult r = timer_->Time(CudaCall::kAddressReserve,
                            [&] { return driver_->AddressReserve(&ptr, size, 0); });
  // The interface cannot fail: running out of address space is fatal, not an OOM.
  if (r == kCudaErrorOutOfMemory && status_.ok()) {
    status_ = absl::ResourceExhaustedError(
        absl::StrCat("cuMemAddressReserve of ", size, " bytes: out of address space"));
  }
  if (!Check(r, "cuMemAddressReserve")) return 0;
  reservations_[ptr] = {size, page};
  return ptr;
}

void CudaDeviceMemory::ReleaseAddressSpace(uint64_t ptr, int64_t size) {
  auto it = reservations_.find(ptr);
  if (it == reservations_.end() || !status_.ok()) return;
  // Pages still mapped in the range are returned first (the interface says none are).
  for (auto p = pages_.lower_bound(ptr); p != pages_.end() && p->first < ptr + size;) {
    const uint64_t addr = p->first;
    ++p;
    UnmapPage(addr, it->second.page);
  }
  const int64_t va = it->second.size;
  reservations_.erase(it);
  Check(timer_->Time(CudaCall::kAddressFree, [&] { return driver_->AddressFree(ptr, va); }),
        "cuMemAddressFree");
}

bool CudaDeviceMemory::MapPage(uint64_t addr, int64_t page) {
  uint64_t handle = 0;
  if (!Check(timer_->Time(CudaCall::kMemCreate, [&] { return driver_->MemCreate(&handle, page); }),
             "cuMemCreate")) {
    return false;
  }
  if (!Check(timer_->Time(CudaCall::kMemMap, [&] { return driver_->MemMap(addr, page, handle); }),
             "cuMemMap")) {
    driver_->MemRelease(handle);
    return false;
  }
  pages_[addr] = handle;
  return true;
}

void CudaDeviceMemory::UnmapPage(uint64_t addr, int64_t page) {
  auto it = pages_.find(addr);
  if (it == pages_.end()) return;
  const uint64_t handle = it->second;
  pages_.erase(it);
  Check(timer_->Time(CudaCall::kMemUnmap, [&] { return driver_->MemUnmap(addr, page); }),
        "cuMemUnmap");
  Check(timer_->Time(CudaCall::kMemRelease, [&] { return driver_->MemRelease(handle); }),
        "cuMemRelease");
}

bool CudaDeviceMemory::Map(uint64_t ptr, int64_t size) {
  if (!status_.ok()) return false;
  auto it = reservations_.upper_bound(ptr);
  if (it == reservations_.begin())
    return Check(kCudaErrorInvalidValue, "Map outside a reservation");
  --it;
  const int64_t page = it->second.page;
  auto rollback = [&](int64_t mapped) {  // all or nothing: return the pages this call mapped
    for (int64_t back = 0; back < mapped; back += page) {
      UnmapPage(ptr + static_cast<uint64_t>(back), page);
    }
    return false;
  };
  for (int64_t off = 0; off < size; off += page) {
    if (!MapPage(ptr + static_cast<uint64_t>(off), page)) return rollback(off);
  }
  // One cuMemSetAccess for the whole range, as PyTorch's ExpandableSegment::map does.
  if (!Check(
          timer_->Time(CudaCall::kMemSetAccess, [&] { return driver_->MemSetAccess(ptr, size); }),
          "cuMemSetAccess")) {
    return rollback(size);
  }
  watermark_->Sample();
  return true;
}

void CudaDeviceMemory::Unmap(uint64_t ptr, int64_t size) {
  if (!status_.ok()) return;
  auto it = reservations_.upper_bound(ptr);
  if (it == reservations_.begin()) return;
  --it;
  const int64_t page = it->second.page;
  for (int64_t off = 0; off < size; off += page) UnmapPage(ptr + static_cast<uint64_t>(off), page);
}

int64_t CudaDeviceMemory::FreeBytes() const {
  int64_t f = 0;
  int64_t t = 0;
  if (!status_.ok() || driver_->MemGetInfo(&f, &t) != kCudaSuccess) return 0;
  return f;
}

void CudaDeviceMemory::ReleaseAll() {
  // Best effort and untimed: teardown is not part of the replay.
  for (const auto& [addr, handle] : pages_) {
    auto r = reservations_.upper_bound(addr);
    const int64_t page = r == reservations_.begin() ? 0 : std::prev(r)->second.page;
    driver_->MemUnmap(addr, page);
    driver_->MemRelease(handle);
  }
  pages_.clear();
  for (const auto& [base, res] : reservations_) driver_->AddressFree(base, res.size);
  reservations_.clear();
  std::vector<uint64_t> segs;
  for (const auto& [ptr, seg] : segments_) segs.push_back(seg.real);
  std::sort(segs.begin(), segs.end());  // deterministic call order
  for (uint64_t p : segs) driver_->MemFree(p);
  segments_.clear();
}

}  // namespace memsnap::sim
