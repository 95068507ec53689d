// `memsnap oom`: replays each device on its capacity under the recorded settings (capturing the
// allocator's state at every failed malloc) and under each candidate setting, all in parallel,
// then names the holders of the failing moments and judges each failure.
#include "memsnap/analysis/allocator/oom.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <set>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/allocator/fit_search.h"
#include "analysis/allocator/replay_internal.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/site.h"
#include "memsnap/analysis/sites/stale_gradients.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/util/format.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

namespace {

// Failures explained per device; a program that catches OOMs in a loop records many.

// What the recorded-settings run saw at one failed malloc.
struct Capture {
  uint32_t event = 0;
  uint64_t addr = 0;  // the op's trace address (cold start: the pre-existing block's)
  bool oom_entry = false;
  sim::OomInfo info;
  sim::FreeSpace free;
  std::vector<std::pair<uint64_t, int64_t>> live;  // trace address, block bytes (allocated)
};

struct DeviceJob {
  const DeviceTrace* trace = nullptr;
  OomDevice dev;
  PreparedTrace prepared;
  RunOptions run;                     // the replays on the capacity
  RunOptions fit_run;                 // the fit searches' (FitRunOptions)
  std::vector<ReplayConfig> configs;  // recorded first
  std::vector<ConfigResult> results;
  /// same_as[k] = j < k when setting k provably takes setting j's decisions on this trace (its
  /// result is j's, not run again); else k.
  std::vector<size_t> same_as;
  std::vector<Capture> captures;
  int64_t dropped_captures = 0;
};

// What names the holders of a device's failures: site labels, and categories by the attribution
// model's full rules when the device's recorded lifetimes are at hand (the same category `top` and
// `summary` give a block), else by what each stack shows alone.
class HolderNamer {
 public:
  HolderNamer(const Snapshot& snap, const DeviceTimeline* dt, const CategoryNames& categories)
      : namer(snap, categories), dt_(dt) {
    if (dt_ == nullptr) return;
    size_t allocated = 0;
    for (const BlockLifetime& b : dt_->blocks) allocated += b.alloc_event.seen() ? 1 : 0;
    by_alloc_.reserve(allocated);  // exact: a grown copy would stay resident (KeepFreedMemory)
    for (uint32_t i = 0; i < dt_->blocks.size(); ++i) {
      const BlockLifetime& b = dt_->blocks[i];
      if (std::optional<uint32_t> e = b.alloc_event.index()) {
        by_alloc_.emplace_back(*e, i);
      } else if (b.cls == LifetimeClass::kGhost) {
        ghost_[b.address] = i;
      } else if (b.cls == LifetimeClass::kPreWindow) {
        pre_window_.try_emplace(b.address, i);  // the first lifetime at its address
      }
    }
    // Lifetimes open in trace order, so this is nearly sorted already; stable, so that of two
    // lifetimes with one alloc event the later one answers, as it always did.
    std::stable_sort(by_alloc_.begin(), by_alloc_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  // A block the trace frees without allocating it: its kind as every other command gives it
  // (docs/figures.md, "Kinds of memory"); unknown without the lifetimes.
  analysis::Category PreWindowCategory(uint64_t addr) {
    if (auto it = pre_window_.find(addr); it != pre_window_.end()) {
      return namer.CategoryOf(*dt_, dt_->blocks[it->second]);
    }
    return Category::kUnknown;
  }
  // Its row: what its free says it was (PreWindowRow, as `top` and `blocks` name it).
  std::string PreWindowLabel(uint64_t addr) {
    if (auto it = pre_window_.find(addr); it != pre_window_.end()) {
      const StackId free_stack = dt_->blocks[it->second].stack;
      return std::string(analysis::PreWindowRow(namer.attribution().Site(free_stack)));
    }
    return std::string(kPreWindowRow);
  }
  // A block older than the trace that it never saw: its stack's label, or what the trace showed
  // of it (PreTraceEvidenceRow, as `top` and `blocks` name it).
  std::string GhostLabel(StackId stack, uint64_t addr) {
    if (auto it = ghost_.find(addr); it != ghost_.end()) {
      const std::string_view evidence =
          analysis::PreTraceEvidenceRow(namer.VerdictOf(*dt_, dt_->blocks[it->second]).rule);
      if (!evidence.empty()) return std::string(evidence);
    }
    return namer.Label(stack, /*before_trace=*/true);
  }
  // The block allocated at device-local event `alloc_event`, or (kPreexistingEvent) the one older
  // than the trace at `addr`.
  analysis::Category CategoryOf(StackId stack, uint32_t alloc_event, uint64_t addr) {
    if (alloc_event == kPreexistingEvent) {
      if (auto it = ghost_.find(addr); it != ghost_.end()) {
        return namer.CategoryOf(*dt_, dt_->blocks[it->second]);
      }
    } else {
      auto it = std::upper_bound(by_alloc_.begin(), by_alloc_.end(), alloc_event,
                                 [](uint32_t e, const auto& x) { return e < x.first; });
      if (it != by_alloc_.begin() && (--it)->first == alloc_event) {
        return namer.CategoryOf(*dt_, dt_->blocks[it->second]);
      }
    }
    return namer.CategoryOf(stack, alloc_event);
  }
  SiteNamer namer;

 private:
  const DeviceTimeline* dt_;
  // (alloc event, index into dt_->blocks), by event: 8 bytes a lifetime, where a hash map took
  // about 40 with its growth (docs/BENCHMARKS.md, "issue 37, 2026-11-27 15:20").
  std::vector<std::pair<uint32_t, uint32_t>> by_alloc_;
  absl::flat_hash_map<uint64_t, uint32_t> ghost_;       // address -> index, older than the trace
  absl::flat_hash_map<uint64_t, uint32_t> pre_window_;  // address -> index, freed, never allocated
};

// The holders of a map, largest first (ties in key order).
template <typename Key>
std::vector<OomHolder> LargestFirst(std::map<Key, OomHolder>& m) {
  std::vector<OomHolder> v;
  for (auto& [key, h] : m) v.push_back(std::move(h));
  std::stable_sort(v.begin(), v.end(),
                   [](const OomHolder& a, const OomHolder& b) { return a.bytes > b.bytes; });
  return v;
}

// Holders of one capture, grouped by site and by category.
void NameHolders(const Snapshot& snap, const Capture& c,
                 const absl::flat_hash_map<uint64_t, std::pair<StackId, uint32_t>>& allocs,
                 const absl::flat_hash_map<uint64_t, StackId>& ghosts, int top, HolderNamer& names,
                 const CategoryNames& categories, OomExplanation& oom) {
  SiteNamer& namer = names.namer;
  std::map<std::string, OomHolder> by_site;
  // Keyed by name: equal bytes list in the names' order.
  std::map<std::string_view, OomHolder> by_category;
  for (const auto& [addr, bytes] : c.live) {
    std::string site;
    bool synthetic = true;
    Category category = Category::kUnknown;
    if (auto a = allocs.find(addr); a != allocs.end()) {
      site = namer.Label(a->second.first);
      synthetic = namer.IsSynthetic(a->second.first);
      category = names.CategoryOf(a->second.first, a->second.second, addr);
    } else if (auto g = ghosts.find(addr); g != ghosts.end()) {
      site = names.GhostLabel(g->second, addr);
      synthetic = namer.IsSynthetic(g->second);
      category = names.CategoryOf(g->second, kPreexistingEvent, addr);
    } else {
      site = names.PreWindowLabel(addr);  // only its free is in the trace
      category = names.PreWindowCategory(addr);
    }
    OomHolder& h = by_site[site];
    h.site = site;
    h.synthetic = synthetic;
    h.category = category;
    h.bytes += bytes;
    ++h.blocks;
    OomHolder& k = by_category[categories.Name(category)];
    k.category = category;
    k.bytes += bytes;
    ++k.blocks;
    oom.holders_bytes += bytes;
    ++oom.holders_blocks;
  }
  oom.holders = LargestFirst(by_site);
  if (top > 0 && oom.holders.size() > static_cast<size_t>(top)) oom.holders.resize(top);
  oom.categories = LargestFirst(by_category);
}

// What is live at `p` on the device, by category (requested bytes, as the timeline's peak).
std::vector<OomHolder> CategoriesLiveAt(const Snapshot& snap, const DeviceTimeline& dt,
                                        TimelinePoint p, const CategoryNames& categories) {
  SiteNamer namer(snap, categories);
  std::map<std::string_view, OomHolder> by_category;  // by name, as NameHolders
  for (const BlockLifetime& b : dt.blocks) {
    if (!b.LiveAt(p)) continue;
    const Category category = namer.CategoryOf(dt, b);
    OomHolder& k = by_category[categories.Name(category)];
    k.category = category;
    k.bytes += b.requested_size;
    ++k.blocks;
  }
  return LargestFirst(by_category);
}

// Turns the captures of one device into explanations, naming stacks with one forward pass over
// the trace (the latest alloc at each address not freed since).
void Explain(const Snapshot& snap, const DeviceJob& job, const DeviceTimeline* dt, int top,
             bool predicting, const CategoryNames& categories, std::vector<OomExplanation>& out) {
  if (job.captures.empty() && (predicting || job.dev.recorded_ooms == 0)) return;
  std::span<const TraceEvent> ev = snap.EventsOf(*job.trace);
  HolderNamer names(snap, dt, categories);
  SiteNamer& namer = names.namer;
  // Blocks alive at the end at an address the trace never allocates: alive since before it.
  absl::flat_hash_map<uint64_t, StackId> ghosts;
  for (const Segment& s : snap.segments) {
    if (s.device != job.trace->device) continue;
    for (const Block& b : snap.BlocksOf(s)) {
      if (b.is_active() &&
          std::binary_search(job.prepared.ghosts.begin(), job.prepared.ghosts.end(), b.address)) {
        ghosts[b.address] = b.stack;
      }
    }
  }
  int64_t start_time = kNoTime;
  for (const TraceEvent& e : ev) {
    if (e.has_time()) {
      start_time = e.time_us;
      break;
    }
  }
  absl::flat_hash_map<uint64_t, std::pair<StackId, uint32_t>> allocs;
  size_t next = 0;  // events [0, next) are in `allocs`
  const sim::AllocatorConfig& cfg = job.configs[0].config;
  for (const Capture& c : job.captures) {
    const bool pre = c.event == kPreexistingEvent;
    if (!pre) {
      for (; next < c.event && next < ev.size(); ++next) {
        if (ev[next].action == Action::kAlloc) {
          allocs[ev[next].addr] = {ev[next].stack, static_cast<uint32_t>(next)};
        } else if (ev[next].action == Action::kFreeCompleted) {
          // No block of the replay stands for a freed one (a pending free is not a holder):
          // only the live allocations are kept, not one entry per address the trace used.
          allocs.erase(ev[next].addr);
        }
      }
    }
    OomExplanation o;
    o.device = job.dev.device;
    o.recorded = c.oom_entry;
    o.reproduced = true;
    o.event = c.event;
    o.start_time_us = start_time;
    StackId stack;
    if (!pre && c.event < ev.size()) {
      o.time_us = ev[c.event].time_us;
      stack = ev[c.event].stack;
      if (c.oom_entry) o.recorded_device_free = static_cast<int64_t>(ev[c.event].addr);
    } else if (auto g = ghosts.find(c.addr); g != ghosts.end()) {
      stack = g->second;
    }
    o.site = namer.Label(stack, pre);
    o.site_synthetic = namer.IsSynthetic(stack);
    o.category = names.CategoryOf(stack, c.event, c.addr);
    o.requested = c.info.requested;
    o.rounded = c.info.rounded;
    o.segment_bytes = c.info.segment_size;
    o.is_small = c.info.is_small;
    o.stream = c.info.stream;
    o.capacity = job.dev.capacity;
    o.device_free = c.info.device_free;
    o.reserved = c.info.reserved;
    o.allocated = c.info.allocated;
    o.reserved_before = c.info.reserved_before;
    o.released_bytes = c.info.released_bytes;
    o.released_segments = c.info.released_segments;
    o.free = c.free;
    NameHolders(snap, c, allocs, ghosts, top, names, categories, o);
    JudgeOom(cfg, o);
    out.push_back(std::move(o));
  }
  // Recorded oom entries the replay served: their own figures only.
  for (size_t i = 0; i < ev.size() && !predicting && job.dev.recorded_ooms > 0; ++i) {
    if (ev[i].action != Action::kOom) continue;
    bool seen = std::any_of(job.captures.begin(), job.captures.end(),
                            [&](const Capture& c) { return c.event == i; });
    if (seen || predicting) continue;
    OomExplanation o;
    o.device = job.dev.device;
    o.recorded = true;
    o.reproduced = false;
    o.event = static_cast<uint32_t>(i);
    o.time_us = ev[i].time_us;
    o.start_time_us = start_time;
    o.rounded = ev[i].size;
    o.requested = ev[i].size;
    o.stream = snap.StreamOf(ev[i]);
    o.capacity = job.dev.capacity;
    o.recorded_device_free = static_cast<int64_t>(ev[i].addr);
    o.device_free = *o.recorded_device_free;
    o.site = namer.Label(ev[i].stack);
    o.site_synthetic = namer.IsSynthetic(ev[i].stack);
    o.category = namer.CategoryOf(ev[i].stack, static_cast<uint32_t>(i));
    JudgeOom(cfg, o);
    out.push_back(std::move(o));
  }
}

// The share of the batch at which the live peak, its batch-sized part scaled and with the
// overhead the recorded settings' replay on the capacity had (reserved over requested at its
// peak), comes to the capacity: where LargestBatchShare asks first. The peak's moment is taken to
// stay where it is; the halving checks the prediction.
std::optional<double> PredictedBatchShare(const DeviceJob& job, const DeviceTimeline& dt,
                                          const std::vector<uint8_t>& scaled) {
  int64_t scaled_at_peak = 0;
  for (const BlockLifetime& lt : dt.blocks) {
    std::optional<uint32_t> e = lt.alloc_event.index();
    if (e && *e < scaled.size() && scaled[*e] && lt.LiveAt(dt.peak_event)) {
      scaled_at_peak += lt.requested_size;
    }
  }
  const ConfigResult& on_card = job.results[0];
  if (scaled_at_peak <= 0 || on_card.peak_requested <= 0 || on_card.peak_reserved <= 0) {
    return std::nullopt;
  }
  const double overhead =
      static_cast<double>(on_card.peak_reserved) / static_cast<double>(on_card.peak_requested);
  const double fixed = static_cast<double>(dt.peak_requested - scaled_at_peak);
  return (static_cast<double>(job.dev.capacity) / overhead - fixed) /
         static_cast<double>(scaled_at_peak);
}

// The largest share of the batch-sized allocations (`scaled[e]` for device-local event e) with
// which the recorded settings replay the whole trace on the capacity, bisected to 1/128; 0 when
// even none of them does not fit. The frees need no change: the simulator frees by address.
// `hint`: where to ask first (PredictedBatchShare).
double LargestBatchShare(const DeviceJob& job, const std::vector<uint8_t>& scaled,
                         std::optional<double> hint, FitSearchStats& stats) {
  // The scaled mallocs' sizes at each share, replayed over the shared trace (no copy of it: the
  // settings' searches read it beside this one).
  const PreparedTrace& p = job.prepared;
  auto is_scaled = [&](const Op& op) {
    return IsMalloc(op.kind) && op.event < scaled.size() && scaled[op.event];
  };
  std::vector<std::pair<size_t, int64_t>> resized;
  // Reserved exactly: most mallocs grow with the batch, and the copies a growing list leaves
  // behind would stay resident beside it (KeepFreedMemory).
  resized.reserve(static_cast<size_t>(std::count_if(p.ops.begin(), p.ops.end(), is_scaled)));
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (is_scaled(p.ops[i])) resized.emplace_back(i, p.ops[i].size);
  }
  int64_t last_ops = 0;  // what the latest share asked about cost
  auto fits = [&](double share) {
    for (auto& [i, size] : resized) {
      const auto recorded = static_cast<double>(p.ops[i].size);
      size = std::max<int64_t>(1, static_cast<int64_t>(recorded * share));
    }
    RunOptions ro = job.run;
    ro.stop_at_first_oom = true;
    ro.on_oom = nullptr;
    ro.resized = resized;
    const RunOutput out = RunConfig(p, job.configs[0], ro);
    ++stats.replays;
    stats.ops += static_cast<int64_t>(out.ops_applied);
    last_ops = static_cast<int64_t>(out.ops_applied);
    if (out.result.ooms.empty()) {
      ++stats.fitted;
      stats.fitted_ops += static_cast<int64_t>(out.ops_applied);
    }
    return out.result.ooms.empty();
  };
  // The halving of the share between 0 (if even it does not fit, the answer is 0) and 1 (the
  // recorded run, which does not fit) in steps of 1/128, as a search for the smallest x = 128 -
  // 128 share that fits (fit_search.h: the halving asks about x = 128 first, then the same
  // shares k/128 as a halving of the share would, each exact in a double), asked first around
  // the predicted share. A replay that fails is the cheap answer here too (it stops early).
  constexpr int64_t kSteps = 128;
  const Halving h{.lo = 0 /* share 1 */, .hi = kSteps /* share 0 */, .step = 1, .max_growths = 0};
  std::optional<int64_t> at;
  if (hint && std::isfinite(*hint)) {
    const double x = std::ceil(static_cast<double>(kSteps) * (1.0 - *hint));
    at = static_cast<int64_t>(std::clamp(x, 1.0, static_cast<double>(kSteps)));
  }
  HintStats hint_stats;
  const HalvingResult r = HintedHalving(
      h, at, kFitHintMaxUp,
      [&](int64_t x) { return fits(static_cast<double>(kSteps - x) / kSteps); },
      [&] { return last_ops * 4 <= static_cast<int64_t>(p.ops.size()); }, &hint_stats);
  stats.hinted += hint_stats.landed ? 1 : 0;
  return r.found ? static_cast<double>(kSteps - r.hi) / kSteps : 0.0;
}

// The recorded settings' replay with `stale`'s frees moved before its forward pass: what
// zero_grad(set_to_none=True) before the forward would do. The frees are the program's own (the
// trace frees those blocks later), so nothing else changes. The operations are reordered in
// place and put back afterwards: a copy of them would be the command's peak memory (an operation
// list as large as the trace's; docs/BENCHMARKS.md, "issue 37, 2026-11-27 15:20").
ConfigResult ReplayZeroGradEarlier(DeviceJob& job, const DeviceTimeline& dt,
                                   const StaleGradients& stale) {
  std::set<uint32_t> free_events;
  for (uint32_t i : stale.lifetimes) {
    const BlockLifetime& lt = dt.blocks[i];
    for (LocalEvent e : {lt.free_requested_event, lt.free_completed_event}) {
      if (e.seen()) free_events.insert(*e.index());
    }
  }
  std::vector<Op>& ops = job.prepared.ops;  // in trace order: `event` strictly ascends
  auto moved_op = [&](const Op& op) {
    const bool is_free = op.kind == OpKind::kFree || op.kind == OpKind::kFreeRequested ||
                         op.kind == OpKind::kFreeCompleted;
    return is_free && free_events.count(op.event) > 0;
  };
  std::vector<Op> moved;
  for (const Op& op : ops) {
    if (moved_op(op)) moved.push_back(op);
  }
  const size_t n = ops.size();
  // The moved frees go just before the first other operation of the forward pass (at the end
  // when there is none), the rest keep their order.
  ops.erase(std::remove_if(ops.begin(), ops.end(), moved_op), ops.end());
  const auto at = std::find_if(ops.begin(), ops.end(), [&](const Op& op) {
    return op.event != kPreexisting && op.event >= stale.forward_start;
  });
  const size_t pos = static_cast<size_t>(at - ops.begin());
  ops.insert(at, moved.begin(), moved.end());  // within the capacity: no reallocation
  RunOptions ro = job.run;
  ro.stop_at_first_oom = true;
  ro.on_oom = nullptr;
  ConfigResult result = RunConfig(job.prepared, job.configs[0], ro).result;
  // Back to trace order: take the moved block out, then merge the two ascending runs from the
  // back, in place.
  ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(pos),
            ops.begin() + static_cast<std::ptrdiff_t>(pos + moved.size()));
  size_t rest = ops.size();
  ops.resize(n);
  size_t m = moved.size();
  for (size_t out = n; m > 0;) {
    if (rest > 0 && ops[rest - 1].event > moved[m - 1].event) {
      ops[--out] = ops[--rest];
    } else {
      ops[--out] = moved[--m];
    }
  }
  return result;
}

// No oom entry and no --device-memory: nothing to replay against, but the dump itself shows what
// held the memory (a snapshot dumped after a caught OOM whose trace lost the failed malloc).
absl::Status NoCapacityError(const Snapshot& snap, const OomOptions& options,
                             const std::vector<OomReport::RejectedCapacity>& rejected) {
  int64_t reserved = 0;
  int64_t allocated = 0;
  int64_t largest_free = 0;
  SiteNamer namer(snap, options.categories);
  std::map<std::string, int64_t> by_site;
  for (const Segment& seg : snap.segments) {
    if (options.device && seg.device != *options.device) continue;
    reserved += seg.total_size;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (b.state == BlockState::kActiveAllocated) {
        allocated += b.size;
        by_site[namer.Label(b.stack)] += b.size;
      } else if (b.state == BlockState::kInactive) {
        largest_free = std::max(largest_free, b.size);
      }
    }
  }
  std::vector<std::pair<std::string, int64_t>> sites(by_site.begin(), by_site.end());
  std::stable_sort(sites.begin(), sites.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string holders;
  for (size_t i = 0; i < sites.size() && i < 3; ++i) {
    absl::StrAppend(&holders, i == 0 ? "" : ", ", sites[i].first, " ",
                    FormatBytes(sites[i].second));
  }
  std::string why = snap.events.empty()
                        ? "the snapshot has no trace, so no oom entry gives the card"
                        : "no oom entry in the trace";
  if (!rejected.empty()) {
    why = absl::StrCat("the trace's oom entry implies ", FormatBytes(rejected.front().implied),
                       " of device memory (device_free + reserved), which cannot be right (",
                       rejected.front().why, "),");
  }
  std::string text = absl::StrCat(why,
                                  " and no --device-memory, so the device's capacity is unknown "
                                  "and there is nothing to replay against. The snapshot ends with ",
                                  FormatBytes(reserved), " reserved, ", FormatBytes(allocated),
                                  " of it allocated");
  if (reserved > 0) {
    absl::StrAppend(&text, " and ", FormatBytes(reserved - allocated),
                    " cached free (largest block ", FormatBytes(largest_free), ")");
  }
  if (!holders.empty()) absl::StrAppend(&text, "; the largest holders then: ", holders);
  absl::StrAppend(&text,
                  ". Give the GPU's memory, e.g. --device-memory 24GiB, to ask whether this run "
                  "fits and where it would fail");
  return absl::FailedPreconditionError(text);
}

// The candidate that fits with the lowest peak reserved, how many fit, and the setting that fits
// on the least memory (SmallestFitIndex, the rule of every fit answer).
void ChooseSettings(OomDevice& d) {
  for (size_t i = 1; i < d.remedies.size(); ++i) {
    const OomRemedy& m = d.remedies[i];
    if (!m.fits) continue;
    ++d.fitting_candidates;
    if (d.best_fitting < 0 || m.peak_reserved < d.remedies[d.best_fitting].peak_reserved) {
      d.best_fitting = static_cast<int>(i);
    }
  }
  std::vector<int64_t> fits_on;
  for (const OomRemedy& m : d.remedies) fits_on.push_back(m.fits_on);
  d.smallest_fit = SmallestFitIndex(fits_on);
}

// The answer of a device with a failure (its first, ooms[first]); docs/oom.md.
OomAnswer Answer(const OomReport& r, const OomDevice& d, size_t first) {
  const OomExplanation& o = r.ooms[first];
  OomAnswer a;
  a.first = first;
  // A run whose own live peak exceeds the capacity fails on it whatever the allocator does.
  a.peak_too_big = r.device_memory.has_value() && d.trace_peak_live > d.capacity;
  a.verdict = o.verdict;
  if (a.peak_too_big) {
    a.excess = d.trace_peak_live - d.capacity;
  } else if (o.verdict == OomVerdict::kDemand) {
    a.excess = o.shortfall;
  } else if (o.verdict == OomVerdict::kNotReproduced) {
    return a;  // only the recorded figures are known
  }
  if (d.best_fitting >= 0) return a;  // a setting fits: nothing to cut
  if (!a.peak_too_big && o.rounded > d.capacity) {
    a.cut = OomCut::kRequest;  // no cut of the live memory makes room for it
    return a;
  }
  if (a.excess > 0) {
    a.cut_bytes = a.excess;
  } else if (d.smallest_fit >= 0 && d.remedies[d.smallest_fit].fits_on > d.capacity) {
    a.cut_bytes = d.remedies[d.smallest_fit].fits_on - d.capacity;
    a.cut_approximate = true;
  } else {
    return a;
  }
  a.cut = OomCut::kLive;
  const std::vector<OomHolder>& kinds = a.peak_too_big ? d.peak_categories : o.categories;
  for (const OomHolder& k : kinds) {
    if (!HasLever(k.category)) continue;
    a.cut_levered_bytes += k.bytes;
  }
  int64_t taken = 0;
  for (const OomHolder& k : kinds) {  // largest first
    if (taken >= a.cut_bytes) break;
    if (!HasLever(k.category)) continue;
    a.cut_kinds.push_back(k);
    taken += k.bytes;
  }
  a.cut_site = !a.peak_too_big && !o.holders.empty();
  return a;
}

}  // namespace

