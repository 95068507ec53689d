// Step detection for single-trace `memsnap leaks`: annotation ranges, equal slices, or the
// periodicity of the live-bytes curve (docs/leaks.md, "Finding the step").
#include <fnmatch.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

constexpr int kMaxBuckets = 2048;
constexpr double kFundamentalRatio = 0.85;  // prefer the shortest lag this close to the best
constexpr int64_t kNoCall = -2;             // FindRepeats: no call run in progress

// The device with the most trace events (lowest ordinal on ties).
const DeviceTimeline* BusiestDevice(const Timeline& timeline) {
  const DeviceTimeline* best = nullptr;
  for (const DeviceTimeline& dt : timeline.devices) {
    if (best == nullptr || dt.num_events > best->num_events) best = &dt;
  }
  return best;
}

void AddStep(const Snapshot& snap, const DeviceTimeline& dt, int64_t begin, int64_t end,
             StepInfo& info) {
  if (begin >= end) return;
  // Overlapping ranges: keep the first.
  if (!info.ranges.empty() && begin < info.ranges.back().end_event()) return;
  const StepRange r{TimelinePoint::Before(static_cast<uint32_t>(begin)),
                    TimelinePoint::Before(static_cast<uint32_t>(end))};
  info.ranges.push_back(r);
  info.begin_time.push_back(dt.TimeOf(snap, TimelinePoint::After(r.first_event())));
  info.end_time.push_back(dt.TimeOf(snap, r.to));
}

// Whether annotation `name` is one `pattern` names: a glob (`*`, `?`, `[...]`; "ProfilerStep#*")
// or, without those, the exact name.
bool NameMatches(std::string_view pattern, std::string_view name) {
  const std::string p(pattern), n(name);
  return fnmatch(p.c_str(), n.c_str(), 0) == 0;
}

absl::Status StepsByAnnotation(const Snapshot& snap, const DeviceTimeline& dt,
                               const std::string& pattern, StepInfo& info) {
  info.method = absl::StrCat("annotation ", pattern);
  // START/END pairs in file order: an END closes the latest open START of the same name (a glob
  // names many: ProfilerStep#1, ProfilerStep#2, ...).
  std::vector<std::pair<int64_t, int64_t>> ranges;  // (start, end); end = kNoTime when unclosed
  std::map<std::string_view, std::vector<size_t>> open;  // by name
  std::vector<std::string> names;
  bool device_has_any = false;
  for (const Annotation& a : snap.annotations) {
    if (a.device == dt.device && a.name.valid() && NameMatches(pattern, snap.strings.Get(a.name))) {
      device_has_any = true;
    }
  }
  for (const Annotation& a : snap.annotations) {
    if (!a.name.valid() || a.time_us == kNoTime) continue;
    std::string_view text = snap.strings.Get(a.name);
    if (!NameMatches(pattern, text)) {
      names.emplace_back(text);
      continue;
    }
    if (device_has_any && a.device != dt.device) continue;
    std::string_view stage = a.stage.valid() ? snap.strings.Get(a.stage) : "";
    std::vector<size_t>& opened = open[text];
    if (stage != "END") {
      opened.push_back(ranges.size());
      ranges.emplace_back(a.time_us, kNoTime);
    } else if (!opened.empty()) {
      ranges[opened.back()].second = a.time_us;
      opened.pop_back();
    }
  }
  if (ranges.empty()) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    if (names.size() > 8) names.resize(8);
    return absl::NotFoundError(absl::StrCat(
        "--step-annotation ", pattern, ": no annotation START with that name",
        names.empty() ? " (the file has no annotations)"
                      : absl::StrCat(" (names in the file: ", absl::StrJoin(names, ", "), ")")));
  }
  if (!dt.has_time) {
    return absl::InvalidArgumentError(
        "--step-annotation needs time_us on the trace events; use --steps N instead");
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<int64_t> times(dt.num_events);
  for (uint32_t e = 0; e < dt.num_events; ++e) times[e] = dt.TimeOf(snap, TimelinePoint::After(e));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const auto [start, stop] = ranges[i];
    const int64_t next_start = i + 1 < ranges.size() ? ranges[i + 1].first : INT64_MAX;
    const int64_t begin = std::lower_bound(times.begin(), times.end(), start) - times.begin();
    const int64_t end =
        stop != kNoTime ? std::upper_bound(times.begin(), times.end(), stop) - times.begin()
                        : std::lower_bound(times.begin(), times.end(), next_start) - times.begin();
    AddStep(snap, dt, begin, end, info);
  }
  return absl::OkStatus();
}

