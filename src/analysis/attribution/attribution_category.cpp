// Categories: a lifetime's kind of memory from its stack's phase and from when it is freed
// relative to the phase runs of its device (docs/attribution.md, "Categories").
//
// A phase run is a maximal stretch of a device's events whose allocations all show the same phase;
// events that show none (frees, segment events, allocations without a stack) do not end a run and
// belong to the run before them. Runs are found on demand around the events a question is about and
// kept, so each event is read at most about twice whatever the number of questions.
#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "absl/container/flat_hash_set.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "pre_trace_internal.h"

namespace memsnap::analysis {

namespace {

constexpr std::array<std::string_view, kNumCategoryRules> kRuleNames = {"accumulate_grad",
                                                                        "backward_kept",
                                                                        "backward_freed",
                                                                        "optimizer_kept",
                                                                        "optimizer_freed",
                                                                        "init_kept",
                                                                        "init_freed",
                                                                        "data_kept",
                                                                        "data_freed",
                                                                        "before_forward",
                                                                        "saved_for_backward",
                                                                        "forward_kept",
                                                                        "forward_freed",
                                                                        "other_freed",
                                                                        "pre_trace_persistent",
                                                                        "freed_by_backward",
                                                                        "freed_by_zero_grad",
                                                                        "freed_by_optimizer",
                                                                        "stack_phase",
                                                                        "no_evidence",
                                                                        "user_category",
                                                                        "pre_trace_gradient",
                                                                        "pre_trace_optimizer_state",
                                                                        "kv_cache_frame",
                                                                        "autocast_cleared",
                                                                        "autocast_weight_size",
                                                                        "init_state"};

constexpr uint32_t kNone32 = std::numeric_limits<uint32_t>::max();

// A stack of KV cache code (SiteInfo::kv_cache) outside the backward pass and the optimizer step:
// the cache, made, grown or replaced (rule kv_cache_frame). A backward or optimizer stack through
// such a frame is the backward's or the optimizer's, as their rules say.
bool KvCacheCode(const SiteInfo& site) {
  return site.kv_cache && site.phase != Phase::kBackward && site.phase != Phase::kOptimizer;
}

}  // namespace

std::string_view CategoryRuleName(CategoryRule r) { return kRuleNames[static_cast<size_t>(r)]; }

struct LifetimeCategorizer::Runs {
  struct Run {
    uint32_t start = 0;  // first allocation of the phase
    uint32_t end = 0;    // first event of another phase, or num_events
    Phase phase = Phase::kNone;
    std::array<uint32_t, kNumPhases> next{};  // start of the next run of phase p (memo); 0 unknown
  };
  Attribution& attr;
  const DeviceTimeline& dt;
  std::map<uint32_t, Run> runs;      // by start (std::map: nodes stay put, `last` stays valid)
  Run* last = nullptr;               // the run Known() returned last
  int model_ran = -1;                // -1 unknown
  std::vector<int64_t> param_sizes;  // ParamSizes()
  bool param_sizes_done = false;
  // A phase run's start -> how many allocations autocast's cached_cast made in it, by size.
  absl::flat_hash_map<uint32_t, absl::flat_hash_map<int64_t, int64_t>> casts_in_run;
  std::vector<uint8_t> autocast_stack;  // StackId -> 0 not known, 1 no cached_cast, 2 one

  Runs(Attribution& a, const DeviceTimeline& d) : attr(a), dt(d) {}

  uint32_t size() const { return dt.num_events; }

  Phase PhaseAt(uint32_t e) {
    const TraceEvent& ev = attr.snapshot().events[dt.event_begin + e];
    if (ev.action == Action::kAlloc) return attr.PhaseOf(ev.stack);
    // An out-of-memory error ends the phase it interrupts: what was alive then had outlived it.
    return ev.action == Action::kOom ? Phase::kOther : Phase::kNone;
  }

  // The known run containing event e, or nullptr. Lifetimes come in event order, so the last run
  // found usually holds the next one asked about.
  Run* Known(uint32_t e) {
    if (last != nullptr && last->start <= e && e < last->end) return last;
    auto it = runs.upper_bound(e);
    if (it == runs.begin()) return nullptr;
    --it;
    if (e >= it->second.end) return nullptr;
    last = &it->second;
    return last;
  }

