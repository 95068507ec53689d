// The replay driver: turns a device trace into simulator operations once (config independent),
// then runs them under every configuration, one thread each.
#include "memsnap/analysis/allocator/replay.h"

#include <algorithm>
#include <map>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/util/format.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

using sim::SegmentAction;

double ConfigResult::FragmentationAtPeak() const {
  if (peak_reserved <= 0) return 0.0;
  return 1.0 - static_cast<double>(allocated_at_peak) / static_cast<double>(peak_reserved);
}

namespace {

bool IsSegmentRelease(Action a) { return a == Action::kSegmentFree || a == Action::kSegmentUnmap; }

// docs/allocator-model.md §17.5: a burst of segment_free/unmap that is not followed (before the
// next alloc or free) by segment_alloc/map or an oom was an explicit empty_cache(). A burst
// followed by them is the allocator releasing memory under pressure (GC, oversize release, retry):
// with a known device capacity the simulator decides that on its own. Without one it never runs out
// of memory, so when the recorded settings have no max_split_size and no GC (the release can only
// have been release_cached_blocks) the burst is replayed as one too: `pressure_releases`.
bool IsEmptyCacheBurst(std::span<const TraceEvent> ev, size_t i, bool pressure_releases) {
  for (size_t j = i; j < ev.size(); ++j) {
    Action a = ev[j].action;
    if (IsSegmentRelease(a) || a == Action::kFreeCompleted || a == Action::kSnapshot ||
        a == Action::kAnnotate || a == Action::kUnknown) {
      continue;
    }
    if (a == Action::kOom) return false;
    return pressure_releases || !(a == Action::kSegmentAlloc || a == Action::kSegmentMap);
  }
  return true;
}

// Rebuilds the segments alive at t0: the final segments, minus those the trace cudaMalloc'ed,
// plus those it cudaFree'd (walking backwards), and places the pre-existing blocks in them.
// A block freed in the trace has only its requested size: it takes round_size(n), or the whole
// gap up to the next block when the allocator would not have split off the rest.
// A block's end is also bounded by any allocation the trace places above it while it is alive:
// free blocks merge, so that allocation starts at the end of the block or of a later one.
void BuildWarmStart(const Snapshot& snap, const DeviceTrace& trace, const std::vector<Op>& pre,
                    const absl::flat_hash_map<uint64_t, int64_t>& known_size,
                    const absl::flat_hash_map<uint64_t, uint32_t>& freed_at,
                    const sim::AllocatorConfig& cfg, PreparedTrace& p) {
  std::span<const TraceEvent> ev = snap.EventsOf(trace);
  absl::flat_hash_map<uint64_t, uint64_t> limit;  // pre-existing block -> bound on its end
  for (size_t j = 0; j < ev.size() && !pre.empty(); ++j) {
    if (ev[j].action != Action::kAlloc) continue;
    auto it = std::upper_bound(pre.begin(), pre.end(), ev[j].addr,
                               [](uint64_t a, const Op& o) { return a < o.addr; });
    if (it == pre.begin()) continue;
    const uint64_t below = std::prev(it)->addr;
    auto f = freed_at.find(below);
    if (f != freed_at.end() && f->second <= j) continue;  // already freed: no constraint
    auto [l, inserted] = limit.try_emplace(below, ev[j].addr);
    if (!inserted) l->second = std::min(l->second, ev[j].addr);
  }
  std::map<uint64_t, WarmSegment> segs;
  for (const Segment& s : snap.segments) {
    if (s.device != trace.device) continue;
    if (s.is_expandable) return;
    segs[s.address] = {s.address, s.total_size, s.stream, s.is_small, {}};
  }
  for (size_t i = ev.size(); i-- > 0;) {
    const TraceEvent& e = ev[i];
    if (e.action == Action::kSegmentMap || e.action == Action::kSegmentUnmap) return;
    if (e.action == Action::kSegmentAlloc) segs.erase(e.addr);
    if (e.action == Action::kSegmentFree) {
      segs[e.addr] = {e.addr, e.size, snap.StreamOf(e), e.size == sim::kSmallBuffer, {}};
    }
  }
  p.warm_ok = true;
  for (const Op& o : pre) {
    auto it = segs.upper_bound(o.addr);
    if (it == segs.begin()) {
      p.warm_leftover.push_back(o);
      continue;
    }
    --it;
    WarmSegment& w = it->second;
    if (o.addr >= w.base + static_cast<uint64_t>(w.size)) {
      p.warm_leftover.push_back(o);
      continue;
    }
    w.blocks.push_back({o.addr, 0, o.size});
  }
  for (auto& [base, w] : segs) {
    std::vector<sim::SeedBlock> kept;
    const uint64_t end = w.base + static_cast<uint64_t>(w.size);
    for (size_t k = 0; k < w.blocks.size(); ++k) {
      sim::SeedBlock b = w.blocks[k];
      uint64_t boundary = k + 1 < w.blocks.size() ? w.blocks[k + 1].ptr : end;
      if (auto l = limit.find(b.ptr); l != limit.end()) boundary = std::min(boundary, l->second);
      const int64_t room = static_cast<int64_t>(boundary - b.ptr);
      auto known = known_size.find(b.ptr);
      if (known != known_size.end()) {
        b.size = known->second;
      } else {
        const int64_t s = sim::RoundSize(b.requested, cfg);
        const int64_t rest = room - s;
        const bool split = w.is_small ? rest >= sim::kMinBlockSize
                                      : s < cfg.max_split_size && rest > sim::kSmallSize;
        b.size = split ? s : room;
      }
      if (b.size > room || b.size <= 0) {  // inconsistent with its neighbours: allocate it cold
        p.warm_leftover.push_back({b.ptr, b.requested, w.stream, kPreexisting, OpKind::kAlloc});
        continue;
      }
      kept.push_back(b);
    }
    w.blocks = std::move(kept);

    p.warm.push_back(std::move(w));
  }
}

}  // namespace

