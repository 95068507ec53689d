// One configuration's replay (the hot loop) and the --verify comparison.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "analysis/allocator/fit_search.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/sim/device_memory.h"

namespace memsnap::analysis {

namespace {

bool SameEvent(const sim::SegmentEvent& a, const sim::SegmentEvent& b) {
  return a.action == b.action && a.size == b.size && a.addr == b.addr &&
         a.addr - a.base == b.addr - b.base;
}

}  // namespace

void CompareSegmentEvents(VerifyResult& v) {
  const auto& real = v.real;
  const auto& sim = v.simulated;
  v.segment_events = static_cast<int64_t>(real.size());
  v.simulated_events = static_cast<int64_t>(sim.size());
  v.matched = 0;
  constexpr size_t kWindow = 16;
  size_t i = 0;
  size_t j = 0;
  auto diverge = [&] {
    if (!v.first_real) {
      v.first_real = i;
      v.first_sim = j;
    }
  };
  while (i < real.size() && j < sim.size()) {
    if (SameEvent(real[i].event, sim[j].event)) {
      ++v.matched;
      ++i;
      ++j;
      continue;
    }
    diverge();
    // Resynchronise: skip the fewest events on one side that makes the two agree again.
    bool found = false;
    for (size_t d = 1; d <= kWindow && !found; ++d) {
      if (i + d < real.size() && SameEvent(real[i + d].event, sim[j].event)) {
        i += d;
        found = true;
      } else if (j + d < sim.size() && SameEvent(real[i].event, sim[j + d].event)) {
        j += d;
        found = true;
      }
    }
    if (!found) {
      ++i;
      ++j;
    }
  }
  if (i < real.size() || j < sim.size()) diverge();
}

int64_t WarmBytes(const PreparedTrace& p) {
  int64_t total = 0;
  for (const WarmSegment& w : p.warm) total += w.size;
  return total;
}

std::vector<Op> SeedWarmStart(const PreparedTrace& p, int64_t capacity,
                              sim::CachingAllocator& alloc, LiveBlocks& live) {
  std::vector<Op> overflow;
  int64_t placed = 0;  // when every segment fits, each one does
  for (const WarmSegment& w : p.warm) {
    if (placed + w.size > capacity) {
      for (const sim::SeedBlock& b : w.blocks) {
        overflow.push_back({b.ptr, b.requested, w.stream, kPreexisting, OpKind::kAlloc});
      }
      continue;
    }
    placed += w.size;
    std::vector<sim::BlockRef> refs =
        alloc.SeedSegment(w.base, w.size, w.stream, w.is_small, w.blocks);
    for (size_t k = 0; k < refs.size(); ++k) live.Set(w.blocks[k].ptr, refs[k]);
  }
  if (overflow.empty()) return overflow;
  std::vector<Op> pre = p.warm_leftover;
  pre.insert(pre.end(), overflow.begin(), overflow.end());
  return pre;
}

RunOutput RunConfig(const PreparedTrace& prepared, const ReplayConfig& config,
                    const RunOptions& options) {
  RunOutput out;
  ConfigResult& r = out.result;
  r.config = config;
  sim::VirtualDeviceMemory device(options.capacity);
  std::vector<sim::SegmentEvent> log;
  std::vector<uint32_t> log_event;  // trace index of each logged event
  sim::CachingAllocator alloc(config.config, &device);
  if (options.validation) alloc.SetEventLog(&log);  // only --verify reads the segment events
  LiveBlocks live;
  const sim::AllocatorStats& st = alloc.stats();
  int64_t allocs = 0;
  int64_t allocs_matched = 0;
  std::optional<uint32_t> first_mismatch;
  uint64_t mismatch_real = 0;
  uint64_t mismatch_sim = 0;
  int64_t last_reserved = -1;
  // Validation mode reuses the recorded addresses, in order, for the segments the trace created;
  // cold-start segments (blocks from before the trace) get synthetic addresses.
  auto install_hints = [&] {
    std::vector<uint64_t> mallocs;
    std::vector<uint64_t> bases;
    for (const SegmentEventRecord& e : *options.recorded) {
      if (e.event.action == sim::SegmentAction::kAlloc) mallocs.push_back(e.event.addr);
      if (e.event.action == sim::SegmentAction::kMap &&
          std::find(bases.begin(), bases.end(), e.event.base) == bases.end()) {
        bases.push_back(e.event.base);
      }
    }
    device.SetMallocHints(std::move(mallocs));
    device.SetReserveHints(std::move(bases));
  };
  bool hints_installed = !options.validation;
  // The state before the trace: warm (segments rebuilt with their blocks) or cold.
  std::vector<Op> own_pre;  // the warm start's leftovers and the blocks it could not place
  if (options.warm) {
    own_pre = SeedWarmStart(prepared, options.capacity, alloc, live);
    // The recorded state is on the device before the first event: a trace that never reserves
    // more (a dump with one event) peaks there.
    r.peak_reserved = st.reserved_bytes.aggregate.current;
    r.peak_event = kPreexisting;
    r.allocated_at_peak = st.allocated_bytes.aggregate.current;
    r.inactive_split_at_peak = st.inactive_split_bytes.aggregate.current;
    // A fit search's bound below it diverges from the unbounded replay at once.
    if (options.reserved_records && r.peak_reserved > 0) {
      out.reserved_records.push_back({0, r.peak_reserved});
    }
  }
  const std::vector<Op>& pre = !own_pre.empty() ? own_pre
                               : options.warm   ? prepared.warm_leftover
                                                : prepared.cold;
  auto record_oom = [&](const Op& op) {
    const sim::OomInfo& o = alloc.last_oom();
    ReplayOom oom{op.event, o.requested, o.rounded, o.stream, o.device_free, StackId(), {}};
    if (op.event != kPreexisting && op.event < options.events.size()) {
      oom.stack = options.events[op.event].stack;
    }
    r.ooms.push_back(oom);
    if (options.on_oom) options.on_oom(op, alloc, live);
  };
  // The hot loop: ApplyOp and its callbacks inlined into one step per operation, the options
  // read into locals once (the segment-event log, only set under --verify, is what kept the
  // loop's state in memory around every call: docs/BENCHMARKS.md, issue 37).
  const bool validation = options.validation;
  const bool keep_records = options.reserved_records;
  const bool curve = options.curve;
  const bool stop_at_first_oom = options.stop_at_first_oom;
  bool failed = false;  // a malloc failed (stop_at_first_oom)
  const size_t n_pre = pre.size();
  const size_t total_ops = n_pre + prepared.ops.size();
  out.ops_applied = total_ops;
  // Returns false to stop the replay after this operation.
  auto step = [&](const Op& op, size_t opi) __attribute__((always_inline)) {
    if (!hints_installed && op.event != kPreexisting) {
      install_hints();
      hints_installed = true;
    }
    ApplyOp(
        op, alloc, live,
        [&](sim::BlockRef b) {
          if (!validation || op.event == kPreexisting) return;
          ++allocs;
          if (alloc.BlockPtr(b) == op.addr) {
            ++allocs_matched;
          } else if (!first_mismatch) {
            first_mismatch = op.event;
            mismatch_real = op.addr;
            mismatch_sim = alloc.BlockPtr(b);
          }
        },
        [&] {
          record_oom(op);
          failed = stop_at_first_oom;
        });
    if (validation && log.size() > log_event.size()) log_event.resize(log.size(), op.event);
    if (failed) [[unlikely]] {
      out.ops_applied = opi + 1;
      return false;
    }
    if (op.kind == OpKind::kAlloc || op.kind == OpKind::kEmptyCache ||
        op.kind == OpKind::kOomMalloc) {
      const int64_t reserved = st.reserved_bytes.aggregate.current;
      const int64_t allocated = st.allocated_bytes.aggregate.current;
      if (keep_records && reserved > r.peak_reserved) {
        out.reserved_records.push_back({opi, reserved});
      }
      if (reserved > r.peak_reserved ||
          (reserved == r.peak_reserved && allocated > r.allocated_at_peak)) {
        r.peak_reserved = reserved;
        r.peak_event = op.event;
        r.allocated_at_peak = allocated;
        r.inactive_split_at_peak = st.inactive_split_bytes.aggregate.current;
      }
      if (curve && reserved != last_reserved) {
        int64_t t = op.event < options.events.size() ? options.events[op.event].time_us : kNoTime;
        r.curve.push_back({op.event, t, reserved, st.allocated_bytes.aggregate.current});
        last_reserved = reserved;
      }
    }
    return true;
  };
  bool go = true;
  for (size_t k = 0; go && k < n_pre; ++k) go = step(pre[k], k);
  // The trace, in runs between the operations replayed with another size (the batch share's).
  const Op* ops = prepared.ops.data();
  const size_t n_ops = prepared.ops.size();
  size_t k = 0;
  for (const auto& [index, size] : options.resized) {
    if (!go) break;
    for (; go && k < index && k < n_ops; ++k) go = step(ops[k], n_pre + k);
    if (go && k == index && k < n_ops) {
      Op resized = ops[k];
      resized.size = size;
      go = step(resized, n_pre + k);
      ++k;
    }
  }
  for (; go && k < n_ops; ++k) go = step(ops[k], n_pre + k);
  r.peak_allocated = st.allocated_bytes.aggregate.peak;
  r.peak_active = st.active_bytes.aggregate.peak;
  r.peak_requested = st.requested_bytes.aggregate.peak;
  r.peak_inactive_split_bytes = st.inactive_split_bytes.aggregate.peak;
  r.final_reserved = st.reserved_bytes.aggregate.current;
  r.final_allocated = st.allocated_bytes.aggregate.current;
  r.cuda_mallocs = st.num_segment_alloc;
  r.cuda_frees = st.num_segment_free;
  r.maps = st.num_map;
  r.unmaps = st.num_unmap;
  r.alloc_retries = st.num_alloc_retries;
  if (options.validation) {
    VerifyResult v;
    v.real = *options.recorded;
    v.simulated.reserve(log.size());
    for (size_t k = 0; k < log.size(); ++k) v.simulated.push_back({log[k], log_event[k]});
    v.allocs = allocs;
    v.allocs_matched = allocs_matched;
    v.first_alloc_mismatch = first_mismatch;
    v.mismatch_real_addr = mismatch_real;
    v.mismatch_sim_addr = mismatch_sim;
    v.sim_final_reserved = r.final_reserved;
    CompareSegmentEvents(v);
    out.verify = std::move(v);
  }
  return out;
}

std::string FitSearchNote(std::string_view who, const std::vector<FitSearchStats>& stats) {
  FitSearchStats t;
  for (const FitSearchStats& s : stats) {
    t.replays += s.replays;
    t.ops += s.ops;
    t.proven += s.proven;
    t.resumed += s.resumed;
    t.unbounded += s.unbounded;
    t.fitted += s.fitted;
    t.fitted_ops += s.fitted_ops;
    t.hinted += s.hinted;
  }
  return absl::StrCat(std::string(who), ": ", t.replays, " bounded replays (", t.resumed,
                      " resumed from a saved state; ", t.unbounded, " unbounded, ", t.fitted,
                      " fitted: ", t.fitted_ops, " operations), ", t.ops, " operations, ", t.proven,
                      " capacities proven without a replay, ", t.hinted,
                      " searches answered where predicted");
}

std::optional<int64_t> FitHint(const sim::AllocatorConfig& config, const ConfigResult& unbounded) {
  if (config.memory_fraction && *config.memory_fraction > 0.0) {
    // The fraction's limit reaches the unbounded peak reserved at C = peak / fraction; garbage
    // collection makes it fit a little below (on the 2.2 M-event generated file 0.03% below).
    return static_cast<int64_t>(
        std::ceil(static_cast<double>(unbounded.peak_reserved) / *config.memory_fraction));
  }
  // Expandable segments' ranges leave little beside the blocks, and the other settings' replays
  // that fail just below the answer resume from the unbounded replay's state and stop soon: the
  // answer is near the peak allocated, or above it by the cached blocks the allocator needs.
  return unbounded.peak_allocated;
}

bool SharesUnboundedPrefix(const sim::AllocatorConfig& config) {
  return !config.expandable_segments;
}

bool UnboundedReplayStandsFor(const sim::AllocatorConfig& replayed, const RunOutput& unbounded,
                              const sim::AllocatorConfig& other) {
  if (replayed.memory_fraction || !unbounded.result.ooms.empty()) return false;
  // Without a fraction the threshold is never read (garbage collection needs both).
  sim::AllocatorConfig a = replayed;
  a.garbage_collection_threshold = other.garbage_collection_threshold;
  a.memory_fraction = other.memory_fraction;
  if (!(a == other)) return false;
  // Each cudaMalloc of the replay left at most its peak reserved (none failed on no limit), and
  // garbage collection looks at the reserved bytes before it.
  return unbounded.result.peak_reserved <=
         sim::CachingAllocator::ReservedTakingUnlimitedDecisions(other, sim::kUnlimitedCapacity);
}

namespace {

// A replay that can be saved and resumed: the allocator with its device and live blocks, and the
// position of the next operation. Copying it copies the whole state (a few MB on a large trace:
// nothing beside a replay).
struct SavedRun {
  sim::VirtualDeviceMemory device;
  sim::CachingAllocator alloc;
  LiveBlocks live;
  size_t next = 0;

