// The GPU replay driver: the prepared trace of replay_internal.h, replayed once per
// configuration on a CUDA device through sim::CudaDriver.
#include "memsnap/analysis/allocator/replay_cuda.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

using sim::CudaCall;
using sim::CuResult;

// The cold start (blocks alive before the trace) then the trace, as RunConfig replays them.
template <typename F>
void ForEachOp(const PreparedTrace& prepared, F&& f) {
  for (const Op& op : prepared.cold) f(op);
  for (const Op& op : prepared.ops) f(op);
}

// Every request size times `scale` (at least one byte); addresses are kept as identities.
void ScaleTrace(PreparedTrace& prepared, double scale) {
  if (scale == 1.0) return;
  for (std::vector<Op>* ops : {&prepared.cold, &prepared.ops}) {
    for (Op& op : *ops) {
      if (op.kind != OpKind::kAlloc && op.kind != OpKind::kOomMalloc) continue;
      op.size = std::max<int64_t>(1, std::llround(static_cast<double>(op.size) * scale));
    }
  }
}

// Σ live request sizes at most: no allocator can need less.
int64_t PeakLive(const PreparedTrace& prepared) {
  absl::flat_hash_map<uint64_t, int64_t> live;
  int64_t cur = 0;
  int64_t peak = 0;
  ForEachOp(prepared, [&](const Op& op) {
    if (op.kind == OpKind::kAlloc) {
      cur += op.size;
      live[op.addr] += op.size;
      peak = std::max(peak, cur);
    } else if (op.kind == OpKind::kOomMalloc) {
      peak = std::max(peak, cur + op.size);  // served and given back at once when it fits
    } else if (op.kind == OpKind::kFree || op.kind == OpKind::kFreeCompleted) {
      auto it = live.find(op.addr);
      if (it == live.end()) return;
      cur -= it->second;
      live.erase(it);
    }
  });
  return peak;
}

void FinishCalls(const sim::CallTimer& timer, CudaConfigResult& r) {
  r.calls = timer.Summaries();
  r.alloc_calls_ns = 0;
  for (const sim::CallSummary& c : r.calls) {
    if (c.name == "cuMemAlloc" || c.name == "cuMemAddressReserve" || c.name == "cuMemCreate" ||
        c.name == "cuMemMap" || c.name == "cuMemSetAccess" || c.name == "cuMemAllocAsync") {
      r.alloc_calls_ns += c.total_ns;
    }
  }
}

// The caching allocator (native or expandable segments) deciding, real segments underneath.
// RunConfig's dispatch (ApplyOp), without the curve and --verify bookkeeping.
void RunCaching(const PreparedTrace& prepared, const ReplayConfig& config, sim::CudaDriver& driver,
                const sim::NanoClock& clock, CudaConfigResult& r) {
  sim::CallTimer timer(clock);
  sim::DriverWatermark mark(&driver);
  {
    sim::CudaDeviceMemory device(&driver, &timer, &mark);
    sim::CachingAllocator alloc(config.config, &device);
    LiveBlocks live;
    int64_t peak_reserved = 0;
    ForEachOp(prepared, [&](const Op& op) {
      if (IsMalloc(op.kind)) ++r.allocs;
      ApplyOp(
          op, alloc, live, [](sim::BlockRef) {}, [&] { ++r.ooms; });
      peak_reserved = std::max(peak_reserved, alloc.stats().reserved_bytes.aggregate.current);
    });
    r.peak_reserved = peak_reserved;
    r.driver_ooms = device.driver_ooms();
    if (!device.status().ok()) r.error = std::string(device.status().message());
    mark.Sample();
    r.driver_after = mark.growth();
  }  // ~CudaDeviceMemory returns every segment, mapping and reservation
  r.driver_peak = mark.peak_growth();
  FinishCalls(timer, r);
}