bool HasLever(Category category) {
  return static_cast<int>(category) < kNumCategories && category != Category::kUnknown;
}

std::string_view OomVerdictName(OomVerdict v) {
  switch (v) {
    case OomVerdict::kDemand:
      return "demand";
    case OomVerdict::kFragmentation:
      return "fragmentation";
    case OomVerdict::kCacheNotReleased:
      return "cache_not_released";
    case OomVerdict::kNotReproduced:
      return "not_reproduced";
  }
  return "?";
}

std::vector<std::string> DefaultOomCandidates(const sim::AllocatorConfig& recorded) {
  std::vector<std::string> all = {
      recorded.expandable_segments ? "expandable_segments:False" : "expandable_segments:True",
      "max_split_size_mb:128",
      "max_split_size_mb:256",
      "max_split_size_mb:512",
      "garbage_collection_threshold:0.8,per_process_memory_fraction:0.99",
      "roundup_power2_divisions:4",
  };
  std::vector<std::string> out;
  for (std::string& conf : all) {
    absl::StatusOr<sim::AllocatorConfig> c = sim::ApplyAllocatorConf(recorded, conf);
    if (c.ok() && !(*c == recorded)) out.push_back(std::move(conf));
  }
  return out;
}

void JudgeOom(const sim::AllocatorConfig& config, OomExplanation& o) {
  int64_t capacity = o.capacity;
  if (config.memory_fraction) {
    capacity = std::min<int64_t>(
        capacity, static_cast<int64_t>(*config.memory_fraction * static_cast<double>(capacity)));
  }
  o.usable_capacity = capacity;
  o.max_split_size = config.max_split_size;
  o.largest_free_block = o.free.pool_largest;
  o.free_bytes = std::max<int64_t>(0, capacity - o.allocated);
  o.shortfall = std::max<int64_t>(0, o.allocated + o.rounded - capacity);
  if (!o.reproduced) {
    o.verdict = OomVerdict::kNotReproduced;
  } else if (o.shortfall > 0) {
    o.verdict = OomVerdict::kDemand;
  } else if (o.free.other_streams_largest >= o.rounded || o.free.oversize_refused > 0) {
    // A cached block would hold it, on another stream or refused by the oversize rules.
    o.verdict = OomVerdict::kCacheNotReleased;
  } else {
    o.verdict = OomVerdict::kFragmentation;
  }
}