// Whether the file has a START annotation of a name `pattern` matches (on any device).
bool HasAnnotation(const Snapshot& snap, std::string_view pattern) {
  for (const Annotation& a : snap.annotations) {
    if (a.name.valid() && a.time_us != kNoTime && NameMatches(pattern, snap.strings.Get(a.name)) &&
        !(a.stage.valid() && snap.strings.Get(a.stage) == "END")) {
      return true;
    }
  }
  return false;
}

void StepsBySlices(const Snapshot& snap, const DeviceTimeline& dt, int n, StepInfo& info) {
  info.method = absl::StrCat("--steps ", n);
  const int64_t events = dt.num_events;
  for (int64_t k = 0; k < n; ++k) AddStep(snap, dt, k * events / n, (k + 1) * events / n, info);
}

// Mean live bytes per bucket of events, with the least-squares line removed.
std::vector<double> DetrendedBuckets(const DeviceTimeline& dt, const LiveCurveRef& curve,
                                     int buckets) {
  const int64_t events = dt.num_events;
  std::vector<double> x(buckets);
  for (int b = 0; b < buckets; ++b) {
    const int64_t lo = b * events / buckets, hi = (b + 1) * events / buckets;
    double sum = 0;
    for (int64_t e = lo; e < hi; ++e)
      sum += static_cast<double>(curve.At(TimelinePoint::After(static_cast<uint32_t>(e))));
    x[b] = sum / static_cast<double>(std::max<int64_t>(1, hi - lo));
  }
  const double n = buckets, mean_i = (n - 1) / 2.0;
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (int i = 0; i < buckets; ++i) {
    sxy += (i - mean_i) * (x[i] - mean_x);
    sxx += (i - mean_i) * (i - mean_i);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0;
  for (int i = 0; i < buckets; ++i) x[i] -= mean_x + slope * (i - mean_i);
  return x;
}

void StepsByPeriodicity(const Snapshot& snap, const DeviceTimeline& dt, const LiveCurveRef& curve,
                        StepInfo& info) {
  info.method = "periodicity";
  const int64_t events = dt.num_events;
  if (events < kMinEventsForSteps) {
    info.finding = StepsFinding::kTooShort;
    info.finding_events = events;
    return;
  }
  const int m = static_cast<int>(std::min<int64_t>(events, kMaxBuckets));
  const std::vector<double> x = DetrendedBuckets(dt, curve, m);
  // Autocorrelation of the first difference: one-off jumps (a warm-up, a cache filling) become
  // single spikes instead of shifting every later value, and a linear leak becomes a constant.
  std::vector<double> d(m - 1);
  for (int i = 0; i + 1 < m; ++i) d[i] = x[i + 1] - x[i];
  const double mean_d = std::accumulate(d.begin(), d.end(), 0.0) / (m - 1);
  double energy = 0;
  for (double& v : d) v -= mean_d, energy += v * v;
  const int nd = m - 1;
  if (energy <= 1e-9 * nd) {
    info.finding = StepsFinding::kFlat;
    return;
  }
  // Unbiased, normalized; at least three periods must fit.
  const int max_lag = nd / 3;
  std::vector<double> r(max_lag + 2, 0.0);
  for (int lag = 1; lag <= max_lag + 1 && lag < nd; ++lag) {
    double s = 0;
    for (int i = 0; i + lag < nd; ++i) s += d[i] * d[i + lag];
    r[lag] = (s / (nd - lag)) / (energy / nd);
  }
  double best = 0;
  for (int lag = 2; lag <= max_lag; ++lag) {
    if (r[lag] > r[lag - 1] && r[lag] >= r[lag + 1]) best = std::max(best, r[lag]);
  }
  if (best < kMinPeriodScore) {
    info.finding = StepsFinding::kNoPattern;
    info.best_score = best;
    return;
  }
  int lag = 2;
  for (; lag <= max_lag; ++lag) {
    if (r[lag] > r[lag - 1] && r[lag] >= r[lag + 1] && r[lag] >= kFundamentalRatio * best) break;
  }
  info.score = r[lag];
  const double period = static_cast<double>(lag) * events / m;
  info.period_events = std::llround(period);
  // Phase: the bucket offset where the detrended curve is lowest on average over all periods.
  int phase = 0;
  double phase_low = 0;
  for (int p = 0; p < lag; ++p) {
    double sum = 0;
    int cnt = 0;
    for (int i = p; i < m; i += lag) sum += x[i], ++cnt;
    const double avg = sum / cnt;
    if (p == 0 || avg < phase_low) phase = p, phase_low = avg;
  }
  // Boundaries: the lowest live point within a quarter period of each expected position.
  std::vector<int64_t> cuts;
  const int64_t half_window = std::max<int64_t>(1, std::llround(period / 4));
  for (double pos = (phase + 0.5) * events / m; pos < events; pos += period) {
    const int64_t center = std::llround(pos);
    const int64_t lo = std::max<int64_t>(cuts.empty() ? 0 : cuts.back() + 1, center - half_window);
    const int64_t hi = std::min<int64_t>(events - 1, center + half_window);
    if (lo > hi) continue;
    auto live = [&](int64_t e) { return curve.At(TimelinePoint::After(static_cast<uint32_t>(e))); };
    int64_t at = lo;
    for (int64_t e = lo; e <= hi; ++e) {
      if (live(e) < live(at)) at = e;
    }
    cuts.push_back(at);
  }
  for (size_t i = 0; i + 1 < cuts.size(); ++i)
    AddStep(snap, dt, cuts[i] + 1, cuts[i + 1] + 1, info);
  if (info.ranges.size() < 2) info.finding = StepsFinding::kFewerThanTwoWhole;
}

// What a device's trace shows repeating, from its phases and stacks (docs/leaks.md, "Finding the
// step"): the evidence periodicity needs before its repeats may be called steps.
struct Repeats {
  bool model = false;          // a forward, backward or optimizer allocation
  int64_t backward_runs = 0;   // backward passes: runs of the phase (PhaseAtEvent) apart
  int64_t optimizer_runs = 0;  // optimizer steps: runs of the phase apart
  // The first allocation of each top-level call: a run of forward allocations under one outermost
  // module call, ended by an allocation of another phase or under another call.
  std::vector<uint32_t> call_starts;
};

// The Python frames outside the outermost `forward` frame of `stack` (the code that called the
// outermost module: its line does not change between its layers), or nullopt for a stack without
// a `forward` frame.
std::optional<std::vector<FrameId>> OuterCall(const Snapshot& snap, Attribution& attribution,
                                              StackId stack) {
  std::span<const FrameId> frames = snap.stacks.Get(stack);
  size_t outermost = frames.size();
  for (size_t i = 0; i < frames.size(); ++i) {
    if (attribution.ClassOf(frames[i]) == FrameClass::kPython &&
        snap.strings.Get(snap.frames.Get(frames[i]).name) == "forward") {
      outermost = i;  // Python frames run innermost first: the last one is the outermost
    }
  }
  if (outermost == frames.size()) return std::nullopt;
  std::vector<FrameId> outer;
  for (size_t i = outermost + 1; i < frames.size(); ++i) {
    if (attribution.ClassOf(frames[i]) == FrameClass::kPython) outer.push_back(frames[i]);
  }
  return outer;
}

Repeats FindRepeats(const Snapshot& snap, const DeviceTimeline& dt) {
  Repeats r;
  Attribution attribution(snap, nullptr);
  LifetimeCategorizer phases(attribution, dt);
  r.model = phases.ModelRan();
  if (!r.model) return r;
  // A backward run counts when a forward run came since the last one counted, an optimizer run
  // when a forward or backward run did: a pass that another phase interrupts is still one pass.
  bool forward_since_backward = false, model_since_optimizer = false;
  StepPhase before = StepPhase::kOther;
  for (uint32_t e = 0; e < dt.num_events; ++e) {
    const StepPhase p = phases.PhaseAtEvent(e);
    if (p != before) {
      if (p == StepPhase::kForward) forward_since_backward = model_since_optimizer = true;
      if (p == StepPhase::kBackward && (forward_since_backward || r.backward_runs == 0)) {
        ++r.backward_runs;
        forward_since_backward = false;
      }
      if (p == StepPhase::kBackward) model_since_optimizer = true;
      if (p == StepPhase::kOptimizer && (model_since_optimizer || r.optimizer_runs == 0)) {
        ++r.optimizer_runs;
        model_since_optimizer = false;
      }
    }
    before = p;
  }
  // Top-level calls: memoized by stack, a key per distinct outer call (-1: no forward frame).
  std::map<uint32_t, int64_t> key_of_stack;
  std::map<std::vector<FrameId>, int64_t> keys;
  int64_t current = kNoCall;  // the key of the call run in progress
  for (uint32_t e = 0; e < dt.num_events; ++e) {
    const TraceEvent& ev = snap.events[dt.event_begin + e];
    if (ev.action != Action::kAlloc || !ev.stack.valid()) continue;
    const Phase p = attribution.PhaseOf(ev.stack);
    if (p == Phase::kNone) continue;
    if (p != Phase::kForward) {
      current = kNoCall;
      continue;
    }
    auto [it, added] = key_of_stack.try_emplace(ev.stack.v, -1);
    if (added) {
      if (std::optional<std::vector<FrameId>> outer = OuterCall(snap, attribution, ev.stack)) {
        it->second =
            keys.try_emplace(*std::move(outer), static_cast<int64_t>(keys.size())).first->second;
      }
    }
    if (current != it->second) {
      r.call_starts.push_back(e);
      current = it->second;
    }
  }
  return r;
}

// Whether every step holds the start of a top-level call: the repeats are calls of the model (a
// generation loop's), not what one call repeats inside (its layers).
bool EveryStepHoldsACall(const Repeats& r, const StepInfo& info) {
  for (const StepRange& range : info.ranges) {
    auto it = std::lower_bound(r.call_starts.begin(), r.call_starts.end(), range.first_event());
    if (it == r.call_starts.end() || *it >= range.end_event()) return false;
  }
  return true;
}

// Steps from the phases of a training step (docs/leaks.md, "Finding the step"): a step ends where
// its optimizer step ends (the last optimizer run before the next forward pass), or, in a trace
// without an optimizer that runs backward, where a forward pass follows a backward pass. Returns
// false when the trace shows neither (inference, no model): periodicity decides then. A trace of
// one step is one step, never cut at the layers of its forward pass.
}  // namespace

