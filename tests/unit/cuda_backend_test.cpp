// The GPU replay driven by a fake CUDA driver: call order and sizes, the OOM path, fatal
// errors, missing devices and symbols, the cudaMallocAsync replay, call timing. Runs everywhere;
// no GPU or driver is needed.
#include <doctest/doctest.h>

#include <fstream>

#include "cuda_fake_driver.h"
#include "memsnap/analysis/allocator/replay_cuda.h"
#include "memsnap/report/replay_cuda_render.h"
#include "memsnap/sim/config.h"
#include "memsnap/util/build_info.h"
#include "memsnap/util/strings.h"
#include "test_util.h"
#include "trace_builders.h"

#ifdef MEMSNAP_HAVE_CUDA
#include <cuda.h>
#endif

namespace memsnap {
namespace {

using analysis::CudaReplayOptions;
using analysis::CudaReplayReport;
using analysis::ReplayConfig;
using testing::Ev;
using testing::FakeCudaDriver;
using testing::TraceSnapshot;

using testing::kMiB;

// Two 4 MB tensors on stream 0, one 1000-byte tensor on stream 7, all freed.
Snapshot SmallTrace() {
  StreamTable streams;
  const StreamId s7 = streams.Intern(7);
  return TraceSnapshot(
      {
          Ev(Action::kAlloc, 0x1000, 4000000),
          Ev(Action::kAlloc, 0x2000, 4000000),
          Ev(Action::kAlloc, 0x3000, 1000, s7),
          Ev(Action::kFreeRequested, 0x1000, 4000000),
          Ev(Action::kFreeCompleted, 0x1000, 4000000),
          Ev(Action::kFreeRequested, 0x2000, 4000000),
          Ev(Action::kFreeCompleted, 0x2000, 4000000),
          Ev(Action::kFreeRequested, 0x3000, 1000, s7),
          Ev(Action::kFreeCompleted, 0x3000, 1000, s7),
      },
      streams);
}

ReplayConfig Config(const std::string& conf) {
  absl::StatusOr<sim::AllocatorConfig> c = sim::ParseAllocatorConf(conf);
  REQUIRE(c.ok());
  return {conf, *c};
}

CudaReplayReport RunOrFail(const Snapshot& snap, const std::vector<ReplayConfig>& configs,
                           FakeCudaDriver& driver, CudaReplayOptions options = {}) {
  int64_t tick = 0;
  options.clock = [&tick] { return tick += 1000; };  // every call takes 1 us
  absl::StatusOr<CudaReplayReport> rep = analysis::RunCudaReplay(snap, configs, options, driver);
  REQUIRE_MESSAGE(rep.ok(), std::string(rep.status().message()));
  return *rep;
}

std::vector<std::string> MemoryCalls(const FakeCudaDriver& d) {
  std::vector<std::string> out;
  for (const std::string& s : d.log) {
    if (s.rfind("Stream", 0) != 0 && s.rfind("Pool", 0) != 0) out.push_back(s);
  }
  return out;
}

TEST_SUITE("cuda_backend") {
  TEST_CASE("native segments become one cuMemAlloc per simulated segment, freed at the end") {
    FakeCudaDriver d;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("expandable_segments:False")}, d);
    REQUIRE(rep.results.size() == 1);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.allocator == "native");
    CHECK(r.error.empty());
    // 4 MB requests share one 20 MiB large segment; the 1000-byte one gets a 2 MiB small segment.
    CHECK(MemoryCalls(d) == std::vector<std::string>{"MemAlloc 20971520", "MemAlloc 2097152",
                                                     "MemFree 20971520", "MemFree 2097152"});
    CHECK(r.peak_reserved == 22 * kMiB);
    CHECK(r.predicted_peak_reserved == 22 * kMiB);
    CHECK(r.driver_peak == 22 * kMiB);
    CHECK(r.driver_after == 22 * kMiB);  // the cache keeps its segments until teardown
    CHECK(r.allocs == 3);
    CHECK(r.ooms == 0);
    CHECK(r.predicted_ooms == 0);
    CHECK(d.used == 0);
    CHECK(d.segments.empty());
    CHECK_FALSE(d.open);
    REQUIRE(r.calls.size() == 1);  // only cuMemAlloc is timed during the replay
    CHECK(r.calls[0].name == "cuMemAlloc");
    CHECK(r.calls[0].calls == 2);
    CHECK(r.calls[0].total_ns == 2000);
    CHECK(r.alloc_calls_ns == 2000);
    CHECK(rep.gpu_name == "Fake GPU 0");
  }

  TEST_CASE("expandable segments reserve address space and map whole pages one handle each") {
    FakeCudaDriver d;
    d.capacity = 100 * kMiB;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("expandable_segments:True")}, d);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.allocator == "expandable");
    CHECK(r.error.empty());
    std::vector<std::string> calls = MemoryCalls(d);
    // Large pool: VA = 9/8 of the device in 20 MiB pages; one page covers both 4 MB tensors.
    REQUIRE(calls.size() >= 8);
    CHECK(calls[0] == "AddressReserve 125829120 0");  // alignment: the driver's
    CHECK(calls[1] == "MemCreate 20971520");
    CHECK(calls[2] == "MemMap 20971520");
    CHECK(calls[3] == "MemSetAccess 20971520");
    CHECK(d.Calls("MemCreate") ==
          std::vector<std::string>{"MemCreate 20971520", "MemCreate 2097152"});
    CHECK(d.Calls("MemAlloc").empty());
    CHECK(r.peak_reserved == 22 * kMiB);
    CHECK(r.predicted_peak_reserved == 22 * kMiB);
    CHECK(r.driver_peak == 22 * kMiB);
    // Teardown returns every page and reservation.
    CHECK(d.used == 0);
    CHECK(d.handles.empty());
    CHECK(d.mappings.empty());
    CHECK(d.reservations.empty());
  }

  TEST_CASE("a page size that is not a multiple of the device granularity is a clear error") {
    FakeCudaDriver d;
    d.granularity = 3 * kMiB;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("expandable_segments:True")}, d);
    CHECK(rep.results[0].error.find("not a multiple of this device's allocation granularity") !=
          std::string::npos);
    CHECK(d.Calls("AddressReserve").empty());
  }

  TEST_CASE("cuMemAlloc out of memory takes the simulator's OOM path") {
    FakeCudaDriver d;
    d.capacity = 30 * kMiB;
    Snapshot snap = TraceSnapshot({
        Ev(Action::kAlloc, 0x1000, 20 * kMiB),
        Ev(Action::kAlloc, 0x2000, 20 * kMiB),          // does not fit: OOM
        Ev(Action::kFreeCompleted, 0x2000, 20 * kMiB),  // its free is skipped
        Ev(Action::kFreeCompleted, 0x1000, 20 * kMiB),
        Ev(Action::kAlloc, 0x3000, 20 * kMiB),  // reuses the cached segment
    });
    CudaReplayReport rep = RunOrFail(snap, {Config("expandable_segments:False")}, d);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.error.empty());
    CHECK(r.allocs == 3);
    CHECK(r.ooms == 1);
    CHECK(r.predicted_ooms == 1);
    CHECK(r.driver_ooms >= 1);
    CHECK(r.peak_reserved == 20 * kMiB);
    CHECK(d.Calls("MemAlloc").size() >= 2);
    CHECK(d.used == 0);
  }

  TEST_CASE("a driver error other than OOM stops the configuration and is reported") {
    FakeCudaDriver d;
    d.fail["MemAlloc"] = {2, sim::kCudaErrorInvalidValue};
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("expandable_segments:False")}, d);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.error == "cuMemAlloc failed: fake error 1 (CUresult 1)");
    CHECK(d.Calls("MemAlloc").size() == 2);  // nothing after the failure
    CHECK(d.used == 0);                      // the first segment was still returned
  }

  TEST_CASE("a failed map returns the pages the call already mapped") {
    FakeCudaDriver d;
    d.fail["MemMap"] = {2, sim::kCudaErrorInvalidValue};
    Snapshot snap = TraceSnapshot({Ev(Action::kAlloc, 0x1000, 30 * kMiB)});  // two 20 MiB pages
    CudaReplayReport rep = RunOrFail(snap, {Config("expandable_segments:True")}, d);
    CHECK(rep.results[0].error.rfind("cuMemMap failed", 0) == 0);
    CHECK(d.used == 0);
    CHECK(d.handles.empty());
    CHECK(d.mappings.empty());
    CHECK(d.reservations.empty());
  }

  TEST_CASE("no device, a failed cuInit and a bad ordinal are errors before any allocation") {
    FakeCudaDriver d;
    d.init_result = sim::kCudaErrorNoDevice;
    absl::StatusOr<CudaReplayReport> rep =
        analysis::RunCudaReplay(SmallTrace(), {Config("")}, {}, d);
    REQUIRE_FALSE(rep.ok());
    CHECK(absl::IsFailedPrecondition(rep.status()));
    CHECK(std::string(rep.status().message()) ==
          "no CUDA device found (cuInit: fake error 100 (CUresult 100))");

    FakeCudaDriver none;
    none.device_count = 0;
    rep = analysis::RunCudaReplay(SmallTrace(), {Config("")}, {}, none);
    CHECK(std::string(rep.status().message()) == "no CUDA device found");

    FakeCudaDriver one;
    CudaReplayOptions o;
    o.gpu = 3;
    rep = analysis::RunCudaReplay(SmallTrace(), {Config("")}, o, one);
    CHECK(std::string(rep.status().message()) == "--gpu 3: this machine has 1 CUDA device (0..0)");
    CHECK(one.log.empty());

    o.gpu = 0;
    o.scale = 0;
    rep = analysis::RunCudaReplay(SmallTrace(), {Config("")}, o, one);
    CHECK(std::string(rep.status().message()) == "--scale 0: expected a factor > 0, e.g. 0.25");
  }

  TEST_CASE("a snapshot without trace events is an error") {
    FakeCudaDriver d;
    Snapshot empty;
    absl::StatusOr<CudaReplayReport> rep = analysis::RunCudaReplay(empty, {Config("")}, {}, d);
    REQUIRE_FALSE(rep.ok());
    CHECK(std::string(rep.status().message()).find("no trace events") != std::string::npos);
  }

  TEST_CASE("cudaMallocAsync replays the trace on one stream per recorded stream") {
    FakeCudaDriver d;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("backend:cudaMallocAsync")}, d);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.allocator == "cudaMallocAsync");
    CHECK(r.error.empty());
    CHECK(d.Calls("PoolSetAttribute 0") == std::vector<std::string>{"PoolSetAttribute 0 -1"});
    CHECK(d.Calls("MemAllocAsync") == std::vector<std::string>{"MemAllocAsync 4000000",
                                                               "MemAllocAsync 4000000",
                                                               "MemAllocAsync 1000"});
    CHECK(d.Calls("MemFreeAsync").size() == 3);
    CHECK(d.Calls("StreamCreate").size() == 2);
    CHECK(d.Calls("StreamDestroy").size() == 2);
    CHECK(d.streams.empty());
    CHECK(r.pool_reserved_high == 8001000);
    CHECK(r.pool_used_high == 8001000);
    CHECK(r.peak_live == 8001000);
    CHECK(r.driver_peak == 8001000);
    CHECK_FALSE(r.peak_reserved.has_value());
    CHECK_FALSE(r.predicted_peak_reserved.has_value());
    CHECK(d.used == 0);  // trimmed at teardown
    REQUIRE(r.calls.size() == 2);
    CHECK(r.calls[0].name == "cuMemAllocAsync");
    CHECK(r.calls[1].name == "cuMemFreeAsync");
    CHECK(r.alloc_calls_ns == 3000);
  }

  TEST_CASE("cudaMallocAsync retries an OOM once after synchronizing, then counts it") {
    FakeCudaDriver d;
    d.capacity = 6 * kMiB;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("backend:cudaMallocAsync")}, d);
    const analysis::CudaConfigResult& r = rep.results[0];
    CHECK(r.error.empty());
    CHECK(r.ooms == 1);
    CHECK(r.driver_ooms == 2);
    CHECK(d.Calls("MemAllocAsync").size() == 4);
    CHECK(d.used == 0);
  }

  TEST_CASE("--scale multiplies every request size") {
    FakeCudaDriver d;
    CudaReplayOptions o;
    o.scale = 0.5;
    CudaReplayReport rep = RunOrFail(SmallTrace(), {Config("backend:cudaMallocAsync")}, d, o);
    CHECK(d.Calls("MemAllocAsync") == std::vector<std::string>{"MemAllocAsync 2000000",
                                                               "MemAllocAsync 2000000",
                                                               "MemAllocAsync 500"});
    CHECK(report::CudaReplayNotes(rep) ==
          std::vector<std::string>{"every request size was multiplied by 0.5"});
  }

  TEST_CASE("a recorded OOM is a malloc that is given back at once when the card can serve it") {
    Snapshot snap = TraceSnapshot({
        Ev(Action::kAlloc, 0x1000, 4000000),
        Ev(Action::kOom, /*device_free=*/1000, 30 * kMiB),
        Ev(Action::kFreeCompleted, 0x1000, 4000000),
    });
    FakeCudaDriver d;
    CudaReplayReport rep = RunOrFail(
        snap, {Config("expandable_segments:False"), Config("backend:cudaMallocAsync")}, d);
    CHECK(rep.results[0].allocs == 2);
    CHECK(rep.results[0].ooms == 0);
    CHECK(rep.results[0].peak_reserved == 50 * kMiB);  // 20 MiB segment + a 30 MiB one
    CHECK(d.Calls("MemAllocAsync ") ==
          std::vector<std::string>{"MemAllocAsync 4000000", "MemAllocAsync 31457280"});
    CHECK(d.Calls("MemFreeAsync 31457280").size() == 1);
    CHECK(rep.results[1].peak_live == 4000000 + 30 * kMiB);
    CHECK(d.used == 0);
  }

  TEST_CASE("every configuration runs in order on the same device") {
    FakeCudaDriver d;
    CudaReplayReport rep = RunOrFail(
        SmallTrace(),
        {Config(""), Config("expandable_segments:True"), Config("backend:cudaMallocAsync")}, d);
    REQUIRE(rep.results.size() == 3);
    CHECK(rep.results[0].allocator == "native");
    CHECK(rep.results[1].allocator == "expandable");
    CHECK(rep.results[2].allocator == "cudaMallocAsync");
    CHECK(d.used == 0);
  }

  TEST_CASE(
      "an adopted segment is backed by a real allocation freed under the simulator's address") {
    FakeCudaDriver d;
    d.capacity = 30 * kMiB;
    sim::CallTimer timer;
    sim::DriverWatermark mark(&d);
    {
      sim::CudaDeviceMemory mem(&d, &timer, &mark);
      mem.AdoptSegment(0xabc000, 20 * kMiB);
      CHECK(d.used == 20 * kMiB);
      mem.Free(0xabc000, 20 * kMiB);
      CHECK(d.used == 0);
      CHECK(d.Calls("Mem") == std::vector<std::string>{"MemAlloc 20971520", "MemFree 20971520"});
      mem.AdoptSegment(0xdef000, 40 * kMiB);  // does not fit: fatal, not an OOM
      CHECK(absl::IsResourceExhausted(mem.status()));
      CHECK_FALSE(mem.Malloc(2 * kMiB).has_value());
    }
    CHECK(d.Calls("MemAlloc").size() == 2);
    CHECK(mark.peak_growth() == 20 * kMiB);
  }

  TEST_CASE("nearest-rank percentiles and per-kind call summaries") {
    std::vector<int64_t> v = {5, 1, 4, 2, 3};
    CHECK(sim::NearestRank(v, 0.5) == 3);
    CHECK(sim::NearestRank(v, 0.99) == 5);
    std::vector<int64_t> empty;
    CHECK(sim::NearestRank(empty, 0.5) == 0);
    int64_t t = 0;
    int64_t step = 0;
    sim::CallTimer timer([&] { return t += (step++ % 2 == 0) ? 0 : 10 * step; });
    for (int i = 0; i < 4; ++i)
      timer.Time(sim::CudaCall::kMemMap, [] { return sim::kCudaSuccess; });
    std::vector<sim::CallSummary> s = timer.Summaries();
    REQUIRE(s.size() == 1);
    CHECK(s[0].name == "cuMemMap");
    CHECK(s[0].calls == 4);
    CHECK(s[0].total_ns == 10 * (2 + 4 + 6 + 8));
    CHECK(s[0].p50_ns == 40);
    CHECK(s[0].p99_ns == 80);
  }

  TEST_CASE("--version lists cuda exactly when the backend is built in") {
    testing::RunResult r = testing::RunMemsnap({"--version"});
    CHECK(r.exit_code == 0);
    CHECK((r.out.find("features: cuda") != std::string::npos) == BuiltWithCuda());
  }

  TEST_CASE("without a usable driver, --backend cuda exits 2 with a clear message") {
    absl::StatusOr<std::unique_ptr<sim::CudaDriver>> probe = sim::LoadCudaDriver();
    if (probe.ok()) {
      // Never a silent pass: the runner counts it as skipped and says why (test_main.cpp).
      testing::SkipTestCase(
          "a CUDA driver is present, so the no-driver path cannot be reached here (tests/gpu/ "
          "covers --backend cuda with the driver)");
      return;
    }
    std::string path = testing::TempDir() + "/cuda_cli.pickle";
    std::ofstream(path, std::ios::binary) << testing::PythonPickle(
        "{'segments': [], 'device_traces': [[{'action': 'alloc', 'addr': 4096, 'size': 512, "
        "'stream': 0, 'frames': []}]]}");
    testing::RunResult r = testing::RunMemsnap({"replay", path, "--backend", "cuda"});
    CHECK(r.exit_code == 2);
    const std::string expected =
        BuiltWithCuda() ? "memsnap replay: --backend cuda: no CUDA driver found (libcuda.so.1): "
                        : "memsnap replay: --backend cuda: memsnap was built without CUDA; "
                          "reconfigure with -DMEMSNAP_ENABLE_CUDA=ON";
    CHECK_MESSAGE(r.err.rfind(expected, 0) == 0, r.err);
    r = testing::RunMemsnap({"replay", path, "--allocator", "cudaMallocAsync"});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("need --backend cuda") != std::string::npos);
  }

