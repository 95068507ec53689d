// Memory older than the trace that the trace never saw, by what the trace shows of it
// (docs/attribution.md, "Blocks from before the trace"): an optimizer step that reads gradients the
// trace never made, a step that makes no state of its own.
//
// One pass over the device's events, on the first question about such memory: the decision for a
// block depends on every block older than the trace (how many of each size there are) and on the
// whole trace (whether a gradient or a state is ever made), not on the events around it.
#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "pre_trace_internal.h"

namespace memsnap::analysis {

namespace {

// Whether a frame's function is an optimizer's step or the code it runs (torch.optim's
// `_init_group`, `_single_tensor_*`, `_multi_tensor_*`, the fused and foreach kernels): what
// tells a step from an optimizer's constructor, which is the optimizer phase too.
bool StepFunction(std::string_view name) {
  return name == "step" || name.starts_with("_init_group") || name.starts_with("_single_tensor_") ||
         name.starts_with("_multi_tensor_") || name.find("_fused_") != std::string_view::npos ||
         name.find("_foreach_") != std::string_view::npos;
}

enum class Made : uint8_t {
  kOther,
  kBackward,      // in a backward run not ended yet
  kGradient,      // AccumulateGrad's, or kept after its backward run
  kOptimizerRun,  // in the optimizer run being read
};

struct Live {
  int64_t size = 0;
  uint32_t event = 0;
  Made made = Made::kOther;
  int64_t site = -1;  // kOptimizerRun: its stack (StackId), one site of the step
};

// One optimizer run: its allocations per (site, size), and how many of them it freed.
struct OptimizerRun {
  uint32_t start = 0;
  bool step = false;  // shows an optimizer step (StepFunction)
  std::map<std::pair<int64_t, int64_t>, int64_t> made;
  std::map<int64_t, int64_t> freed;  // by site
};

}  // namespace

std::string_view PreTraceEvidenceRow(CategoryRule rule) {
  switch (rule) {
    case CategoryRule::kPreTraceGradient:
      return kBeforeRecordingGradientRow;
    case CategoryRule::kPreTraceOptimizerState:
      return kBeforeRecordingOptimizerRow;
    default:
      return {};
  }
}

std::optional<CategoryVerdict> LifetimeCategorizer::PreTraceVerdict(const BlockLifetime& lt) {
  if (!pre_trace_) {
    pre_trace_ = std::make_unique<PreTrace>();
    PreTrace& out = *pre_trace_;
    const Snapshot& snap = attr_.snapshot();
    // Whether an optimizer run's stack shows a step: once per stack. A stack is one site of the
    // step (one line, one operator), run once per parameter.
    absl::flat_hash_map<uint32_t, bool> shows_step;
    auto step_stack = [&](StackId stack) {
      auto [it, inserted] = shows_step.try_emplace(stack.v, false);
      if (inserted) {
        for (FrameId f : snap.stacks.Get(stack)) {
          it->second = it->second || StepFunction(snap.strings.Get(snap.frames.Get(f).name));
        }
      }
      return it->second;
    };

    absl::flat_hash_map<uint64_t, Live> live;         // allocated in the trace, not freed yet
    absl::flat_hash_set<uint64_t> requested;          // free requested, not completed
    std::vector<std::pair<uint32_t, int64_t>> grads;  // (alloc event, size) of gradients made
    // Pre-window frees, other than an optimizer's or backward's (a state replaced, a saved
    // tensor released), by (event, size): blocks that may be the gradients a step read.
    std::vector<std::pair<uint32_t, int64_t>> other_frees;
    Phase run_phase = Phase::kNone;
    OptimizerRun run, first_step;
    bool have_step = false;

    // The addresses the current backward or optimizer run allocated (some freed since).
    std::vector<uint64_t> run_addrs;
    // The backward run ends: what it made and still holds is a gradient.
    auto end_backward = [&]() {
      for (uint64_t a : run_addrs) {
        auto it = live.find(a);
        if (it == live.end() || it->second.made != Made::kBackward) continue;
        it->second.made = Made::kGradient;
        grads.emplace_back(it->second.event, it->second.size);
      }
      run_addrs.clear();
    };
    // The optimizer run ends: the first that shows a step is the step read below.
    auto end_optimizer = [&]() {
      for (uint64_t a : run_addrs) {
        auto it = live.find(a);
        if (it != live.end() && it->second.made == Made::kOptimizerRun) {
          it->second.made = Made::kOther;
        }
      }
      run_addrs.clear();
      if (run.step && !have_step) {
        first_step = std::move(run);
        have_step = true;
      }
      run = OptimizerRun();
    };
    for (uint32_t e = 0; e < dt_.num_events; ++e) {
      const TraceEvent& ev = snap.events[dt_.event_begin + e];
      if (ev.action == Action::kAlloc) {
        Phase p = attr_.PhaseOf(ev.stack);
        if (p != Phase::kNone && p != run_phase) {
          if (run_phase == Phase::kBackward) end_backward();
          if (run_phase == Phase::kOptimizer) end_optimizer();
          run_phase = p;
          if (p == Phase::kOptimizer) run.start = e;
        }
        if (p == Phase::kNone) p = run_phase;  // no stack: the run it falls in
        Live l{ev.size, e, Made::kOther, -1};
        // (Site() only for backward stacks, AccumulateGrad's phase: naming every stack of a
        // trace costs more than reading it, issue 54.)
        if (p == Phase::kBackward && attr_.Site(ev.stack).accumulate_grad) {
          l.made = Made::kGradient;
          grads.emplace_back(e, ev.size);
        } else if (p == Phase::kBackward) {
          l.made = Made::kBackward;
          run_addrs.push_back(ev.addr);
        } else if (p == Phase::kOptimizer && run_phase == Phase::kOptimizer && ev.stack.valid()) {
          run.step |= step_stack(ev.stack);
          l.made = Made::kOptimizerRun;
          l.site = static_cast<int64_t>(ev.stack.v);
          run_addrs.push_back(ev.addr);
          ++run.made[{l.site, ev.size}];
        }
        live[ev.addr] = l;
        requested.erase(ev.addr);
        continue;
      }
      if (ev.action != Action::kFreeRequested && ev.action != Action::kFreeCompleted) continue;
      if (auto it = live.find(ev.addr); it != live.end()) {
        if (it->second.made == Made::kOptimizerRun) ++run.freed[it->second.site];
        live.erase(it);
        if (ev.action == Action::kFreeRequested) requested.insert(ev.addr);
        continue;
      }
      if (requested.erase(ev.addr) > 0) continue;  // the completion of a free seen already
      if (ev.action == Action::kFreeRequested) requested.insert(ev.addr);
      // A block older than the trace, freed here: what does its free say?
      const SiteInfo& site = attr_.Site(ev.stack);
      if (site.phase != Phase::kBackward && site.phase != Phase::kOptimizer) {
        other_frees.emplace_back(e, ev.size);
      }
    }
    if (run_phase == Phase::kBackward) end_backward();
    if (run_phase == Phase::kOptimizer) end_optimizer();

    // Blocks older than the trace that it never saw, without a stack, by size, in address order.
    std::map<int64_t, std::vector<uint64_t>> ghosts;
    for (const BlockLifetime& b : dt_.blocks) {
      if (b.cls != LifetimeClass::kGhost || attr_.Site(b.stack).kind != SiteKind::kNoStack) {
        continue;
      }
      ghosts[b.requested_size].push_back(b.address);
    }
    if (have_step && !ghosts.empty()) {
      // Gradients: the step reads one per parameter it updates. When the trace makes none
      // before the step, they are older than it.
      bool grads_before = false;
      std::map<int64_t, int64_t> grads_made;  // by size, made by the trace before the step
      for (const auto& [e, size] : grads) {
        if (e >= first_step.start) continue;
        grads_before = true;
        ++grads_made[size];
      }
      // State: a site of the step all of whose blocks outlive it (Adam's exp_avg at one line,
      // exp_avg_sq at the next); a site that frees some is the update's arithmetic.
      bool state_made = false;
      // How many parameters of each size the step handles: the most blocks one of its sites
      // made of that size (each site runs once per parameter), or the gradients the trace made.
      std::map<int64_t, int64_t> params;
      for (const auto& [key, n] : first_step.made) {
        const auto [s, size] = key;
        if (first_step.freed.find(s) == first_step.freed.end()) state_made = true;
        params[size] = std::max(params[size], n);
      }
      for (const auto& [size, n] : grads_made) params[size] = std::max(params[size], n);
      const bool grads_older = !grads_before;
      // Pre-window blocks freed after the step began, by anything but an optimizer or backward:
      // they were alive when it ran and may be the gradients it read.
      std::map<int64_t, int64_t> freed_after;
      for (const auto& [e, size] : other_frees) {
        if (e >= first_step.start) ++freed_after[size];
      }
      // States per parameter older than the trace, when the step makes none: what the counts
      // of every size the step handles leave room for beyond the parameter (and its gradient),
      // at most Adam's two.
      int64_t per_param = 1 + (grads_older ? 1 : 0);
      int64_t states = 0;
      if (!state_made) {
        int64_t room = -1;
        for (const auto& [size, p] : params) {
          auto g = ghosts.find(size);
          if (p <= 0 || g == ghosts.end()) continue;
          const int64_t fit = static_cast<int64_t>(g->second.size()) / p - per_param;
          room = room < 0 ? fit : std::min(room, fit);
        }
        states = std::clamp<int64_t>(room, 0, 2);
      }
      per_param += states;
      for (auto& [size, addrs] : ghosts) {
        auto pit = params.find(size);
        if (pit == params.end()) continue;
        const int64_t n = static_cast<int64_t>(addrs.size());
        const int64_t q = std::min(pit->second, n / per_param);
        int64_t g = 0;
        if (grads_older) {
          auto f = freed_after.find(size);
          g = std::max<int64_t>(0, q - (f == freed_after.end() ? 0 : f->second));
        }
        const int64_t st = states * q;
        std::sort(addrs.begin(), addrs.end());
        // Which block of a size is which is not in the file: the counts are. In address order
        // the parameters come first (made first, at model load), then the gradients, then the
        // state (made by the first step, after the first backward).
        for (int64_t i = n - g - st; i < n - st; ++i) {
          out.ghosts[addrs[static_cast<size_t>(i)]] = CategoryRule::kPreTraceGradient;
        }
        for (int64_t i = n - st; i < n; ++i) {
          out.ghosts[addrs[static_cast<size_t>(i)]] = CategoryRule::kPreTraceOptimizerState;
        }
      }
    }
  }
  auto it = pre_trace_->ghosts.find(lt.address);
  if (it == pre_trace_->ghosts.end()) return std::nullopt;
  return it->second == CategoryRule::kPreTraceGradient
             ? CategoryVerdict{Category::kGradient, CategoryRule::kPreTraceGradient}
             : CategoryVerdict{Category::kOptimizerState, CategoryRule::kPreTraceOptimizerState};
}

}  // namespace memsnap::analysis