bool StepsByPhases(const Snapshot& snap, const DeviceTimeline& dt, StepInfo& info) {
  Attribution attribution(snap, nullptr);
  LifetimeCategorizer phases(attribution, dt);
  if (!phases.ModelRan()) return false;
  const uint32_t n = dt.num_events;
  std::vector<StepPhase> at(n);
  bool optimizer = false, backward = false;
  for (uint32_t e = 0; e < n; ++e) {
    at[e] = phases.PhaseAtEvent(e);
    optimizer |= at[e] == StepPhase::kOptimizer;
    backward |= at[e] == StepPhase::kBackward;
  }
  if (!optimizer && !backward) return false;
  // A step starts at each forward pass that follows a backward pass or an optimizer step; it
  // ends where its optimizer step ended (when it allocated: Adam allocates its state in the first
  // step only), else where the next forward pass begins.
  info.method = "training steps";
  std::vector<int64_t> cuts;   // the end of each step
  bool trained = false;        // a backward or optimizer run since the last cut
  int64_t optimizer_end = -1;  // the end of the last optimizer run since the last cut
  bool forward_seen = false;
  for (uint32_t e = 0; e < n; ++e) {
    if (at[e] == StepPhase::kBackward || at[e] == StepPhase::kOptimizer) trained = true;
    if (at[e] == StepPhase::kOptimizer && (e + 1 == n || at[e + 1] != StepPhase::kOptimizer)) {
      optimizer_end = int64_t{e} + 1;
    }
    if (at[e] == StepPhase::kForward && (e == 0 || at[e - 1] != StepPhase::kForward)) {
      if (trained) {
        cuts.push_back(optimizer_end >= 0 ? optimizer_end : int64_t{e});
        trained = false;
        optimizer_end = -1;
      } else if (forward_seen) {
        // A forward pass with no backward or optimizer allocation since the last: the phases do
        // not show every step (an optimizer that allocates only in its first step, a backward
        // the stacks do not show); periodicity decides.
        return false;
      }
      forward_seen = true;
    }
  }
  if (optimizer_end >= 0) {
    cuts.push_back(optimizer_end);
  } else if (trained) {
    cuts.push_back(n);
  }
  // Events after the last optimizer step are a step cut short by the dump: left out.
  int64_t begin = 0;
  for (int64_t cut : cuts) {
    AddStep(snap, dt, begin, cut, info);
    begin = cut;
  }
  if (info.ranges.size() < 2) {
    info.finding = StepsFinding::kOneTrainingStep;
  }
  return true;
}