  SavedRun(const sim::AllocatorConfig& config, int64_t capacity)
      : device(capacity), alloc(config, &device) {}
  SavedRun(const SavedRun& o) : device(o.device), alloc(o.alloc), live(o.live), next(o.next) {
    alloc.RebindDevice(&device);
  }
  SavedRun& operator=(const SavedRun& o) {
    device = o.device;
    alloc = o.alloc;
    alloc.RebindDevice(&device);
    live = o.live;
    next = o.next;
    return *this;
  }
};

}  // namespace

RunOutput UnboundedReplay(const PreparedTrace& prepared, const ReplayConfig& config,
                          const RunOptions& base, FitSearchStats* stats) {
  RunOptions ro = base;
  ro.capacity = sim::kUnlimitedCapacity;
  ro.stop_at_first_oom = true;
  ro.on_oom = nullptr;
  ro.curve = false;
  ro.reserved_records = true;
  RunOutput out = RunConfig(prepared, config, ro);
  if (stats != nullptr) {
    ++stats->replays;
    ++stats->unbounded;
    stats->ops += static_cast<int64_t>(out.ops_applied);
  }
  return out;
}

int64_t SmallestFittingCapacity(const PreparedTrace& prepared, const ReplayConfig& config,
                                const RunOptions& base, bool exact, const RunOutput* unbounded,
                                FitSearchStats* stats) {
  FitSearchStats own_stats;
  if (stats == nullptr) stats = &own_stats;
  const std::vector<Op>& pre = base.warm ? prepared.warm_leftover : prepared.cold;
  const size_t total_ops = pre.size() + prepared.ops.size();
  // Every replay of the search starts from `base`'s state, warm or cold, as the unbounded one does
  // (docs/simulator.md, "One starting state"): a bounded replay that started otherwise could need
  // more than the unbounded peak it is meant to verify.
  auto run = [&](int64_t capacity) {
    RunOptions ro = base;
    ro.capacity = capacity;
    ro.stop_at_first_oom = true;
    ro.on_oom = nullptr;
    ro.curve = false;
    ro.reserved_records = false;
    ++stats->replays;
    RunOutput out = RunConfig(prepared, config, ro);
    stats->ops += static_cast<int64_t>(out.ops_applied);
    if (out.result.ooms.empty()) {
      ++stats->fitted;
      stats->fitted_ops += static_cast<int64_t>(out.ops_applied);
    }
    return out;
  };
  // Unbounded, the allocator never meets the device's end: its peak reserved is a capacity the
  // run fits on (verified below).
  RunOutput own;
  if (unbounded == nullptr) {
    own = UnboundedReplay(prepared, config, base, stats);
    unbounded = &own;
  }
  const ConfigResult& free_run = unbounded->result;
  if (!free_run.ooms.empty()) return 0;
  const std::vector<ReservedRecord>& records = unbounded->reserved_records;
  // Without the unbounded replay's records (a caller that did not ask for them) every bounded
  // replay runs from the start.
  const bool shared_prefix =
      SharesUnboundedPrefix(config.config) && (!records.empty() || free_run.peak_reserved == 0);

  // The prefix every bounded replay shares with the unbounded one: the state before the first
  // operation after which the unbounded replay had more reserved than the capacity lets the
  // allocator take unbounded decisions with (the capacity itself; with a memory fraction its
  // limit, or its garbage-collection threshold), for `lo`, the largest capacity known to fail.
  // A replay that fails saves the state it passed at its own bound.
  std::optional<SavedRun> saved;
  auto first_above = [&](int64_t capacity) -> size_t {
    const int64_t bound =
        sim::CachingAllocator::ReservedTakingUnlimitedDecisions(config.config, capacity);
    auto it = std::upper_bound(records.begin(), records.end(), bound,
                               [](int64_t c, const ReservedRecord& r) { return c < r.reserved; });
    return it == records.end() ? total_ops : it->position;
  };
  auto fits_resumed = [&](int64_t capacity) {
    // A warm start on less than its segments places only what the device holds (SeedWarmStart):
    // a state of its own, neither proven by, resumed from nor saved for another capacity.
    const bool own_start = base.warm && WarmBytes(prepared) > capacity;
    const size_t diverge = first_above(capacity);
    if (diverge >= total_ops && !own_start) {
      ++stats->proven;  // the whole unbounded replay fits under `capacity`
      return true;
    }
    const bool fresh = !saved || own_start;
    SavedRun r = fresh ? SavedRun(config.config, sim::kUnlimitedCapacity) : *saved;
    std::vector<Op> own_pre;
    if (fresh && base.warm) own_pre = SeedWarmStart(prepared, capacity, r.alloc, r.live);
    const std::vector<Op>& run_pre = own_pre.empty() ? pre : own_pre;
    const size_t run_total = run_pre.size() + prepared.ops.size();
    if (r.next > 0) ++stats->resumed;
    ++stats->replays;
    r.device.SetCapacity(capacity);
    r.alloc.ResetMemoryFraction();  // its limit is a fraction of the capacity
    std::optional<SavedRun> at_bound;
    bool failed = false;
    const int64_t ops_before = stats->ops;
    for (size_t opi = r.next; opi < run_total && !failed; ++opi) {
      if (opi == diverge && own_pre.empty()) {
        r.next = opi;
        at_bound.emplace(r);
      }
      const Op& op = opi < run_pre.size() ? run_pre[opi] : prepared.ops[opi - run_pre.size()];
      ApplyOp(
          op, r.alloc, r.live, [](sim::BlockRef) {}, [&] { failed = true; });
      stats->ops += 1;
    }
    if (failed && at_bound && !own_start) saved = std::move(at_bound);
    if (!failed) {
      ++stats->fitted;
      stats->fitted_ops += stats->ops - ops_before;
    }
    return !failed;
  };
  int64_t last_ops = 0;  // what the latest capacity asked about cost
  auto fits = [&](int64_t capacity) {
    const int64_t ops_before = stats->ops;
    // A warm start's segments are on the device before the first event: a smaller one cannot
    // hold that state.
    const bool fit = (shared_prefix ? fits_resumed(capacity) : run(capacity).result.ooms.empty());
    last_ops = stats->ops - ops_before;
    return fit;
  };
  // A failed replay that came far into the trace says that the next ones near the answer would
  // too: then the halving, whose failures come far below the answer, is cheaper.
  auto cheap = [&] { return last_ops * 4 <= static_cast<int64_t>(total_ops); };
  // Halving between a capacity known to fail (below the live peak, the failed requests included,
  // nothing fits) and the unbounded peak reserved, in units of FitUnit: every segment and mapping
  // is a multiple of it, so a capacity fits exactly when its floor in units does. A memory
  // fraction below 1 needs more than that peak: grow by 1/16 until it fits. Asked where the
  // answer is predicted to be first (FitHint), which gives the halving's answer with one replay
  // that fits when the prediction lands in its final bracket.
  const int64_t unit = FitUnit(config.config);
  const int64_t lo = std::max<int64_t>(0, free_run.peak_requested - 1) / unit;
  const int64_t peak_units = (free_run.peak_reserved + unit - 1) / unit;
  const Halving h{
      .lo = lo, .hi = std::max(peak_units, lo + 1), .step = 1, .max_growths = 8, .exact = exact};
  std::optional<int64_t> hint = FitHint(config.config, free_run);
  if (hint) hint = (*hint + unit - 1) / unit;
  HintStats hint_stats;
  const HalvingResult r = HintedHalving(
      h, hint, kFitHintMaxUp, [&](int64_t units) { return fits(units * unit); }, cheap,
      &hint_stats);
  stats->hinted += hint_stats.landed ? 1 : 0;
  return r.found ? r.hi * unit : 0;
}

}  // namespace memsnap::analysis
