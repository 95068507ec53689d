// Internals of the replay driver shared by replay.cpp, replay_run.cpp, the GPU replay
// (replay_cuda.cpp) and the unit tests.
#pragma once

#include <bit>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/fit.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/analysis/timeline/addr_table.h"

namespace memsnap::analysis {

/// kOomMalloc replays a recorded `oom` entry: the malloc that failed (it has no alloc event).
enum class OpKind : uint8_t {
  kAlloc,
  kFree,
  kFreeRequested,
  kFreeCompleted,
  kEmptyCache,
  kOomMalloc
};

/// Trace position of the cold-start allocations of blocks alive before the trace began.
inline constexpr uint32_t kPreexisting = kPreexistingEvent;

/// One simulator operation, 32 bytes; `event` indexes the device trace.
struct Op {
  uint64_t addr;
  int64_t size;
  int64_t stream;
  uint32_t event;
  OpKind kind;
};

/// A segment alive when the trace began, with the blocks allocated in it then.
struct WarmSegment {
  uint64_t base = 0;
  int64_t size = 0;
  int64_t stream = 0;
  bool is_small = false;
  std::vector<sim::SeedBlock> blocks;
};

/// The configuration-independent part of a replay.
struct PreparedTrace {
  /// Cold start: every block alive before the trace, allocated in address order.
  std::vector<Op> cold;
  /// Warm start (verify): the segments alive at t0 rebuilt from the final segments and the
  /// trace's segment events, and the pre-existing blocks that fit in none of them.
  std::vector<WarmSegment> warm;
  std::vector<Op> warm_leftover;
  bool warm_ok = false;  // false when expandable segments are involved
  std::vector<Op> ops;   // the trace
  size_t num_events = 0;
  int64_t preexisting_blocks = 0;
  int64_t preexisting_bytes = 0;
  int64_t inferred_empty_cache = 0;
  /// The largest request of any malloc (trace, recorded OOMs, blocks alive before the trace) and
  /// the largest segment alive when the trace began: bounds on the blocks any run can create.
  int64_t max_request = 0;
  int64_t max_warm_segment = 0;
  /// Addresses of the blocks alive at the end that the trace never allocated (sorted).
  std::vector<uint64_t> ghosts;
};

/// Whether replaying `p` under `candidate` takes exactly the decisions it takes under `base`:
/// true when they differ only in max_split_size, neither uses expandable segments, and no
/// request, segment or block of the run can reach either limit (blocks never outgrow their
/// segments), so the oversize rules and should_split never see a difference.
bool SameDecisions(const PreparedTrace& p, const sim::AllocatorConfig& base,
                   const sim::AllocatorConfig& candidate);

/// For each of `configs` (the recorded settings first), the index of the first earlier setting
/// whose replay of `p` stands for it: an identical configuration, or the recorded one when
/// SameDecisions holds; its own index otherwise (only those need a replay).
std::vector<size_t> ReplayStandIns(const PreparedTrace& p,
                                   const std::vector<ReplayConfig>& configs);

/// Builds the operation list: adjacent free_requested/free_completed pairs become one free,
/// blocks freed without an alloc (or alive in the final segments without one) are allocated
/// first in address order, and inferred empty_cache calls are inserted
/// (docs/allocator-model.md §17). `recorded` estimates the block sizes of the warm start; without
/// `capacity_known`, releases the allocator made under memory pressure are replayed at their
/// recorded positions.
PreparedTrace PrepareTrace(const Snapshot& snap, const DeviceTrace& trace, EmptyCacheMode mode,
                           const sim::AllocatorConfig& recorded, bool capacity_known);

/// The recorded segment events of a device trace, each with the base of its segment
/// (expandable VA ranges are reconstructed from the map addresses).
std::vector<SegmentEventRecord> RecordedSegmentEvents(const Snapshot& snap,
                                                      const DeviceTrace& trace);

/// The device memory the trace's oom entries imply: device_free + reserved at that moment.
/// Reserved bytes are the timeline's (walked back from the dumped segments when they explain the
/// trace, else the timeline's one model); the first entry whose card holds every byte the trace
/// reserves is taken.
struct ImpliedCapacityResult {
  std::optional<int64_t> bytes;     // the capacity; nullopt without a credible oom entry
  std::optional<int64_t> rejected;  // the first implied capacity refused, and why (`why`: not
  std::string why;                  // above 0, or below what the trace itself reserves)
};
ImpliedCapacityResult ImpliedCapacity(const Snapshot& snap, const DeviceTrace& trace);

/// The devices a fit answer is given for, ascending: each device's trace, and for a device whose
/// dump has segments but whose trace is empty (a dump-only file) a trace of no events, so that
/// its fit is the dumped state placed on the device (docs/figures.md, "Fits on, needs, over").
std::vector<DeviceTrace> FitTraces(const Snapshot& snap);

/// Recorded block address -> the simulated block now standing for it: the replay's one lookup per
/// event. Open addressing with linear probing over a power-of-two table at most half full, erase
/// by backward shift (no tombstones, so a long replay's probes stay short), the hash seeded per
/// process as AddrTable's is. No allocation once the table has grown to the trace's live blocks.
class LiveBlocks {
 public:
  LiveBlocks() { slots_.assign(kInitial, Slot{kEmpty, 0}); }
  size_t size() const { return size_ + (empty_key_used_ ? 1 : 0); }
  /// The block standing for `addr`, or nullptr.
  [[gnu::always_inline]] const sim::BlockRef* Find(uint64_t addr) const {
    if (addr == kEmpty) [[unlikely]]
      return empty_key_used_ ? &empty_key_ref_ : nullptr;
    for (size_t i = Home(addr);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == addr) return &s.ref;
      if (s.key == kEmpty) return nullptr;
    }
  }
  /// Maps `addr` to `ref`, replacing what it mapped to.
  [[gnu::always_inline]] void Set(uint64_t addr, sim::BlockRef ref) {
    if (addr == kEmpty) [[unlikely]] {
      empty_key_used_ = true;
      empty_key_ref_ = ref;
      return;
    }
    for (size_t i = Home(addr);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == addr) {
        s.ref = ref;
        return;
      }
      if (s.key == kEmpty) {
        if (2 * (size_ + 1) > slots_.size()) [[unlikely]] {
          GrowAndSet(addr, ref);
          return;
        }
        s = {addr, ref};
        ++size_;
        return;
      }
    }
  }
  /// Removes `addr` (nothing when absent).
  [[gnu::always_inline]] void Erase(uint64_t addr) {
    sim::BlockRef unused;
    Take(addr, unused);
  }
  /// Removes `addr` and sets `ref` to the block it mapped to; false (nothing changed) when absent.
  /// One probe where Find then Erase take two.
  [[gnu::always_inline]] bool Take(uint64_t addr, sim::BlockRef& ref) {
    if (addr == kEmpty) [[unlikely]] {
      if (!empty_key_used_) return false;
      empty_key_used_ = false;
      ref = empty_key_ref_;
      return true;
    }
    size_t i = Home(addr);
    while (slots_[i].key != addr) {
      if (slots_[i].key == kEmpty) return false;
      i = (i + 1) & mask_;
    }
    ref = slots_[i].ref;
    // Backward shift: move later entries of the probe run into the hole when their home allows.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].key == kEmpty) break;
      const size_t home = Home(slots_[j].key);
      // Entry j may move to i when its home is not in the cyclic range (i, j].
      if (((j - home) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = kEmpty;
    --size_;
    return true;
  }
  /// Calls fn(address, block) for every entry, in no particular order.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.key != kEmpty) fn(s.key, s.ref);
    }
    if (empty_key_used_) fn(kEmpty, empty_key_ref_);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static constexpr size_t kInitial = 1024;
  struct Slot {
    uint64_t key;
    sim::BlockRef ref;
  };
  // Multiplicative (Fibonacci) hashing: the top bits of (addr ^ seed) * 2^64/phi, a third of the
  // instructions of SeededAddressHash's mix for the replay's two lookups per malloc/free pair;
  // the top bits of the product depend on all of the address's bits, so 512-byte aligned
  // addresses spread over the table. The seed is per process, as SeededAddressHash's.
  size_t Home(uint64_t x) const {
    static const char seed_anchor = 0;
    const uint64_t seed = reinterpret_cast<uintptr_t>(&seed_anchor);
    return static_cast<size_t>(((x ^ seed) * 0x9e3779b97f4a7c15ULL) >> shift_);
  }
  // Out of line: Set is always_inline, and calling itself would be recursive inlining.
  [[gnu::noinline]] void GrowAndSet(uint64_t addr, sim::BlockRef ref) {
    Grow();
    Set(addr, ref);
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{kEmpty, 0});
    mask_ = slots_.size() - 1;
    --shift_;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = Home(s.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = kInitial - 1;
  int shift_ = 64 - std::countr_zero(kInitial);  // Home() gives log2(slots_.size()) bits
  size_t size_ = 0;
  sim::BlockRef empty_key_ref_ = 0;  // for the one address equal to kEmpty
  bool empty_key_used_ = false;
};

struct RunOptions {
  int64_t capacity = sim::kUnlimitedCapacity;
  bool curve = false;
  std::span<const TraceEvent> events;  // for time stamps and oom stacks
  bool validation = false;             // reuse recorded addresses and compare
  bool warm = false;                   // start from PreparedTrace::warm instead of cold
  const std::vector<SegmentEventRecord>* recorded = nullptr;
  /// Stop at the first failed malloc (the peaks are then those up to it): enough to know that a
  /// configuration does not fit.
  bool stop_at_first_oom = false;
  /// Called at every failed malloc, right after it, with the allocator in the state it failed in
  /// (alloc.last_oom() describes the failure) and the live blocks: what `oom` explains.
  std::function<void(const Op&, const sim::CachingAllocator&, const LiveBlocks&)> on_oom;
  /// Keep RunOutput::reserved_records (what SmallestFittingCapacity bounds its replays with).
  bool reserved_records = false;
  /// Operations of PreparedTrace::ops replayed with another size: {index, size}, by index (the
  /// batch-share search's scaled mallocs, without a copy of the trace).
  std::span<const std::pair<size_t, int64_t>> resized;
};

/// A new high of reserved bytes: after the operation at `position` (an index into the run's
/// operations, the starting state's first, then the trace's), reserved was `reserved`, more than
/// after any earlier one.
struct ReservedRecord {
  size_t position = 0;
  int64_t reserved = 0;
};

struct RunOutput {
  ConfigResult result;
  std::optional<VerifyResult> verify;
  std::vector<ReservedRecord> reserved_records;  // with RunOptions::reserved_records
  size_t ops_applied = 0;  // operations replayed (fewer than all when it stopped at an OOM)
};

/// The trace a replay runs: `device`'s (>= 0), else the first device with events. NotFound
/// ("device 3 has no trace events") or FailedPrecondition when there is none.
absl::StatusOr<const DeviceTrace*> SelectTrace(const Snapshot& snap, DeviceFilter device);

/// True for the operations that call Malloc: kAlloc and kOomMalloc (a recorded OOM).
constexpr bool IsMalloc(OpKind k) { return k == OpKind::kAlloc || k == OpKind::kOomMalloc; }

/// Applies one operation to the caching allocator, keeping `live` up to date: the dispatch the
/// CPU replay (RunConfig) and the GPU replay share; each adds its own bookkeeping through
/// `on_alloc(BlockRef)`, called when a kAlloc was served, and `on_oom()`, called when a malloc
/// failed (alloc.last_oom() describes it). A free of an address whose alloc failed does
/// nothing; a recorded OOM (kOomMalloc) that this configuration can serve is given back at
/// once, since what the program did after catching it is not in the trace. Always inlined,
/// callbacks included: it is the body of the replay's hot loop.
template <typename OnAlloc, typename OnOom>
[[gnu::always_inline]] inline void ApplyOp(const Op& op, sim::CachingAllocator& alloc,
                                           LiveBlocks& live, OnAlloc&& on_alloc, OnOom&& on_oom) {
  switch (op.kind) {
    case OpKind::kAlloc: {
      std::optional<sim::BlockRef> b = alloc.Malloc(op.size, op.stream);
      if (!b) {
        on_oom();
        live.Erase(op.addr);
        break;
      }
      live.Set(op.addr, *b);
      on_alloc(*b);
      break;
    }
    case OpKind::kFree: {
      sim::BlockRef b;
      // Else its alloc failed (OOM), or an inconsistent start named the block twice.
      if (live.Take(op.addr, b) && alloc.IsAllocated(b)) alloc.Free(b);
      break;
    }
    case OpKind::kFreeRequested: {
      const sim::BlockRef* b = live.Find(op.addr);
      if (b != nullptr && alloc.IsAllocated(*b)) alloc.FreeRequested(*b);
      break;
    }
    case OpKind::kFreeCompleted: {
      sim::BlockRef b;
      if (live.Take(op.addr, b)) alloc.FreeCompleted(b);  // a no-op unless it is pending
      break;
    }
    case OpKind::kEmptyCache:
      alloc.EmptyCache();
      break;
    case OpKind::kOomMalloc: {
      std::optional<sim::BlockRef> b = alloc.Malloc(op.size, op.stream);
      if (b) {
        alloc.Free(*b);
      } else {
        on_oom();
      }
      break;
    }
  }
}

/// Replays `prepared` under one configuration.
RunOutput RunConfig(const PreparedTrace& prepared, const ReplayConfig& config,
                    const RunOptions& options);

/// Whether a capacity limits `config`'s allocator only through the reserved bytes: the device's
/// cudaMalloc, and a memory fraction's limit and garbage-collection threshold (fractions of the
/// capacity); not with expandable segments, whose address ranges are sized from it. Then a
/// replay bounded by C takes exactly the decisions of the unbounded replay up to the first
/// operation after which the unbounded one had more reserved than
/// sim::CachingAllocator::ReservedTakingUnlimitedDecisions(config, C): until then every
/// cudaMalloc fits in C, within the fraction's limit, and garbage collection finds nothing to do.
bool SharesUnboundedPrefix(const sim::AllocatorConfig& config);

/// Whether `unbounded`, a replay of `replayed` on no limit, is also the replay of `other` on no
/// limit, decision for decision (so its peaks and reserved_records stand for other's, and a
/// SmallestFittingCapacity search of `other` can be given it): `replayed` has no memory fraction,
/// the two differ only in the memory fraction and the garbage-collection threshold, and the
/// replay never reserved more than
/// sim::CachingAllocator::ReservedTakingUnlimitedDecisions(other, no limit). Then every cudaMalloc
/// of the replay fits under `other`'s fraction's limit and its garbage collection finds
/// nothing above its threshold, which is all the two settings change (docs/simulator.md, "One
/// unbounded replay for two settings").
bool UnboundedReplayStandsFor(const sim::AllocatorConfig& replayed, const RunOutput& unbounded,
                              const sim::AllocatorConfig& other);

/// What a SmallestFittingCapacity search cost (tests and benchmarks).
struct FitSearchStats {
  int replays = 0;    // replays run (the unbounded one included when the search made it), whole
                      // or resumed from a saved state
  int64_t ops = 0;    // operations they applied
  int proven = 0;     // capacities known to fit without a replay (SharesUnboundedPrefix)
  int resumed = 0;    // replays that started from a saved state past the trace's start
  int unbounded = 0;  // of `replays`: the unbounded one
  int fitted = 0;     // of `replays`: bounded ones that fit, so ran to the trace's end
  int64_t fitted_ops = 0;  // the operations those applied (the rest failed, most of them early)
  int hinted = 0;          // searches answered from the brackets around FitHint's prediction
};

/// "WHO: N bounded replays (R resumed from a saved state; U unbounded, F fitted: X operations),
/// M operations, P capacities proven without a replay": what the searches cost and which of
/// their replays did (a replay that fits runs to the trace's end, one that fails stops at its
/// first failed malloc), for --timings.
std::string FitSearchNote(std::string_view who, const std::vector<FitSearchStats>& stats);

/// Where SmallestFittingCapacity predicts `config`'s answer from its unbounded replay, asked
/// first (HintedHalving, fit_search.h): with a memory fraction f, the unbounded peak reserved /
/// f; otherwise the unbounded peak allocated. docs/simulator.md, "The search for the smallest
/// memory that fits", says how often each lands and what it saves.
std::optional<int64_t> FitHint(const sim::AllocatorConfig& config, const ConfigResult& unbounded);

/// How many brackets above the predicted one HintedHalving tries before it halves.
inline constexpr int kFitHintMaxUp = 4;

/// The replay of `config` on no limit that a SmallestFittingCapacity search starts with (its
/// `unbounded`): `base`'s start, events and resized sizes, with reserved_records; counted in
/// `stats` (nullptr: not counted) as one of the search's replays.
RunOutput UnboundedReplay(const PreparedTrace& prepared, const ReplayConfig& config,
                          const RunOptions& base, FitSearchStats* stats = nullptr);

/// Bytes of the warm start's segments (PreparedTrace::warm).
int64_t WarmBytes(const PreparedTrace& p);

/// Places the warm start on a device of `capacity`: every recorded segment when they all fit;
/// otherwise the segments in address order while they fit, and each one that no longer fits
/// beside those placed before it is left out, its blocks (in address order) allocated after
/// PreparedTrace::warm_leftover, as a cold start would: the recorded state re-created as far as
/// the device holds it, the same way in every replay of every answer. Returns the operations a
/// replay applies before the trace in place of warm_leftover (those blocks after it) when a
/// segment was left out; empty when warm_leftover alone is what comes before the trace.
std::vector<Op> SeedWarmStart(const PreparedTrace& p, int64_t capacity,
                              sim::CachingAllocator& alloc, LiveBlocks& live);

/// The smallest device memory on which `config` replays the whole of `prepared` without a failed
/// malloc, searched in units of FitUnit(config) (fit.h): exact to one unit when `exact` (the
/// answer fits, one unit less fails), else to one unit or 0.25% of the answer, whichever is
/// larger. First one run with no limit (`unbounded`: made with `base` and
/// RunOptions::reserved_records), whose peak reserved is then verified as a capacity that fits
/// (the retry and the warm start can differ on it), then halving down to the run's own peak of
/// requested bytes, the failed requests included (below it nothing fits). 0 when no replay fits.
/// The halving's capacities are asked first around FitHint's prediction (HintedHalving): the
/// same answer whenever fitting is monotone in the capacity, usually with one replay that fits
/// instead of several. Every capacity returned is one a replay completed on, or one proven to
/// take the unbounded replay's decisions. `base` gives the events and the start, warm or cold, of
/// every replay of the search, the unbounded one included (docs/simulator.md, "One starting
/// state"); a warm start does not fit on a capacity smaller than its segments. `unbounded`
/// nullptr: made here.
///
/// When SharesUnboundedPrefix(config), no replay is spent on what the unbounded one already
/// tells: a capacity at or above its peak reserved fits, and a replay bounded by C resumes from
/// the unbounded replay's state just before it first exceeded C reserved (saved by the last
/// replay that failed, the search's lower bound, as it passed that point). The answer is the one
/// the replays from the start give, operation for operation.
int64_t SmallestFittingCapacity(const PreparedTrace& prepared, const ReplayConfig& config,
                                const RunOptions& base, bool exact,
                                const RunOutput* unbounded = nullptr,
                                FitSearchStats* stats = nullptr);

/// Whether replays under `start` begin from PreparedTrace::warm: the recorded start, when the
/// snapshot's segments could be rebuilt and some were alive when the trace began.
bool StartsWarm(const PreparedTrace& prepared, FitStart start);

/// The options every replay of a fit search starts from: the trace's events and the start.
RunOptions FitRunOptions(const Snapshot& snap, const DeviceTrace& trace,
                         const PreparedTrace& prepared, FitStart start);

/// One device's fit searches: each of `configs` (the recorded settings first) on `prepared`,
/// every replay starting as `run` says (FitRunOptions).
struct FitJob {
  const PreparedTrace* prepared = nullptr;
  RunOptions run;
  const std::vector<ReplayConfig>* configs = nullptr;
  const std::vector<size_t>* same_as = nullptr;  // ReplayStandIns of configs
  /// Out, per config: the smallest fit (SmallestFittingCapacity; exact for the recorded
  /// settings), and the unbounded replay's result. A stand-in gets its replay's.
  std::vector<int64_t> fits_on;
  std::vector<ConfigResult> unbounded;
};

/// The one search behind every fit answer: every job's settings searched on up to `max_threads`
/// cores (0: all), with the `beside` tasks in the same pool (a caller's own long replays, which
/// keep the cores busy to the end). `who` names the --timings line.
void SearchSmallestFits(std::span<FitJob> jobs, std::span<const std::function<void()>> beside,
                        int max_threads, std::string_view who);

/// Aligns recorded and simulated segment events (resynchronising after a mismatch) and fills
/// segment_events, simulated_events, matched and the first divergence.
void CompareSegmentEvents(VerifyResult& v);

}  // namespace memsnap::analysis