PreparedTrace PrepareTrace(const Snapshot& snap, const DeviceTrace& trace, EmptyCacheMode mode,
                           const sim::AllocatorConfig& recorded, bool capacity_known) {
  const bool pressure_releases = !capacity_known &&
                                 recorded.max_split_size == sim::kUnlimitedSize &&
                                 !recorded.memory_fraction;
  PreparedTrace p;
  std::span<const TraceEvent> ev = snap.EventsOf(trace);
  p.num_events = ev.size();
  // Every event makes at most one operation. Reserved at that bound, the list never grows by
  // doubling: the outgrown copies (half, a quarter... of it) would stay resident beside it
  // (KeepFreedMemory), and the pages past its end are never touched, so they cost no memory
  // (docs/BENCHMARKS.md, "issue 37, 2026-11-27 15:20").
  p.ops.reserve(ev.size());
  // Its pages faulted in a few MiB at a time ahead of the end: one page fault per 4 KiB page was
  // half of this pass (32 bytes an event, 624 MB on the 19.5 M-event benchmark file).
  Prefaulter prefault;
  prefault.Touch(p.ops);
  enum class St : uint8_t { kLive, kPending };
  absl::flat_hash_map<uint64_t, St> state;
  std::vector<Op> pre;
  absl::flat_hash_map<uint64_t, uint32_t> freed_at;  // pre-existing block -> its free event
  auto add_pre = [&](uint64_t addr, int64_t size, int64_t stream, uint32_t freed) {
    pre.push_back({addr, size, stream, kPreexisting, OpKind::kAlloc});
    freed_at.try_emplace(addr, freed);
  };
  for (size_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    const uint32_t idx = static_cast<uint32_t>(i);
    const int64_t stream = snap.StreamOf(e);
    switch (e.action) {
      case Action::kAlloc:
        p.ops.push_back({e.addr, e.size, stream, idx, OpKind::kAlloc});
        p.max_request = std::max(p.max_request, e.size);
        state[e.addr] = St::kLive;
        break;
      case Action::kFreeRequested: {
        auto it = state.find(e.addr);
        if (it == state.end()) add_pre(e.addr, e.size, stream, idx);
        bool adjacent = i + 1 < ev.size() && ev[i + 1].action == Action::kFreeCompleted &&
                        ev[i + 1].addr == e.addr;
        if (adjacent) {
          p.ops.push_back({e.addr, e.size, stream, idx, OpKind::kFree});
          state.erase(e.addr);
          ++i;  // the free_completed is part of this free
        } else {
          p.ops.push_back({e.addr, e.size, stream, idx, OpKind::kFreeRequested});
          state[e.addr] = St::kPending;
        }
        break;
      }
      case Action::kFreeCompleted: {
        auto it = state.find(e.addr);
        if (it == state.end()) {
          add_pre(e.addr, e.size, stream, idx);
          p.ops.push_back({e.addr, e.size, stream, idx, OpKind::kFree});
        } else {
          p.ops.push_back({e.addr, e.size, stream, idx,
                           it->second == St::kPending ? OpKind::kFreeCompleted : OpKind::kFree});
          state.erase(it);
        }
        break;
      }
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        if (mode == EmptyCacheMode::kHeuristic && (i == 0 || !IsSegmentRelease(ev[i - 1].action)) &&
            IsEmptyCacheBurst(ev, i, pressure_releases)) {
          p.ops.push_back({0, 0, 0, idx, OpKind::kEmptyCache});
          ++p.inferred_empty_cache;
        }
        break;
      case Action::kOom:
        p.ops.push_back({0, e.size, stream, idx, OpKind::kOomMalloc});
        p.max_request = std::max(p.max_request, e.size);
        break;
      default:
        break;
    }
    prefault.Touch(p.ops);
  }
  // Blocks alive at the snapshot that the trace never allocated were allocated before it began.
  absl::flat_hash_map<uint64_t, int64_t> known_size;
  for (const Segment& seg : snap.segments) {
    if (seg.device != trace.device) continue;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (!b.is_active() || state.contains(b.address)) continue;
      add_pre(b.address, b.requested_size > 0 ? b.requested_size : b.size, seg.stream,
              kPreexisting);
      known_size[b.address] = b.size;
      p.ghosts.push_back(b.address);
    }
  }
  std::sort(p.ghosts.begin(), p.ghosts.end());
  std::sort(pre.begin(), pre.end(), [](const Op& a, const Op& b) { return a.addr < b.addr; });
  for (const Op& o : pre) {
    p.preexisting_bytes += o.size;
    p.max_request = std::max(p.max_request, o.size);
  }
  p.preexisting_blocks = static_cast<int64_t>(pre.size());
  BuildWarmStart(snap, trace, pre, known_size, freed_at, recorded, p);
  for (const WarmSegment& w : p.warm) p.max_warm_segment = std::max(p.max_warm_segment, w.size);
  p.cold = std::move(pre);
  return p;
}