// CUDA's stream-ordered pool: the trace's own alloc/free, one stream per recorded stream, set
// up as PyTorch's backend:cudaMallocAsync does (release threshold = UINT64_MAX; on OOM,
// synchronize and retry once).
void RunAsync(const PreparedTrace& prepared, sim::CudaDriver& driver, const sim::NanoClock& clock,
              CudaConfigResult& r) {
  sim::CallTimer timer(clock);
  std::string& error = r.error;
  auto check = [&](CuResult res, const char* what) {
    if (res != sim::kCudaSuccess && error.empty()) {
      error = absl::StrCat(what, " failed: ", sim::DescribeCuResult(driver, res));
    }
    return res == sim::kCudaSuccess;
  };
  check(driver.PoolTrimTo(0), "cuMemPoolTrimTo");
  check(driver.PoolSetAttribute(sim::PoolAttr::kReleaseThreshold, UINT64_MAX),
        "cuMemPoolSetAttribute(RELEASE_THRESHOLD)");
  check(driver.PoolSetAttribute(sim::PoolAttr::kReservedMemHigh, 0),
        "cuMemPoolSetAttribute(RESERVED_MEM_HIGH)");
  check(driver.PoolSetAttribute(sim::PoolAttr::kUsedMemHigh, 0),
        "cuMemPoolSetAttribute(USED_MEM_HIGH)");
  sim::DriverWatermark mark(&driver);
  std::map<int64_t, uint64_t> streams;  // recorded stream -> CUstream, ordered for teardown
  auto stream_of = [&](int64_t recorded) -> uint64_t {
    auto it = streams.find(recorded);
    if (it != streams.end()) return it->second;
    uint64_t s = 0;
    check(driver.StreamCreate(&s), "cuStreamCreate");
    streams[recorded] = s;
    return s;
  };
  auto sync_all = [&] {
    for (const auto& [id, s] : streams) check(driver.StreamSynchronize(s), "cuStreamSynchronize");
  };
  struct Live {
    uint64_t ptr;
    uint64_t stream;
  };
  absl::flat_hash_map<uint64_t, Live> live;
  ForEachOp(prepared, [&](const Op& op) {
    if (!error.empty()) return;
    switch (op.kind) {
      case OpKind::kAlloc:
      case OpKind::kOomMalloc: {
        ++r.allocs;
        const uint64_t s = stream_of(op.stream);
        uint64_t p = 0;
        CuResult res = timer.Time(CudaCall::kMemAllocAsync,
                                  [&] { return driver.MemAllocAsync(&p, op.size, s); });
        if (res == sim::kCudaErrorOutOfMemory) {
          ++r.driver_ooms;
          sync_all();
          res = timer.Time(CudaCall::kMemAllocAsync,
                           [&] { return driver.MemAllocAsync(&p, op.size, s); });
          if (res == sim::kCudaErrorOutOfMemory) {
            ++r.driver_ooms;
            ++r.ooms;
            if (op.kind == OpKind::kAlloc) live.erase(op.addr);
            break;
          }
        }
        if (!check(res, "cuMemAllocAsync")) break;
        mark.Sample();
        if (op.kind == OpKind::kAlloc) {
          live[op.addr] = {p, s};
        } else {  // a recorded OOM that fits here: given back at once
          check(timer.Time(CudaCall::kMemFreeAsync, [&] { return driver.MemFreeAsync(p, s); }),
                "cuMemFreeAsync");
        }
        break;
      }
      case OpKind::kFree:
      case OpKind::kFreeCompleted: {
        // A free with recorded stream uses returns to the pool when they complete.
        auto it = live.find(op.addr);
        if (it == live.end()) break;
        const Live l = it->second;
        live.erase(it);
        check(timer.Time(CudaCall::kMemFreeAsync,
                         [&] { return driver.MemFreeAsync(l.ptr, l.stream); }),
              "cuMemFreeAsync");
        break;
      }
      case OpKind::kFreeRequested:
        break;
      case OpKind::kEmptyCache:  // PyTorch: synchronize, then trim the pool to nothing
        sync_all();
        check(driver.PoolTrimTo(0), "cuMemPoolTrimTo");
        break;
    }
  });
  sync_all();
  uint64_t v = 0;
  if (driver.PoolGetAttribute(sim::PoolAttr::kReservedMemHigh, &v) == sim::kCudaSuccess) {
    r.pool_reserved_high = static_cast<int64_t>(v);
  }
  if (driver.PoolGetAttribute(sim::PoolAttr::kUsedMemHigh, &v) == sim::kCudaSuccess) {
    r.pool_used_high = static_cast<int64_t>(v);
  }
  mark.Sample();
  r.driver_after = mark.growth();
  r.driver_peak = mark.peak_growth();
  // Teardown (untimed): free what is still live, give the pool's memory back, drop the streams.
  std::vector<std::pair<uint64_t, uint64_t>> rest;
  for (const auto& [addr, l] : live) rest.emplace_back(l.ptr, l.stream);
  std::sort(rest.begin(), rest.end());
  for (const auto& [p, s] : rest) driver.MemFreeAsync(p, s);
  for (const auto& [id, s] : streams) driver.StreamSynchronize(s);
  driver.PoolTrimTo(0);
  for (const auto& [id, s] : streams) driver.StreamDestroy(s);
  FinishCalls(timer, r);
}

}  // namespace

bool IsCudaMallocAsync(const ReplayConfig& config) {
  return config.config.backend == "cudaMallocAsync";
}