absl::StatusOr<OomReport> ExplainOoms(const Snapshot& snap, const OomOptions& options) {
  OomReport report;
  report.file = snap.source.path;
  report.categories = options.categories;
  report.device_memory = options.device_memory;
  const sim::AllocatorConfig recorded = sim::ConfigFromSettings(snap.settings);
  std::vector<ReplayConfig> configs = {{"recorded", recorded}};
  const std::vector<std::string> confs =
      options.candidates.empty() ? DefaultOomCandidates(recorded) : options.candidates;
  RETURN_IF_ERROR(AppendConfs(recorded, confs, configs));

  std::vector<DeviceJob> jobs;
  bool any_trace = false;
  const std::vector<DeviceTrace> traces = FitTraces(snap);
  for (const DeviceTrace& t : traces) {
    if (options.device && t.device != *options.device) continue;
    any_trace = true;
    std::optional<int64_t> capacity = options.device_memory;
    CapacitySource source = CapacitySource::kFlag;
    if (!capacity) {
      const ImpliedCapacityResult implied = ImpliedCapacity(snap, t);
      capacity = implied.bytes;
      source = CapacitySource::kOomEntry;
      if (implied.rejected) {
        report.rejected_capacities.push_back({t.device, *implied.rejected, implied.why});
      }
    }
    if (!capacity) {
      report.devices_without_capacity.push_back(t.device);
      continue;
    }
    DeviceJob& job = jobs.emplace_back();
    job.trace = &t;
    job.dev.device = t.device;
    job.dev.capacity = *capacity;
    job.dev.capacity_source = source;
    job.dev.events = t.size();
    for (const TraceEvent& e : snap.EventsOf(t)) job.dev.recorded_ooms += e.action == Action::kOom;
  }
  if (!any_trace) {
    if (options.device) {
      return absl::FailedPreconditionError(
          absl::StrCat("device ", *options.device, " has no trace events"));
    }
    return absl::FailedPreconditionError(
        "the snapshot has no trace (record with torch.cuda.memory._record_memory_history): "
        "there is nothing to replay");
  }
  if (jobs.empty()) return NoCapacityError(snap, options, report.rejected_capacities);
  {  // what kind of run each device's stacks show: which levers apply
    Attribution attribution(snap, nullptr);
    const std::vector<WorkloadEvidence> workloads = DetectWorkloads(attribution);
    absl::flat_hash_map<int32_t, const WorkloadEvidence*> by_device;
    for (const WorkloadEvidence& w : workloads) by_device[w.device] = &w;
    for (DeviceJob& job : jobs) {
      if (auto it = by_device.find(job.dev.device); it != by_device.end()) {
        job.dev.workload = *it->second;
      }
    }
  }

  // Prepare every device (config independent), then run (device, setting) pairs in parallel,
  // with the timeline's recorded peaks as one more job.
  std::optional<ScopedTimer> phase;
  phase.emplace("oom: prepare");
  // Also after the operations were freed for the lifetimes (below): the same preparation again.
  auto prepare = [&](DeviceJob& job) {
    job.prepared = PrepareTrace(snap, *job.trace, options.empty_cache, recorded, true);
  };
  for (DeviceJob& job : jobs) {
    prepare(job);
    job.dev.preexisting_blocks = job.prepared.preexisting_blocks;
    job.dev.preexisting_bytes = job.prepared.preexisting_bytes;
    job.fit_run = FitRunOptions(snap, *job.trace, job.prepared, options.start);
    job.dev.fit_warm = job.fit_run.warm;
    // The replays on the capacity start as the searches do: one start for every answer.
    job.dev.warm_start = job.fit_run.warm;
    job.configs = configs;
    job.results.resize(configs.size());
    job.run.capacity = job.dev.capacity;
    job.run.events = snap.EventsOf(*job.trace);
    job.run.warm = job.dev.warm_start;
    // On a capacity the user gave, the first failure is where the run would stop.
    job.run.stop_at_first_oom = options.device_memory.has_value();
  }
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t d = 0; d < jobs.size(); ++d) {
    DeviceJob& job = jobs[d];
    job.same_as = ReplayStandIns(job.prepared, configs);
    for (size_t k = 0; k < configs.size(); ++k) {
      if (job.same_as[k] == k) runs.emplace_back(d, k);
    }
  }
  absl::StatusOr<Timeline> own_timeline = absl::UnknownError("not built");
  const bool build_timeline = options.timeline == nullptr;
  phase.emplace(absl::StrCat("oom: ", runs.size(), " replays"));
  ParallelFor(
      runs.size() + (build_timeline ? 1 : 0),
      [&](size_t i) {
        if (i == runs.size()) {
          TimelineOptions to;
          to.keep = KeepLifetimes::kAll;  // the holders' categories read their lifetimes
          to.curve = false;
          to.device = options.device;
          own_timeline = ReconstructTimeline(snap, to);
          return;
        }
        auto [d, k] = runs[i];
        DeviceJob& job = jobs[d];
        RunOptions ro = job.run;
        if (k == 0) {
          ro.on_oom = [&job](const Op& op, const sim::CachingAllocator& alloc,
                             const LiveBlocks& live) {
            if (job.captures.size() >= kMaxExplainedOoms) {
              ++job.dropped_captures;
              return;
            }
            Capture& c = job.captures.emplace_back();
            c.event = op.event;
            c.addr = op.addr;
            c.oom_entry = op.kind == OpKind::kOomMalloc;
            c.info = alloc.last_oom();
            c.free = alloc.DescribeFreeSpace(c.info.rounded, c.info.stream, c.info.is_small);
            c.live.reserve(live.size());
            live.ForEach([&](uint64_t addr, sim::BlockRef ref) {
              if (!alloc.IsPendingFree(ref)) c.live.emplace_back(addr, alloc.BlockSize(ref));
            });
            std::sort(c.live.begin(), c.live.end());
          };
        } else {
          ro.stop_at_first_oom = true;  // a candidate only has to fit or not
        }
        job.results[k] = RunConfig(job.prepared, job.configs[k], ro).result;
      },
      static_cast<size_t>(std::max(0, options.max_threads)));

  // The trace's live peak (the search's floor) comes from the timeline.
  const Timeline* timeline = options.timeline != nullptr ? options.timeline
                             : own_timeline.ok()         ? &*own_timeline
                                                         : nullptr;
  for (DeviceJob& job : jobs) {
    const DeviceTimeline* dt = timeline != nullptr ? timeline->Find(job.dev.device) : nullptr;
    if (dt != nullptr) job.dev.trace_peak_live = dt->peak_requested;
  }
  // Where the recorded settings fail, how much memory each setting would have needed.
  std::vector<size_t> searches;  // the device jobs whose fits are searched
  for (size_t d = 0; d < jobs.size(); ++d) {
    if (!options.search_fits || jobs[d].results[0].ooms.empty()) continue;
    searches.push_back(d);
  }
  // The lifetimes, when the given timeline kept none and they are to be built where they are
  // read (OomOptions::build_lifetimes): every device's, with the given timeline's device filter.
  auto build_lifetimes = [&]() -> std::optional<Timeline> {
    TimelineOptions to;
    to.keep = KeepLifetimes::kAll;
    to.curve = false;
    to.device = options.device;
    absl::StatusOr<Timeline> tl = ReconstructTimeline(snap, to);
    if (!tl.ok()) return std::nullopt;  // explained as without lifetimes
    return *std::move(tl);
  };
  // The replays' operations (32 bytes each) are freed before the lifetimes (64 bytes each) are
  // built, so the two are never held together (docs/oom.md, "Memory"); prepared again after.
  bool ops_freed = false;
  auto with_lifetimes = [&](const DeviceTimeline* dt, std::optional<Timeline>& built) {
    if (dt == nullptr || dt->kept == KeepLifetimes::kAll || !options.build_lifetimes) return dt;
    if (!built) {
      for (DeviceJob& job : jobs) std::vector<Op>().swap(job.prepared.ops);
      ops_freed = true;
      built = build_lifetimes();
    }
    const DeviceTimeline* full = built ? built->Find(dt->device) : nullptr;
    return full != nullptr ? full : dt;
  };
  // Where no setting fits and the lifetimes say which allocations grow with the batch: how much
  // smaller they would have to be, by replay. Its halving is one replay after another, so it
  // runs beside the settings' searches, on its own core, rather than after them.
  std::vector<std::pair<size_t, std::vector<uint8_t>>> batch_searches;  // device job, scaled
  std::vector<std::optional<double>> batch_hints;                       // where each asks first
  std::optional<Timeline> batch_lifetimes;  // dropped before the searches
  for (size_t d = 0; d < jobs.size(); ++d) {
    DeviceJob& job = jobs[d];
    const DeviceTimeline* dt = timeline != nullptr ? timeline->Find(job.dev.device) : nullptr;
    if (!options.batch_search || dt == nullptr) continue;
    bool any_fits = false;
    for (size_t k = 0; k < job.configs.size(); ++k) {
      any_fits |= job.results[job.same_as[k]].ooms.empty();
    }
    if (any_fits) continue;
    dt = with_lifetimes(dt, batch_lifetimes);
    if (dt->kept != KeepLifetimes::kAll) continue;
    SiteNamer namer(snap, options.categories);
    std::vector<uint8_t> scaled(job.trace->size(), 0);
    bool any = false;
    for (const BlockLifetime& lt : dt->blocks) {
      std::optional<uint32_t> e = lt.alloc_event.index();
      if (!e || *e >= scaled.size() || !GrowsWithBatch(namer.CategoryOf(*dt, lt))) continue;
      scaled[*e] = 1;
      any = true;
    }
    std::span<const TraceEvent> ev = snap.EventsOf(*job.trace);
    for (size_t i = 0; i < ev.size(); ++i) {  // a failed request has no lifetime: its stack says
      if (ev[i].action == Action::kOom &&
          GrowsWithBatch(namer.CategoryOf(ev[i].stack, static_cast<uint32_t>(i)))) {
        scaled[i] = 1;
      }
    }
    if (!any) continue;
    batch_hints.push_back(PredictedBatchShare(job, *dt, scaled));
    batch_searches.emplace_back(d, std::move(scaled));
  }
  batch_lifetimes.reset();
  if (ops_freed) {  // the searches replay them
    for (DeviceJob& job : jobs) prepare(job);
    ops_freed = false;
  }
  std::vector<FitJob> fit_jobs(searches.size());
  if (!searches.empty() || !batch_searches.empty()) {
    phase.emplace(absl::StrCat("oom: smallest fitting memory on ", searches.size(),
                               " devices, batch share for ", batch_searches.size(), " devices"));
    for (size_t i = 0; i < searches.size(); ++i) {
      DeviceJob& job = jobs[searches[i]];
      fit_jobs[i].prepared = &job.prepared;
      fit_jobs[i].run = job.fit_run;
      fit_jobs[i].configs = &job.configs;
      fit_jobs[i].same_as = &job.same_as;
    }
    // The batch shares' searches (about eight replays from the start each) run beside the
    // settings', on the same cores.
    std::vector<FitSearchStats> batch_stats(batch_searches.size());
    std::vector<std::function<void()>> beside;
    for (size_t b = 0; b < batch_searches.size(); ++b) {
      beside.emplace_back([&, b] {
        DeviceJob& job = jobs[batch_searches[b].first];
        job.dev.batch_share_fits =
            LargestBatchShare(job, batch_searches[b].second, batch_hints[b], batch_stats[b]);
      });
    }
    SearchSmallestFits(fit_jobs, beside, options.max_threads, "oom");
    if (!batch_searches.empty()) ScopedTimer note(FitSearchNote("oom batch share", batch_stats));
  }

  phase.emplace("oom: explain");
  // The lifetimes the explanation reads, built now when the given timeline kept none (the
  // operations are prepared again only for the zero_grad lever's replay).
  std::optional<Timeline> explain_lifetimes;
  for (size_t d = 0; d < jobs.size(); ++d) {
    DeviceJob& job = jobs[d];
    const DeviceTimeline* dt = with_lifetimes(
        timeline != nullptr ? timeline->Find(job.dev.device) : nullptr, explain_lifetimes);
    if (dt != nullptr) {
      job.dev.trace_peak_live = dt->peak_requested;
      job.dev.trace_peak_event = dt->peak_event;
      if (!dt->peak_event.is_start()) job.dev.trace_peak_time_us = dt->TimeOf(snap, dt->peak_event);
      for (const TraceEvent& e : snap.EventsOf(*job.trace)) {
        if (e.has_time()) {
          job.dev.start_time_us = e.time_us;
          break;
        }
      }
      if (dt->kept == KeepLifetimes::kAll) {
        job.dev.peak_categories = CategoriesLiveAt(snap, *dt, dt->peak_event, options.categories);
        // Last step's gradients alive in the peak's forward pass: replay zero_grad before it.
        GroupOptions group;
        group.categories = options.categories;
        auto context = GroupContext::Create(snap, group);
        if (context.ok()) {
          if (auto stale = FindStaleGradients(**context, *dt, dt->peak_event)) {
            if (ops_freed) {  // its operations were freed for the lifetimes
              prepare(job);
            }
            const ConfigResult r = ReplayZeroGradEarlier(job, *dt, *stale);
            job.dev.zero_grad =
                ZeroGradLever{stale->bytes,         stale->blocks,  stale->freed_by_zero_grad,
                              stale->forward_start, r.ooms.empty(), r.peak_reserved};
          }
        }
      }
    }
    for (size_t k = 0; k < job.configs.size(); ++k) {
      const ConfigResult& r = job.results[job.same_as[k]];
      OomRemedy m;
      if (job.same_as[k] != k) m.same_as = job.configs[job.same_as[k]].label;
      for (size_t i = 0; i < searches.size(); ++i) {
        if (searches[i] == d) m.fits_on = fit_jobs[i].fits_on[k];
      }
      m.conf = job.configs[k].label;
      m.settings = sim::FormatAllocatorConf(job.configs[k].config);
      m.fits = r.ooms.empty();
      m.peak_reserved = r.peak_reserved;
      if (m.fits) m.headroom = job.dev.capacity - r.peak_reserved;
      if (!r.ooms.empty()) {
        m.fails_at = r.ooms[0].event;
        m.fail_requested = r.ooms[0].requested;
      }
      job.dev.remedies.push_back(std::move(m));
    }
    Explain(snap, job, dt != nullptr && dt->kept == KeepLifetimes::kAll ? dt : nullptr,
            options.top_holders, options.device_memory.has_value(), options.categories,
            report.ooms);
    job.dev.unexplained_ooms = job.dropped_captures;
    report.devices.push_back(std::move(job.dev));
  }
  std::stable_sort(report.ooms.begin(), report.ooms.end(),
                   [](const OomExplanation& a, const OomExplanation& b) {
                     if (a.device != b.device) return a.device < b.device;
                     // Failures before the trace (kPreexistingEvent) come first.
                     auto key = [](const OomExplanation& o) {
                       return o.event == kPreexistingEvent ? -1 : static_cast<int64_t>(o.event);
                     };
                     return key(a) < key(b);
                   });
  // The answer of each device, from its settings and its first failure.
  for (OomDevice& d : report.devices) {
    ChooseSettings(d);
    for (size_t i = 0; i < report.ooms.size(); ++i) {
      if (report.ooms[i].device != d.device) continue;
      d.answer = Answer(report, d, i);
      break;
    }
  }
  return report;
}

}  // namespace memsnap::analysis