std::vector<size_t> ReplayStandIns(const PreparedTrace& p,
                                   const std::vector<ReplayConfig>& configs) {
  std::vector<size_t> same_as(configs.size());
  for (size_t k = 0; k < configs.size(); ++k) {
    same_as[k] = k;
    for (size_t j = 0; j < k && same_as[k] == k; ++j) {
      if (configs[j].config == configs[k].config ||
          (j == 0 && SameDecisions(p, configs[0].config, configs[k].config))) {
        same_as[k] = same_as[j];
      }
    }
  }
  return same_as;
}

bool SameDecisions(const PreparedTrace& p, const sim::AllocatorConfig& base,
                   const sim::AllocatorConfig& candidate) {
  sim::AllocatorConfig a = base;
  a.max_split_size = candidate.max_split_size;
  if (!(a == candidate) || base.expandable_segments) return false;
  // Every block lies in a segment; segments are SegmentSize(RoundSize(n)) (at least the large
  // segment size for 1-10 MiB requests) or were alive at t0.
  const int64_t s = sim::RoundSize(p.max_request, base);
  const int64_t largest =
      std::max({sim::SegmentSize(s, base), base.large_segment_size, p.max_warm_segment, s});
  return largest < std::min(base.max_split_size, candidate.max_split_size);
}

