// memsnap_replay_bench [--events N] [--configs K] [--per-config] [FILE...]
// Replay throughput: a synthetic training-like trace of N events (recorded by the simulator
// itself, so addresses are realistic), then every FILE given, each replayed under the recorded
// settings on one core, then K configurations in parallel. Prints trace events per second.
// --per-config: each FILE is also replayed under each of the K configurations on one core (the
// simulator's own speed per configuration, docs/BENCHMARKS.md), best of 3 runs of at least
// 0.2 s of CPU each.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/parse/reader.h"

namespace {

using memsnap::Action;
using memsnap::Snapshot;
using memsnap::TraceEvent;
namespace analysis = memsnap::analysis;
namespace sim = memsnap::sim;

Snapshot Synthetic(size_t target_events) {
  sim::VirtualDeviceMemory device;
  sim::CachingAllocator alloc(sim::AllocatorConfig{}, &device);
  std::vector<TraceEvent> events;
  events.reserve(target_events + 16);
  std::vector<std::pair<sim::BlockRef, int64_t>> live;
  uint64_t seed = 42;
  auto next = [&] {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return seed >> 33;
  };
  auto push = [&](Action a, uint64_t addr, int64_t size) {
    TraceEvent e;
    e.action = a;
    e.addr = addr;
    e.size = size;
    events.push_back(e);
  };
  // A layer-by-layer pattern: activations grow, then are released; weights-like blocks stay.
  const int64_t sizes[] = {512, 4096, 65536, 1 << 20, 3 << 20, 8 << 20, 24 << 20, 96 << 20};
  while (events.size() < target_events) {
    const bool grow = live.size() < 64 || (live.size() < 400 && next() % 2 == 0);
    if (grow) {
      int64_t n = sizes[next() % 8] + static_cast<int64_t>(next() % 4096);
      std::optional<sim::BlockRef> b = alloc.Malloc(n, 0);
      push(Action::kAlloc, alloc.BlockPtr(*b), n);
      live.push_back({*b, n});
    } else {
      size_t k = next() % live.size();
      auto [b, n] = live[k];
      live[k] = live.back();
      live.pop_back();
      uint64_t ptr = alloc.BlockPtr(b);
      alloc.Free(b);
      push(Action::kFreeRequested, ptr, n);
      push(Action::kFreeCompleted, ptr, n);
    }
  }
  Snapshot s;
  s.events = std::move(events);
  s.traces.push_back({0, 0, static_cast<uint32_t>(s.events.size())});
  return s;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of this thread: on a shared, oversubscribed machine wall time says little about the
// work done per core.
double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Trace events per CPU-second of RunConfig under `config`: the best of `rounds` measurements,
// each repeating the replay until it has run 0.2 s of CPU (small traces).
double EventsPerSecond(const analysis::PreparedTrace& p, const analysis::ReplayConfig& config,
                       const analysis::RunOptions& ro, size_t events, int rounds) {
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    int reps = 0;
    double run = 0;
    const double c0 = ThreadCpu();
    do {
      analysis::RunOutput out = analysis::RunConfig(p, config, ro);
      ++reps;
      run = ThreadCpu() - c0;
    } while (run < 0.2);
    best = std::max(best, static_cast<double>(events) * reps / run);
  }
  return best;
}

void BenchOne(const std::string& name, const Snapshot& snap,
              const std::vector<analysis::ReplayConfig>* per_config) {
  const memsnap::DeviceTrace* trace = nullptr;
  for (const auto& t : snap.traces) {
    if (t.size() > 0) {
      trace = &t;
      break;
    }
  }
  if (trace == nullptr) return;
  sim::AllocatorConfig recorded = sim::ConfigFromSettings(snap.settings);
  double c0 = ThreadCpu();
  analysis::PreparedTrace p =
      analysis::PrepareTrace(snap, *trace, analysis::EmptyCacheMode::kHeuristic, recorded, false);
  double prep = ThreadCpu() - c0;
  analysis::RunOptions ro;
  ro.events = snap.EventsOf(*trace);
  const double rate = EventsPerSecond(p, {"recorded", recorded}, ro, trace->size(), 1);
  std::printf("%-60s %9u events  prepare %7.2f Mev/s  replay %7.2f Mev/s (per CPU-second)\n",
              name.c_str(), trace->size(), trace->size() / prep / 1e6, rate / 1e6);
  if (per_config == nullptr) return;
  for (const analysis::ReplayConfig& c : *per_config) {
    absl::StatusOr<sim::AllocatorConfig> applied = sim::ApplyAllocatorConf(recorded, c.label);
    if (!applied.ok()) continue;
    const double r = EventsPerSecond(p, {c.label, *applied}, ro, trace->size(), 3);
    std::printf("  %-52s replay %7.2f Mev/s (per CPU-second, best of 3)\n",
                c.label.empty() ? "recorded" : c.label.c_str(), r / 1e6);
  }
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 5'000'000;
  size_t configs = 8;
  std::vector<std::string> files;
  bool per_config = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--per-config")) {
      per_config = true;
    } else if (!std::strcmp(argv[i], "--events") && i + 1 < argc) {
      n = std::stoul(argv[++i]);
    } else if (!std::strcmp(argv[i], "--configs") && i + 1 < argc) {
      configs = std::stoul(argv[++i]);
    } else {
      files.push_back(argv[i]);
    }
  }
  Snapshot synthetic = Synthetic(n);
  BenchOne("synthetic (native, ~64-400 live blocks)", synthetic, nullptr);
  // A sweep: K configurations in parallel, as `replay --sweep` runs them.
  std::vector<analysis::ReplayConfig> sweep;
  const char* confs[] = {"",
                         "expandable_segments:True",
                         "max_split_size_mb:128",
                         "max_split_size_mb:256",
                         "max_split_size_mb:512",
                         "roundup_power2_divisions:4",
                         "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
                         "expandable_segments:True,max_split_size_mb:512"};
  for (size_t k = 0; k < configs; ++k) {
    sweep.push_back({confs[k % 8], *sim::ParseAllocatorConf(confs[k % 8])});
  }
  {
    analysis::PreparedTrace p = analysis::PrepareTrace(
        synthetic, synthetic.traces[0], analysis::EmptyCacheMode::kHeuristic, {}, false);
    analysis::RunOptions ro;
    ro.events = synthetic.EventsOf(synthetic.traces[0]);
    for (size_t k = 0; k < std::min<size_t>(configs, 8); ++k) {
      double c0 = ThreadCpu();
      analysis::RunOutput out = analysis::RunConfig(p, sweep[k], ro);
      double cpu = ThreadCpu() - c0;
      std::printf("  %-52s replay %7.2f Mev/s (per CPU-second), peak reserved %.1f GiB\n",
                  sweep[k].label.empty() ? "defaults" : sweep[k].label.c_str(),
                  static_cast<double>(synthetic.events.size()) / cpu / 1e6,
                  static_cast<double>(out.result.peak_reserved) / (1 << 30));
    }
  }
  auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<analysis::ReplayReport> r = analysis::Replay(synthetic, sweep, {});
  double wall = Seconds(t0);
  std::printf("sweep of %zu configurations: %.2f s wall, %.2f Mev/s aggregate\n", configs, wall,
              static_cast<double>(synthetic.events.size()) * configs / wall / 1e6);
  for (const std::string& f : files) {
    absl::StatusOr<Snapshot> s = memsnap::parse::ReadSnapshot(f, {});
    if (s.ok()) BenchOne(f.substr(f.find_last_of('/') + 1), *s, per_config ? &sweep : nullptr);
  }
  return r.ok() ? 0 : 1;
}