  // Finds the run around `seed`, an allocation whose phase is known.
  Run* Discover(uint32_t seed) {
    const Phase p = PhaseAt(seed);
    auto next_it = runs.upper_bound(seed);
    const uint32_t hi = next_it == runs.end() ? size() : next_it->second.start;
    uint32_t lo = 0;
    if (next_it != runs.begin()) lo = std::prev(next_it)->second.end;
    uint32_t start = seed;
    for (uint32_t e = seed; e-- > lo;) {
      Phase q = PhaseAt(e);
      if (q == Phase::kNone) continue;
      if (q != p) break;
      start = e;
    }
    uint32_t end = hi;
    for (uint32_t e = seed + 1; e < hi; ++e) {
      Phase q = PhaseAt(e);
      if (q != Phase::kNone && q != p) {
        end = e;
        break;
      }
    }
    Run run;
    run.start = start;
    run.end = end;
    run.phase = p;
    return &runs.emplace(start, run).first->second;
  }

  // The run containing event e (a transparent event belongs to the run before it), or nullptr
  // when no allocation before or at e shows a phase.
  Run* Containing(uint32_t e) {
    if (e >= size()) return nullptr;
    if (Run* r = Known(e)) return r;
    auto it = runs.upper_bound(e);
    const uint32_t lo = it == runs.begin() ? 0 : std::prev(it)->second.end;
    for (uint32_t x = e + 1; x-- > lo;) {
      if (PhaseAt(x) != Phase::kNone) return Discover(x);
    }
    return nullptr;  // nothing known between the previous run's end and e: e precedes every run
  }

  // The first run that starts at or after event e, or nullptr.
  Run* StartingFrom(uint32_t e) {
    auto it = runs.lower_bound(e);
    const uint32_t hi = it == runs.end() ? size() : it->second.start;
    for (uint32_t x = e; x < hi; ++x) {
      if (PhaseAt(x) != Phase::kNone) return Discover(x);
    }
    return it == runs.end() ? nullptr : &it->second;
  }

  // Start of the first run of phase p that begins after the run containing e; kNone32 if none.
  uint32_t NextOfPhase(uint32_t e, Phase p) {
    Run* r = Containing(e);
    if (r == nullptr) {
      Run* first = StartingFrom(e);
      if (first == nullptr) return kNone32;
      if (first->phase == p) return first->start;
      r = first;
    }
    std::vector<Run*> walked;
    uint32_t found = kNone32;
    while (true) {
      uint32_t& memo = r->next[static_cast<size_t>(p)];
      if (memo != 0) {
        found = memo == kNone32 ? kNone32 : memo - 1;
        break;
      }
      walked.push_back(r);
      if (r->end >= size()) break;
      Run* n = Containing(r->end);
      if (n == nullptr) break;
      if (n->phase == p) {
        found = n->start;
        break;
      }
      r = n;
    }
    for (Run* w : walked) w->next[static_cast<size_t>(p)] = found == kNone32 ? kNone32 : found + 1;
    return found;
  }

  // The requested sizes of the device's parameter-kind blocks, ascending: blocks alive through the
  // whole trace (none of its events touches their address) without a stack in a trace that runs a
  // model or with an init-phase stack, and init-phase allocations of the trace alive when their run
  // ends (rules pre_trace_persistent, stack_phase, init_kept). Read from the file, not from the
  // lifetimes a command kept, so every command finds the same. Built on first use.
  const std::vector<int64_t>& ParamSizes() {
    if (param_sizes_done) return param_sizes;
    param_sizes_done = true;
    const Snapshot& snap = attr.snapshot();
    absl::flat_hash_set<uint64_t> touched;
    absl::flat_hash_map<uint64_t, std::pair<uint32_t, int64_t>> init_live;  // addr -> alloc, size
    auto init_done = [&](uint64_t addr, std::optional<uint32_t> free) {
      auto it = init_live.find(addr);
      if (it == init_live.end()) return;
      Run* run = Containing(it->second.first);
      if (!free || run == nullptr || *free >= run->end) param_sizes.push_back(it->second.second);
      init_live.erase(it);
    };
    for (uint32_t e = 0; e < size(); ++e) {
      const TraceEvent& ev = snap.events[dt.event_begin + e];
      if (ev.action == Action::kAlloc) {
        touched.insert(ev.addr);
        if (attr.PhaseOf(ev.stack) == Phase::kInit) init_live[ev.addr] = {e, ev.size};
      } else if (ev.action == Action::kFreeRequested) {
        touched.insert(ev.addr);
        init_done(ev.addr, e);
      } else if (ev.action == Action::kFreeCompleted) {
        touched.insert(ev.addr);
      }
    }
    while (!init_live.empty()) init_done(init_live.begin()->first, std::nullopt);
    for (const Segment& seg : snap.segments) {
      if (seg.device != dt.device) continue;
      for (const Block& b : snap.BlocksOf(seg)) {
        if (b.state != BlockState::kActiveAllocated || touched.contains(b.address)) continue;
        const bool param = b.stack.valid() && !snap.stacks.Get(b.stack).empty()
                               ? attr.PhaseOf(b.stack) == Phase::kInit
                               : ModelRan();
        if (param) param_sizes.push_back(b.requested_size >= 0 ? b.requested_size : b.size);
      }
    }
    std::sort(param_sizes.begin(), param_sizes.end());
    return param_sizes;
  }