#ifdef MEMSNAP_HAVE_CUDA
  // Fake entry points with cuda.h's exact types (UBSan's -fsanitize=function checks them).
  CUresult CUDAAPI FakeCuInitNoDevice(unsigned int) { return CUDA_ERROR_NO_DEVICE; }
  CUresult CUDAAPI FakeCuGetErrorString(CUresult, const char** s) {
    *s = "no CUDA-capable device is detected";
    return CUDA_SUCCESS;
  }
  CUresult CUDAAPI FakeCuUnused() { return CUDA_ERROR_NOT_SUPPORTED; }  // never called

  TEST_CASE("a driver without one of the needed symbols is refused by name") {
    absl::StatusOr<std::unique_ptr<sim::CudaDriver>> d =
        sim::CudaDriverFromResolver([](const char* name) -> void* {
          return std::string_view(name) == "cuMemAllocAsync"
                     ? nullptr
                     : reinterpret_cast<void*>(&FakeCuUnused);
        });
    REQUIRE_FALSE(d.ok());
    CHECK(std::string(d.status().message()).rfind("the CUDA driver lacks cuMemAllocAsync", 0) == 0);
  }

  TEST_CASE("the dlopen driver table reports cuInit's no-device error through RunCudaReplay") {
    absl::StatusOr<std::unique_ptr<sim::CudaDriver>> d =
        sim::CudaDriverFromResolver([](const char* name) -> void* {
          std::string_view n(name);
          if (n == "cuInit") return reinterpret_cast<void*>(&FakeCuInitNoDevice);
          if (n == "cuGetErrorString") return reinterpret_cast<void*>(&FakeCuGetErrorString);
          return reinterpret_cast<void*>(&FakeCuUnused);
        });
    REQUIRE(d.ok());
    absl::StatusOr<CudaReplayReport> rep =
        analysis::RunCudaReplay(SmallTrace(), {Config("")}, {}, **d);
    REQUIRE_FALSE(rep.ok());
    CHECK(std::string(rep.status().message()) ==
          "no CUDA device found (cuInit: no CUDA-capable device is detected (CUresult 100))");
  }
#endif  // MEMSNAP_HAVE_CUDA

}  // TEST_SUITE

}  // namespace
}  // namespace memsnap