bool HoldsOneForwardPass(const Snapshot& snap, const DeviceTimeline& dt) {
  if (dt.num_events < kMinEventsForSteps) return false;
  const Repeats r = FindRepeats(snap, dt);
  return r.model && r.backward_runs == 0 && r.optimizer_runs == 0 && r.call_starts.size() == 1;
}

bool ClimbsAtEveryStepEnd(const LiveCurveRef& curve, const StepInfo& steps) {
  const size_t n = steps.ranges.size();
  if (n < 2) return false;
  double swing = 0;
  for (const StepRange& r : steps.ranges) {
    int64_t high = curve.At(r.from);
    for (uint32_t e = r.first_event(); e < r.end_event(); ++e) {
      high = std::max(high, curve.At(TimelinePoint::After(e)));
    }
    swing += static_cast<double>(high - curve.At(r.from)) / static_cast<double>(n);
  }
  const double growth =
      static_cast<double>(curve.At(steps.ranges[n - 1].to) - curve.At(steps.ranges[0].to)) /
      static_cast<double>(n - 1);
  return growth > 0.5 * swing;
}

absl::StatusOr<StepInfo> DetectSteps(const Snapshot& snapshot, const Timeline& timeline,
                                     const StepOptions& options) {
  StepInfo info;
  const DeviceTimeline* dt =
      options.device ? timeline.Find(*options.device) : BusiestDevice(timeline);
  if (dt == nullptr) {
    return absl::NotFoundError(options.device
                                   ? absl::StrCat("--device ", *options.device, ": no such device")
                                   : std::string("the file has no device"));
  }
  info.device = dt->device;
  if (dt->num_events == 0) {
    info.method = "none";
    info.finding = StepsFinding::kNoEvents;
    return info;
  }
  if (!options.annotation.empty()) {
    if (absl::Status s = StepsByAnnotation(snapshot, *dt, options.annotation, info); !s.ok()) {
      return s;
    }
  } else if (options.steps <= 0 && HasAnnotation(snapshot, kProfilerStepAnnotation)) {
    // torch.profiler marks each step it records: the steps as the run itself named them.
    RETURN_IF_ERROR(StepsByAnnotation(snapshot, *dt, std::string(kProfilerStepAnnotation), info));
  } else if (options.steps > 0) {
    StepsBySlices(snapshot, *dt, options.steps, info);
  } else if (StepsByPhases(snapshot, *dt, info)) {
    // The training step's own phases gave the steps (or said there is one).
  } else {
    std::optional<LiveCurveRef> curve = dt->live_curve();
    if (!curve) {
      return absl::InternalError("finding steps by periodicity needs a timeline with its curve");
    }
    StepsByPeriodicity(snapshot, *dt, *curve, info);
    if (info.ranges.size() >= 2) {
      // Repeats are steps only where the trace shows something that repeats as a step does: a
      // backward pass or an optimizer step run again, or top-level calls of the model (a
      // generation loop's), one in every repeat. A repeat inside one call is a layer of it.
      const Repeats r = FindRepeats(snapshot, *dt);
      if (r.model && r.backward_runs < 2 && r.optimizer_runs < 2 && !EveryStepHoldsACall(r, info)) {
        const int64_t period = info.period_events;
        info = StepInfo{};
        info.device = dt->device;
        info.method = "periodicity";
        info.finding = r.call_starts.size() == 1 ? StepsFinding::kOneForwardPass
                                                 : StepsFinding::kRepeatsInsideCalls;
        info.finding_events = period;
        info.finding_calls = static_cast<int64_t>(r.call_starts.size());
      }
    }
  }
  return info;
}

}  // namespace memsnap::analysis