std::vector<SegmentEventRecord> RecordedSegmentEvents(const Snapshot& snap,
                                                      const DeviceTrace& trace) {
  std::vector<SegmentEventRecord> out;
  std::span<const TraceEvent> ev = snap.EventsOf(trace);
  // Expandable VA ranges: a map extends a known range when it starts inside [base, max end];
  // otherwise it opens a new one (growth always starts at the lowest address).
  std::vector<std::pair<uint64_t, uint64_t>> ranges;  // base, highest mapped end
  for (size_t i = 0; i < ev.size(); ++i) {
    const TraceEvent& e = ev[i];
    SegmentAction a;
    switch (e.action) {
      case Action::kSegmentAlloc:
        a = SegmentAction::kAlloc;
        break;
      case Action::kSegmentFree:
        a = SegmentAction::kFree;
        break;
      case Action::kSegmentMap:
        a = SegmentAction::kMap;
        break;
      case Action::kSegmentUnmap:
        a = SegmentAction::kUnmap;
        break;
      default:
        continue;
    }
    uint64_t base = e.addr;
    if (a == SegmentAction::kMap || a == SegmentAction::kUnmap) {
      auto r = std::find_if(ranges.begin(), ranges.end(),
                            [&](const auto& x) { return x.first <= e.addr && e.addr <= x.second; });
      if (r == ranges.end()) {
        ranges.push_back({e.addr, e.addr});
        r = ranges.end() - 1;
      }
      base = r->first;
      if (a == SegmentAction::kMap) r->second = std::max(r->second, e.addr + e.size);
    }
    out.push_back({{a, e.addr, e.size, snap.StreamOf(e), base}, static_cast<uint32_t>(i)});
  }
  return out;
}

ImpliedCapacityResult ImpliedCapacity(const Snapshot& snap, const DeviceTrace& trace) {
  std::span<const TraceEvent> ev = snap.EventsOf(trace);
  // Reserved bytes after each event, walked back from the dumped segments: the timeline's reserved
  // curve whenever the dumped state explains the trace's segment events (one pass, no timeline).
  int64_t reserved = 0;
  for (const Segment& s : snap.segments) {
    if (s.device == trace.device) reserved += s.total_size;
  }
  struct Entry {
    uint32_t event;
    int64_t device_free, reserved;
    int64_t live = 0;  // live requested bytes then (read only where the dump does not explain)
  };
  std::vector<Entry> ooms;                                   // latest first
  int64_t most = reserved;                                   // the most reserved at any point
  int64_t most_event = static_cast<int64_t>(ev.size()) - 1;  // after it; -1: the start
  bool explained = true;
  for (size_t i = ev.size(); i-- > 0;) {
    const TraceEvent& e = ev[i];
    switch (e.action) {
      case Action::kSegmentAlloc:
      case Action::kSegmentMap:
        reserved -= e.size;
        explained = explained && reserved >= 0;
        break;
      case Action::kSegmentFree:
      case Action::kSegmentUnmap:
        reserved += e.size;
        if (reserved > most) {
          most = reserved;
          most_event = static_cast<int64_t>(i) - 1;  // before the free: after event i - 1
        }
        break;
      case Action::kOom:
        ooms.push_back({static_cast<uint32_t>(i), static_cast<int64_t>(e.addr), reserved});
        break;
      default:
        break;
    }
  }
  if (ooms.empty()) return {};
  std::reverse(ooms.begin(), ooms.end());
  if (!explained) {
    // The dumped state does not explain the trace: read reserved bytes from the timeline's one
    // model of the trace (docs/figures.md, "When the trace does not explain the state").
    TimelineOptions o;
    o.device = trace.device;
    o.keep = KeepLifetimes::kNone;
    o.curve = false;
    absl::StatusOr<Timeline> tl = ReconstructTimeline(snap, o);
    if (!tl.ok() || tl->devices.empty()) return {};
    const DeviceTimeline& dt = tl->devices[0];
    for (Entry& m : ooms) {
      m.reserved = dt.ReservedAt(TimelinePoint::After(m.event));
      for (const DeviceTimeline::OomMoment& o : dt.oom_moments) {
        if (o.event == m.event) m.live = o.live_requested;
      }
    }
    most = dt.peak_reserved;
    most_event = dt.peak_reserved_event.index();
  }
  // The first oom entry whose card could have held what the trace reserves, and what it held live
  // when that entry was written: a card smaller is not the run's (a trace pieced together, an entry
  // edited), and the next entry is tried.
  ImpliedCapacityResult out;
  for (const Entry& m : ooms) {
    const int64_t capacity = m.device_free + m.reserved;
    if (capacity > 0 && capacity >= most && capacity >= m.live) {
      out.bytes = capacity;
      return out;
    }
    if (!out.rejected) {
      out.rejected = capacity;
      if (capacity <= 0) {
        out.why = "it is not above zero";
      } else if (capacity < most) {
        out.why = absl::StrCat("the trace itself reserves ", FormatBytes(most),
                               most_event < 0 ? std::string(" from its start")
                                              : absl::StrCat(" after event:", most_event));
      } else {
        out.why = absl::StrCat("the trace itself holds ", FormatBytes(m.live),
                               " live when that entry is written");
      }
    }
  }
  return out;
}