absl::StatusOr<CudaReplayReport> RunCudaReplay(const Snapshot& snapshot,
                                               const std::vector<ReplayConfig>& configs,
                                               const CudaReplayOptions& options,
                                               sim::CudaDriver& driver) {
  if (!(options.scale > 0.0) || !std::isfinite(options.scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scale ", options.scale, ": expected a factor > 0, e.g. 0.25"));
  }
  absl::StatusOr<const DeviceTrace*> trace = SelectTrace(snapshot, options.device);
  if (!trace.ok()) return trace.status();
  if (CuResult r = driver.Init(); r != sim::kCudaSuccess) {
    return absl::FailedPreconditionError(
        r == sim::kCudaErrorNoDevice
            ? absl::StrCat("no CUDA device found (cuInit: ", sim::DescribeCuResult(driver, r), ")")
            : absl::StrCat("cuInit failed: ", sim::DescribeCuResult(driver, r)));
  }
  int count = 0;
  if (CuResult r = driver.DeviceCount(&count); r != sim::kCudaSuccess || count == 0) {
    return absl::FailedPreconditionError("no CUDA device found");
  }
  if (options.gpu < 0 || options.gpu >= count) {
    return absl::FailedPreconditionError(absl::StrCat("--gpu ", options.gpu, ": this machine has ",
                                                      count, " CUDA device", count == 1 ? "" : "s",
                                                      " (0..", count - 1, ")"));
  }
  CudaReplayReport report;
  report.file = snapshot.source.path;
  report.trace_device = (*trace)->device;
  report.events = (*trace)->size();
  report.gpu = options.gpu;
  report.scale = options.scale;
  driver.DeviceName(options.gpu, &report.gpu_name);
  if (CuResult r = driver.Open(options.gpu); r != sim::kCudaSuccess) {
    driver.Close();
    return absl::FailedPreconditionError(absl::StrCat("cannot open CUDA device ", options.gpu, ": ",
                                                      sim::DescribeCuResult(driver, r)));
  }
  if (driver.MemGetInfo(&report.gpu_free_before, &report.gpu_total) != sim::kCudaSuccess) {
    report.gpu_free_before = report.gpu_total = 0;
  }
  // The card's capacity is known: pressure releases happen where this card needs them.
  PreparedTrace prepared = PrepareTrace(snapshot, **trace, options.empty_cache,
                                        sim::ConfigFromSettings(snapshot.settings), true);
  ScaleTrace(prepared, options.scale);
  const int64_t peak_live = PeakLive(prepared);
  report.peak_live = peak_live;
  // A warm start would hand the simulator the recorded segment addresses beside this card's
  // real ones, and the two can collide: the GPU replay starts cold.
  report.warm_start_refused = options.warm_start;
  if (peak_live > report.gpu_free_before) {
    report.suggested_scale =
        0.9 * static_cast<double>(report.gpu_free_before) / static_cast<double>(peak_live);
  }
  for (const ReplayConfig& c : configs) {
    CudaConfigResult r;
    r.config = c;
    r.peak_live = peak_live;
    if (IsCudaMallocAsync(c)) {
      r.allocator = "cudaMallocAsync";
      RunAsync(prepared, driver, options.clock, r);
    } else {
      r.allocator = c.config.expandable_segments ? "expandable" : "native";
      RunCaching(prepared, c, driver, options.clock, r);
      RunOptions ro;
      ro.capacity = report.gpu_free_before > 0 ? report.gpu_free_before : sim::kUnlimitedCapacity;
      RunOutput predicted = RunConfig(prepared, c, ro);
      r.predicted_peak_reserved = predicted.result.peak_reserved;
      r.predicted_ooms = static_cast<int64_t>(predicted.result.ooms.size());
    }
    report.results.push_back(std::move(r));
  }
  driver.Close();
  return report;
}

absl::StatusOr<CudaReplayReport> RunCudaReplay(const Snapshot& snapshot,
                                               const std::vector<ReplayConfig>& configs,
                                               const CudaReplayOptions& options) {
  absl::StatusOr<std::unique_ptr<sim::CudaDriver>> driver = sim::LoadCudaDriver();
  absl::StatusOr<CudaReplayReport> rep = driver.ok()
                                             ? RunCudaReplay(snapshot, configs, options, **driver)
                                             : absl::StatusOr<CudaReplayReport>(driver.status());
  if (rep.ok()) return rep;
  return absl::Status(rep.status().code(),
                      absl::StrCat("--backend cuda: ", Sv(ToStd(rep.status().message()))));
}

}  // namespace memsnap::analysis
