#include "memsnap/analysis/compose/check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

// The failure of a check whose value is over its limit.
void Judge(CheckResult& r) {
  r.passed = r.value <= r.limit;
  if (r.passed) return;
  CheckFailure f;
  f.reason = r.kind == CheckKind::kBaseline ? CheckReason::kOverBaseline : CheckReason::kOverLimit;
  f.value = r.value;
  f.limit = r.limit;
  f.over = r.value - r.limit;
  f.baseline = r.baseline;
  r.failure = f;
}

CheckResult Threshold(CheckMetric metric, double value, double limit, bool is_ratio) {
  CheckResult r;
  r.metric = metric;
  r.kind = CheckKind::kThreshold;
  r.is_ratio = is_ratio;
  r.value = value;
  r.limit = limit;
  Judge(r);
  return r;
}

// Bytes may grow by `tolerance` of the baseline's value.
CheckResult Baseline(CheckMetric metric, int64_t value, int64_t base, double tolerance) {
  CheckResult r;
  r.metric = metric;
  r.kind = CheckKind::kBaseline;
  r.value = static_cast<double>(value);
  r.baseline = static_cast<double>(base);
  r.tolerance = tolerance;
  r.limit = std::floor(static_cast<double>(base) * (1.0 + tolerance));
  Judge(r);
  return r;
}

}  // namespace

std::string_view CheckMetricName(CheckMetric metric) {
  switch (metric) {
    case CheckMetric::kPeak:
      return "peak";
    case CheckMetric::kReserved:
      return "reserved";
    case CheckMetric::kAllocated:
      return "allocated";
    case CheckMetric::kStranded:
      return "stranded";
    case CheckMetric::kFits:
      return "fits";
    case CheckMetric::kBaselineFile:
      return "baseline_file";
  }
  return "?";
}

TimelineOptions CheckTimelineOptions() {
  TimelineOptions to;
  to.keep = KeepLifetimes::kNone;  // the peak only
  to.curve = false;
  return to;
}

CheckMetrics MeasureForCheck(const Snapshot& snap, const CheckOptions* options) {
  return MeasureForCheck(snap, ReconstructTimeline(snap, CheckTimelineOptions()), options);
}

CheckMetrics MeasureForCheck(const Snapshot& snap, const absl::StatusOr<Timeline>& timeline,
                             const CheckOptions* options) {
  CheckMetrics m;
  m.path = snap.source.path;
  if (options != nullptr && options->fits) {
    OomOptions oo;
    oo.device_memory = options->fits;
    oo.start = options->start;
    oo.batch_search = false;
    oo.max_threads = options->threads;
    oo.categories = options->categories;
    absl::StatusOr<OomReport> fits = ExplainOoms(snap, oo);
    if (fits.ok()) {
      m.fits = *std::move(fits);
    } else {
      m.fits_error = std::string(fits.status().message());
    }
  }
  if (timeline.ok()) {
    for (const DeviceTimeline& dt : timeline->devices) {
      if (dt.num_events == 0) continue;
      m.peak_bytes = std::max(m.peak_bytes.value_or(0), dt.peak_requested);
    }
  }
  FragOptions fo;
  fo.pins = 0;  // the gate names no sites
  auto frag = AnalyzeFragmentation(snap, fo, timeline.ok() ? &*timeline : nullptr);
  if (frag.ok()) {
    for (const DeviceFrag& d : frag->devices) {
      m.reserved_bytes = std::max(m.reserved_bytes, d.figures.reserved_bytes);
      m.allocated_bytes = std::max(m.allocated_bytes, d.figures.allocated_bytes);
    }
    for (const FragCost& cost : frag->costs) {
      if (cost.figures.reserved_bytes <= 0) continue;
      m.stranded_share =
          std::max(m.stranded_share, static_cast<double>(cost.figures.stranded_bytes) /
                                         static_cast<double>(cost.figures.reserved_bytes));
    }
  }
  return m;
}

bool CheckReport::passed() const { return failures() == 0; }

int CheckReport::failures() const {
  return static_cast<int>(
      std::count_if(checks.begin(), checks.end(), [](const CheckResult& c) { return !c.passed; }));
}

namespace {
bool HasThresholds(const CheckOptions& o) {
  return o.max_peak || o.max_reserved || o.max_allocated || o.max_frag || o.fits;
}
}  // namespace