std::vector<DeviceTrace> FitTraces(const Snapshot& snap) {
  std::vector<DeviceTrace> traces;
  for (const DeviceTrace& t : snap.traces) {
    if (t.size() > 0) traces.push_back(t);
  }
  for (int32_t device : snap.Devices()) {
    const DeviceTrace* t = snap.TraceOf(device);
    if (t == nullptr || t->size() == 0) traces.push_back(DeviceTrace{device, 0, 0});
  }
  std::sort(traces.begin(), traces.end(),
            [](const DeviceTrace& a, const DeviceTrace& b) { return a.device < b.device; });
  return traces;
}

absl::Status AppendConfs(const sim::AllocatorConfig& recorded,
                         const std::vector<std::string>& confs, std::vector<ReplayConfig>& out) {
  for (const std::string& conf : confs) {
    absl::StatusOr<sim::AllocatorConfig> c = sim::ApplyAllocatorConf(recorded, conf);
    if (!c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--conf \"", conf, "\": ", c.status().message()));
    }
    out.push_back({conf, *c});
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ExpandSweep(std::string_view spec) {
  std::vector<std::string> parts = absl::StrSplit(Sv(spec), absl::MaxSplits('=', 1));
  if (parts.size() != 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--sweep \"", Sv(spec), "\": expected KEY=V1,V2,... (e.g. max_split_size_mb=128,256)"));
  }
  std::vector<std::string> out;
  for (absl::string_view v : absl::StrSplit(parts[1], ',', absl::SkipEmpty())) {
    std::string conf = absl::StrCat(parts[0], ":", v);
    absl::StatusOr<sim::AllocatorConfig> c = sim::ParseAllocatorConf(conf);
    if (!c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--sweep \"", Sv(spec), "\": ", c.status().message()));
    }
    out.push_back(conf);
  }
  return out;
}

absl::StatusOr<const DeviceTrace*> SelectTrace(const Snapshot& snap, DeviceFilter device) {
  if (device) {
    const DeviceTrace* trace = snap.TraceOf(*device);
    if (trace == nullptr || trace->size() == 0) {
      return absl::NotFoundError(absl::StrCat("device ", *device, " has no trace events"));
    }
    return trace;
  }
  for (const DeviceTrace& t : snap.traces) {
    if (t.size() > 0) return &t;
  }
  return absl::FailedPreconditionError(
      "the snapshot has no trace events (record with torch.cuda.memory._record_memory_history)");
}