  // Whether the cast autocast made of `cast` bytes at event `e` can be a parameter's cast to half
  // precision: half of a parameter-kind block's requested size (within the caching allocator's
  // rounding of each to 512 bytes), and no more casts of that size in its phase run than there
  // are such parameters (autocast's cache casts each weight once per region: more casts of the
  // size are activations' casts too, which the size cannot tell from the weights').
  bool HalfOfParameter(uint32_t e, int64_t cast) {
    const std::vector<int64_t>& sizes = ParamSizes();
    const auto params = std::upper_bound(sizes.begin(), sizes.end(), 2 * cast + 1023) -
                        std::lower_bound(sizes.begin(), sizes.end(), 2 * cast - 1023);
    if (params == 0) return false;
    Run* run = Containing(e);
    if (run == nullptr) return false;
    auto [it, fresh] = casts_in_run.try_emplace(run->start);
    if (fresh) {
      for (uint32_t x = run->start; x < run->end; ++x) {
        const TraceEvent& ev = attr.snapshot().events[dt.event_begin + x];
        if (ev.action == Action::kAlloc && AutocastCast(ev.stack)) ++it->second[ev.size];
      }
    }
    auto n = it->second.find(cast);
    return n != it->second.end() && n->second <= params;
  }

  // Whether `stack` has at::autocast::cached_cast (SiteInfo::autocast_cast, without the site's
  // texts), cached per stack.
  bool AutocastCast(StackId stack) {
    if (!stack.valid()) return false;
    if (autocast_stack.empty()) autocast_stack.assign(attr.snapshot().stacks.size(), 0);
    if (stack.v >= autocast_stack.size()) return false;
    uint8_t& memo = autocast_stack[stack.v];
    if (memo == 0) {
      memo = 1;
      const Snapshot& snap = attr.snapshot();
      for (FrameId f : snap.stacks.Get(stack)) {
        if (snap.strings.Get(snap.frames.Get(f).name).starts_with("at::autocast::cached_cast(")) {
          memo = 2;
          break;
        }
      }
    }
    return memo == 2;
  }