absl::StatusOr<CheckReport> RunChecks(const CheckMetrics& cur, const CheckMetrics* base,
                                      const CheckOptions& o) {
  CheckReport r;
  r.path = cur.path;
  r.categories = o.categories;
  if (!HasThresholds(o) && base == nullptr) {
    return absl::InvalidArgumentError(
        "nothing to check: give --max-peak, --max-reserved, --max-allocated, --max-frag, --fits "
        "and/or --baseline");
  }
  if (o.fits) {
    if (!cur.fits) {
      return absl::InvalidArgumentError(
          absl::StrCat(cur.path, ": --fits ", FormatBytes(*o.fits), ": ", cur.fits_error));
    }
    CheckResult c;
    c.metric = CheckMetric::kFits;
    // Passing: the peak reserved of the replay (the most it used of the card); failing: what the
    // run needs, the smallest memory it fits on (fit.h), so value, limit and over answer the
    // question the gate asks; the first failure on the limit is the evidence.
    c.value = 0;
    for (const OomDevice& d : cur.fits->devices) {
      if (d.remedies.empty()) continue;
      c.value = std::max(c.value, static_cast<double>(d.remedies[0].peak_reserved));
    }
    c.limit = static_cast<double>(*o.fits);
    c.passed = cur.fits->ooms.empty();
    if (!c.passed) {
      const OomExplanation& first = cur.fits->ooms.front();
      CheckFailure f;
      f.reason = CheckReason::kDoesNotFit;
      f.device = first.device;
      f.event = first.event;
      f.requested = first.rounded;
      f.verdict = first.verdict;
      // The device that needs the most decides the figure; its own first failure is the evidence.
      int64_t needs = 0;
      for (const OomDevice& d : cur.fits->devices) {
        if (!d.answer) continue;
        const OomExplanation& o = cur.fits->ooms[d.answer->first];
        const int64_t fallback =
            o.verdict == OomVerdict::kDemand || o.verdict == OomVerdict::kNotReproduced
                ? o.allocated + o.rounded
                : o.reserved + o.segment_bytes;
        const int64_t searched = d.remedies.empty() ? 0 : d.remedies[0].fits_on;
        const int64_t device_needs =
            searched > 0 ? searched : std::max(d.trace_peak_live, fallback);  // none found
        f.device_needs.emplace_back(d.device, device_needs);
        if (device_needs <= needs) continue;
        needs = device_needs;
        f.device = o.device;
        f.event = o.event;
        f.requested = o.rounded;
        // The live memory alone over the limit: no setting can fit it, whatever failed first.
        f.verdict = d.answer->peak_too_big ? OomVerdict::kDemand : o.verdict;
        f.best_needs = 0;
        f.best_conf.clear();
        if (d.smallest_fit > 0) {
          f.best_needs = d.remedies[static_cast<size_t>(d.smallest_fit)].fits_on;
          f.best_conf = d.remedies[static_cast<size_t>(d.smallest_fit)].conf;
        }
      }
      c.value = static_cast<double>(needs);
      f.value = c.value;
      f.limit = c.limit;
      f.over = c.value - c.limit;
      c.failure = f;
    }
    r.checks.push_back(std::move(c));
    r.fits = cur.fits;
  }
  if (o.max_peak) {
    if (!cur.peak_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          cur.path, ": --max-peak needs a trace (device_traces) and this file has none"));
    }
    r.checks.push_back(Threshold(CheckMetric::kPeak, static_cast<double>(*cur.peak_bytes),
                                 static_cast<double>(*o.max_peak), false));
  }
  if (o.max_reserved) {
    r.checks.push_back(Threshold(CheckMetric::kReserved, static_cast<double>(cur.reserved_bytes),
                                 static_cast<double>(*o.max_reserved), false));
  }
  if (o.max_allocated) {
    r.checks.push_back(Threshold(CheckMetric::kAllocated, static_cast<double>(cur.allocated_bytes),
                                 static_cast<double>(*o.max_allocated), false));
  }
  if (o.max_frag) {
    r.checks.push_back(Threshold(CheckMetric::kStranded, cur.stranded_share, *o.max_frag, true));
  }
  if (base != nullptr) {
    r.baseline_path = base->path;
    if (cur.peak_bytes && base->peak_bytes) {
      r.checks.push_back(
          Baseline(CheckMetric::kPeak, *cur.peak_bytes, *base->peak_bytes, o.tolerance));
    } else {
      r.peak_uncompared_file = cur.peak_bytes ? base->path : cur.path;
    }
    r.checks.push_back(
        Baseline(CheckMetric::kReserved, cur.reserved_bytes, base->reserved_bytes, o.tolerance));
    r.checks.push_back(
        Baseline(CheckMetric::kAllocated, cur.allocated_bytes, base->allocated_bytes, o.tolerance));
  }
  return r;
}

absl::StatusOr<CheckReport> RunChecksWithoutBaseline(const CheckMetrics& cur,
                                                     std::string looked_for,
                                                     const CheckOptions& o) {
  CheckReport r;
  if (HasThresholds(o)) {
    ASSIGN_OR_RETURN(r, RunChecks(cur, nullptr, o));
  } else {  // the baseline was the only check
    r.path = cur.path;
    r.categories = o.categories;
  }
  CheckResult c;
  c.metric = CheckMetric::kBaselineFile;
  c.kind = CheckKind::kBaseline;
  c.tolerance = o.tolerance;
  c.passed = false;
  CheckFailure f;
  f.reason = CheckReason::kNoBaseline;
  f.baseline_file = std::move(looked_for);
  c.failure = std::move(f);
  r.checks.push_back(std::move(c));
  return r;
}

}  // namespace memsnap::analysis