absl::StatusOr<ReplayReport> Replay(const Snapshot& snap, const std::vector<ReplayConfig>& configs,
                                    const ReplayOptions& options) {
  absl::StatusOr<const DeviceTrace*> selected = SelectTrace(snap, options.device);
  if (!selected.ok()) return selected.status();
  const DeviceTrace* trace = *selected;
  ReplayReport report;
  report.file = snap.source.path;
  report.device = trace->device;
  report.events = trace->size();
  if (options.device_memory) {
    report.device_memory = options.device_memory;
    report.device_memory_source = ReplayMemorySource::kFlag;
  } else if (std::optional<int64_t> c = ImpliedCapacity(snap, *trace).bytes) {
    report.device_memory = c;
    report.device_memory_source = ReplayMemorySource::kOomEntry;
  } else {
    report.device_memory_source = ReplayMemorySource::kUnlimited;
  }
  PreparedTrace prepared =
      PrepareTrace(snap, *trace, options.empty_cache, sim::ConfigFromSettings(snap.settings),
                   report.device_memory.has_value());
  report.preexisting_blocks = prepared.preexisting_blocks;
  report.preexisting_bytes = prepared.preexisting_bytes;
  report.inferred_empty_cache = prepared.inferred_empty_cache;
  report.warm_start = options.warm_start && prepared.warm_ok;
  report.warm_start_refused = options.warm_start && !prepared.warm_ok;
  if (report.warm_start) report.warm_segments = static_cast<int64_t>(prepared.warm.size());
  report.ring_overflowed = snap.settings.trace_alloc_overflowed.value_or(false);
  for (const Segment& s : snap.segments) {
    report.private_pool_segments += s.device == trace->device && !s.pool.is_default();
  }

  std::vector<SegmentEventRecord> real;
  if (options.verify) real = RecordedSegmentEvents(snap, *trace);
  report.results.resize(configs.size());
  std::optional<VerifyResult> verify;
  RunOptions base;
  base.capacity = report.device_memory.value_or(sim::kUnlimitedCapacity);
  base.curve = options.curve;
  base.events = snap.EventsOf(*trace);
  base.warm = report.warm_start;
  auto run_one = [&](size_t k) {
    if (k == configs.size()) {
      // --verify: the recorded settings, recorded addresses, warm start when possible.
      RunOptions ro = base;
      ro.curve = false;
      ro.validation = true;
      ro.warm = prepared.warm_ok;
      ro.recorded = &real;
      verify = RunConfig(prepared, configs[0], ro).verify;
      verify->warm = ro.warm;
      return;
    }
    ConfigResult& r = report.results[k];
    r = RunConfig(prepared, configs[k], base).result;
    r.gc_threshold_inert =
        configs[k].config.garbage_collection_threshold > 0 && !configs[k].config.memory_fraction;
    r.backend_not_simulated = configs[k].config.backend != "native";
  };
  const size_t runs = configs.size() + (options.verify ? 1 : 0);
  size_t threads = options.max_threads > 0 ? static_cast<size_t>(options.max_threads)
                                           : std::max(1u, std::thread::hardware_concurrency());
  // ParallelFor runs on fewer threads, or this one, when no thread can be started.
  ParallelFor(runs, run_one, threads);
  {
    // The trace's own figures: reserved walked back from the final segments, then forward.
    RecordedFigures& f = report.recorded;
    for (const Segment& seg : snap.segments) {
      if (seg.device == trace->device) f.final_reserved += seg.total_size;
    }
    std::span<const TraceEvent> ev = snap.EventsOf(*trace);
    int64_t reserved = f.final_reserved;
    for (const TraceEvent& e : ev) {
      if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap) reserved -= e.size;
      if (e.action == Action::kSegmentFree || e.action == Action::kSegmentUnmap) reserved += e.size;
    }
    f.peak_reserved = reserved;
    for (const TraceEvent& e : ev) {
      switch (e.action) {
        case Action::kSegmentAlloc:
          reserved += e.size;
          ++f.segment_allocs;
          break;
        case Action::kSegmentMap:
          reserved += e.size;
          ++f.maps;
          break;
        case Action::kSegmentFree:
          reserved -= e.size;
          ++f.segment_frees;
          break;
        case Action::kSegmentUnmap:
          reserved -= e.size;
          ++f.unmaps;
          break;
        case Action::kOom:
          ++f.ooms;
          break;
        default:
          break;
      }
      f.peak_reserved = std::max(f.peak_reserved, reserved);
    }
  }
  if (verify) {
    int64_t real_final = 0;
    for (const Segment& s : snap.segments) {
      if (s.device == trace->device) real_final += s.total_size;
    }
    verify->real_final_reserved = real_final;
    report.verify = std::move(verify);
  }
  // Each OOM's site, named as every other command names it (attribution.h).
  Attribution attribution(snap, nullptr);
  for (ConfigResult& r : report.results) {
    for (ReplayOom& o : r.ooms) {
      if (o.stack.valid() && o.stack != StackTable::kEmpty) {
        o.site = attribution.Site(o.stack).BaseLabel();
      }
    }
  }
  return report;
}

}  // namespace memsnap::analysis