  bool ModelRan() {
    auto model = [](Phase p) {
      return p == Phase::kForward || p == Phase::kBackward || p == Phase::kOptimizer;
    };
    if (model_ran < 0) {
      model_ran = 0;
      for (uint32_t e = 0; e < size() && model_ran == 0; ++e) model_ran = model(PhaseAt(e));
      // A dump with a short trace (or none): the dumped blocks' own stacks show the model that
      // ran (a generation loop's KV cache), and the weights loaded before recording, which have
      // no stack, are that model's.
      const Snapshot& snap = attr.snapshot();
      // (The timeline's own list of the device's segments: this categorizer may be one of many
      // made for one device each, so nothing here may cost a pass over every device's.)
      for (const SegmentLifetime& sl : dt.segments) {
        if (model_ran != 0) break;
        if (!sl.segment.valid() || sl.segment.v >= snap.segments.size()) continue;
        for (const Block& b : snap.BlocksOf(snap.segments[sl.segment.v])) {
          if (b.is_active() && b.stack.valid() && model(attr.PhaseOf(b.stack))) {
            model_ran = 1;
            break;
          }
        }
      }
    }
    return model_ran == 1;
  }
};

LifetimeCategorizer::LifetimeCategorizer(Attribution& attribution, const DeviceTimeline& dt)
    : attr_(attribution), dt_(dt), runs_(std::make_unique<Runs>(attribution, dt)) {}

LifetimeCategorizer::~LifetimeCategorizer() = default;

bool LifetimeCategorizer::ModelRan() { return runs_->ModelRan(); }

std::string_view PreWindowRow(const SiteInfo& free_site) {
  // The order Categorize reads a pre-window lifetime's free in.
  if (free_site.zero_grad) return kPreWindowZeroGradRow;
  if (free_site.accumulate_grad) return kPreWindowAccumulateGradRow;
  if (free_site.autocast_clear) return kPreWindowAutocastRow;
  if (KvCacheCode(free_site)) {
    return kPreWindowKvCacheRow;
  }
  if (free_site.phase == Phase::kBackward) return kPreWindowBackwardRow;
  if (free_site.phase == Phase::kOptimizer) return kPreWindowOptimizerRow;
  return kPreWindowRow;
}

CategoryVerdict StackPhaseCategory(const SiteInfo& site) {
  using C = Category;
  using R = CategoryRule;
  if (site.user_category >= 0) return {UserCategoryAt(site.user_category), R::kUserCategory};
  if (site.accumulate_grad) return {C::kGradient, R::kAccumulateGrad};
  if (KvCacheCode(site)) {
    return {C::kKvCache, R::kKvCacheFrame};
  }
  switch (site.phase) {
    case Phase::kBackward:
      return {C::kGradient, R::kStackPhase};
    case Phase::kOptimizer:
      return {C::kOptimizerState, R::kStackPhase};
    case Phase::kInit:
      return site.init_state ? CategoryVerdict{C::kState, R::kStackPhase}
                             : CategoryVerdict{C::kParameter, R::kStackPhase};
    case Phase::kForward:
      return {C::kActivation, R::kStackPhase};
    case Phase::kData:
      return {C::kInput, R::kStackPhase};
    default:
      return {C::kUnknown, R::kNoEvidence};
  }
}

CategoryVerdict LifetimeCategorizer::Categorize(const BlockLifetime& lt) {
  using C = Category;
  using R = CategoryRule;
  const SiteInfo& site = attr_.Site(lt.stack);
  const bool has_stack = site.kind != SiteKind::kNoStack;
  if (lt.cls == LifetimeClass::kPreWindow) {
    // Allocated before the trace; its stack is the free's: who freed it says what it was.
    if (site.accumulate_grad || site.zero_grad) return {C::kGradient, R::kFreedByZeroGrad};
    // Autocast's cache cleared, or cache code replacing the cache (DynamicCache.update's cat).
    if (site.autocast_clear) return {C::kAutocastCache, R::kAutocastCleared};
    if (KvCacheCode(site)) {
      return {C::kKvCache, R::kKvCacheFrame};
    }
    if (site.phase == Phase::kBackward) return {C::kActivation, R::kFreedByBackward};
    if (site.phase == Phase::kOptimizer) return {C::kOptimizerState, R::kFreedByOptimizer};
    return {C::kUnknown, R::kNoEvidence};
  }
  // The user's categories come first (docs/attribution.md, "User categories"); a pre-window
  // lifetime's stack is its free's, so they are not asked about it above.
  if (site.user_category >= 0) return {UserCategoryAt(site.user_category), R::kUserCategory};
  if (lt.cls == LifetimeClass::kGhost || !lt.alloc_event.seen()) {
    // Alive since before the trace and never freed in it.
    if (!has_stack) {
      if (!runs_->ModelRan()) return {C::kUnknown, R::kNoEvidence};
      // What the trace's optimizer step shows the block to be, else a parameter.
      if (auto v = PreTraceVerdict(lt)) return *v;
      return {C::kParameter, R::kPreTracePersistent};
    }
    return StackPhaseCategory(site);
  }
  if (site.accumulate_grad) return {C::kGradient, R::kAccumulateGrad};
  // KV cache code made it, in any phase but the backward pass and the optimizer's (a generation
  // loop's cache is made in forward calls, a static or paged cache in init).
  if (KvCacheCode(site)) {
    return {C::kKvCache, R::kKvCacheFrame};
  }
  const uint32_t a = *lt.alloc_event.index();
  // When the tensor died: the free request (the memory may stay in use by a stream a while).
  const std::optional<uint32_t> f = lt.free_requested_event.seen()
                                        ? lt.free_requested_event.index()
                                        : lt.free_completed_event.index();
  auto alive_at = [&](uint32_t e) { return !f || *f >= e; };
  Phase phase = site.phase;
  Runs::Run* run = runs_->Containing(a);
  if (phase == Phase::kNone) {
    // No stack in a trace that records them elsewhere: an allocation from a thread without Python
    // frames; inside a backward run that is the autograd engine's.
    if (run == nullptr || run->phase != Phase::kBackward) return {C::kUnknown, R::kNoEvidence};
    phase = Phase::kBackward;
  }
  const uint32_t end = run != nullptr ? run->end : runs_->size();
  // Alive when the next phase starts; when the run lasts to the end of the trace, never freed.
  const bool kept = alive_at(end);
  if (site.autocast_cast) {
    // Autocast cast an operator's input. Its cache keeps the casts of weights (leaf tensors that
    // require grad) until the outermost autocast region exits; an activation's cast is never
    // cached. A weight's cast: freed by the cache's clearing, or a parameter's size in half
    // precision, with no more casts of that size in its phase run than such parameters, and not
    // freed in the run that made it (an uncached cast dies with its operator).
    const bool cleared =
        f && attr_.Site(attr_.snapshot().events[dt_.event_begin + *f].stack).autocast_clear;
    if (cleared) return {C::kAutocastCache, R::kAutocastCleared};
    if (kept && runs_->HalfOfParameter(a, lt.requested_size)) {
      return {C::kAutocastCache, R::kAutocastWeightSize};
    }
  }
  switch (phase) {
    case Phase::kBackward:
      return kept ? CategoryVerdict{C::kGradient, R::kBackwardKept}
                  : CategoryVerdict{C::kTemporary, R::kBackwardFreed};
    case Phase::kOptimizer:
      return kept ? CategoryVerdict{C::kOptimizerState, R::kOptimizerKept}
                  : CategoryVerdict{C::kTemporary, R::kOptimizerFreed};
    case Phase::kInit:
      if (!kept) return {C::kTemporary, R::kInitFreed};
      return site.init_state ? CategoryVerdict{C::kState, R::kInitState}
                             : CategoryVerdict{C::kParameter, R::kInitKept};
    case Phase::kData:
      return kept ? CategoryVerdict{C::kInput, R::kDataKept}
                  : CategoryVerdict{C::kTemporary, R::kDataFreed};
    case Phase::kForward: {
      const uint32_t backward = runs_->NextOfPhase(a, Phase::kBackward);
      if (backward != kNone32) {
        return alive_at(backward) ? CategoryVerdict{C::kActivation, R::kSavedForBackward}
                                  : CategoryVerdict{C::kTemporary, R::kForwardFreed};
      }
      return kept ? CategoryVerdict{C::kActivation, R::kForwardKept}
                  : CategoryVerdict{C::kTemporary, R::kForwardFreed};
    }
    default: {
      // Outside any phase: a batch made ready for the next forward pass, something a coming
      // backward needs (the loss), or a temporary of the training loop.
      // (Between two forward runs, as in a script that calls layers one by one at top level,
      // it is an intermediate result, not an input.)
      const Runs::Run* before =
          run != nullptr && run->start > 0 ? runs_->Containing(run->start - 1) : nullptr;
      const bool after_forward = before != nullptr && before->phase == Phase::kForward;
      if (!after_forward && end < runs_->size() && runs_->PhaseAt(end) == Phase::kForward &&
          alive_at(end)) {
        return {C::kInput, R::kBeforeForward};
      }
      const uint32_t backward = runs_->NextOfPhase(a, Phase::kBackward);
      if (backward != kNone32 && alive_at(backward)) return {C::kActivation, R::kSavedForBackward};
      if (f) return {C::kTemporary, R::kOtherFreed};
      return {C::kUnknown, R::kNoEvidence};
    }
  }
}

std::optional<StepPhase> LifetimeCategorizer::PhaseOf(const BlockLifetime& lt) {
  if (lt.cls == LifetimeClass::kPreWindow || lt.cls == LifetimeClass::kGhost ||
      !lt.alloc_event.seen()) {
    return std::nullopt;  // allocated before the trace: the stack at hand is not the allocation's
  }
  const Phase phase = attr_.PhaseOf(lt.stack);
  if (phase != Phase::kNone) return StepPhaseOf(phase);
  // No stack: inside a backward run that is the autograd engine's (as Categorize reads it).
  const Runs::Run* run = runs_->Containing(*lt.alloc_event.index());
  return run != nullptr && run->phase == Phase::kBackward ? StepPhase::kBackward
                                                          : StepPhase::kOther;
}

StepPhase LifetimeCategorizer::PhaseAtEvent(uint32_t e) {
  const Runs::Run* run = runs_->Containing(e);
  return run == nullptr ? StepPhase::kOther : StepPhaseOf(run->phase);
}

LifetimeCategorizer& Categorizers::For(const DeviceTimeline& dt) {
  if (&dt == last_device_) return *last_;
  auto& c = by_device_[&dt];
  if (!c) c = std::make_unique<LifetimeCategorizer>(attr_, dt);
  last_device_ = &dt;
  last_ = c.get();
  return *c;
}

}  // namespace memsnap::analysis
