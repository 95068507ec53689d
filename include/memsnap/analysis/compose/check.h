// `memsnap check`: a CI gate. Measures a few figures of a snapshot and compares them with
// thresholds and/or a baseline snapshot. Definitions: docs/ci.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/fit.h"
#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// The figures `check` compares. Byte figures are the largest over the file's devices (a limit is
/// per GPU).
struct CheckMetrics {
  std::string path;
  /// Peak of live requested bytes over the trace (the `timeline`/`diff` peak); nullopt without a
  /// trace.
  std::optional<int64_t> peak_bytes;
  int64_t reserved_bytes = 0;   // Σ segment sizes at the end
  int64_t allocated_bytes = 0;  // Σ active_allocated block sizes at the end
  /// The figure of `frag`'s verdict (docs/figures.md, "Stranded share"): stranded / reserved bytes
  /// at each device's reserved peak (the end for a device without a trace), the largest.
  double stranded_share = 0;
  /// --fits: the trace replayed under the recorded settings on that capacity (oom's analysis);
  /// unset when not asked, or when it could not run (`fits_error` says why: no trace).
  std::optional<OomReport> fits;
  std::string fits_error;
};

struct CheckOptions {
  std::optional<int64_t> max_peak;
  std::optional<int64_t> max_reserved;
  std::optional<int64_t> max_allocated;
  std::optional<double> max_frag;
  /// Fail when replaying the trace under the recorded settings on a device of this many bytes
  /// runs out of memory; the failure says what the run needs (the one fit search, fit.h).
  std::optional<int64_t> fits;
  FitStart start = FitStart::kRecorded;  // --fits: where the replays start (fit.h)
  /// Allowed growth over the baseline, as a fraction (0.05 = 5%); used when a baseline is given.
  double tolerance = 0.0;
  int threads = 0;  // --fits: replays run at once (0: all cores)
  /// The session's categories (GroupOptions::categories): the --fits holders' and the growing
  /// kinds' (CheckReport::categories).
  CategoryNames categories;
};

enum class CheckKind : uint8_t { kThreshold, kBaseline };

/// Measures `snapshot`; with options->fits also replays it on that capacity. Never fails.
CheckMetrics MeasureForCheck(const Snapshot& snapshot, const CheckOptions* options = nullptr);

/// The timeline MeasureForCheck rebuilds (the peak only), for a caller that rebuilds it during the
/// read (cli::LoadWithTimelineStatus).
TimelineOptions CheckTimelineOptions();

/// MeasureForCheck with the timeline already rebuilt with CheckTimelineOptions(); a timeline that
/// failed leaves the peak unknown, as in MeasureForCheck.
CheckMetrics MeasureForCheck(const Snapshot& snapshot, const absl::StatusOr<Timeline>& timeline,
                             const CheckOptions* options = nullptr);

/// What a check measures (docs/ci.md).
enum class CheckMetric : uint8_t {
  kPeak,       // the live peak (CheckMetrics::peak_bytes)
  kReserved,   // reserved bytes at the end
  kAllocated,  // allocated bytes at the end
  kStranded,   // the stranded share (a ratio; --max-frag)
  kFits,       // --fits: the trace replayed on a device of the limit's size
  /// --baseline DIR: the file of the rank's name is there (no figures: value and limit are 0).
  kBaselineFile,
};
/// "peak", "reserved", "allocated", "stranded", "fits", "baseline_file": the JSON `metric`.
std::string_view CheckMetricName(CheckMetric metric);

/// Why a check failed.
enum class CheckReason : uint8_t {
  kOverLimit,     // a threshold (--max-*): value > limit
  kOverBaseline,  // the baseline's value plus the tolerance: value > limit
  kDoesNotFit,    // --fits: the replay ran out of memory (the fields below say where)
  kNoBaseline,    // --baseline DIR holds no file of the rank's name (`baseline_file`)
};

/// A failed check, as figures (the renderer writes the words): value > limit, over = value -
/// limit > 0. For kDoesNotFit these describe the replay's first failure on that capacity: value
/// is what it needed, limit the capacity (docs/figures.md, "check --fits").
struct CheckFailure {
  CheckReason reason = CheckReason::kOverLimit;
  double value = 0;
  double limit = 0;
  double over = 0;
  std::optional<double> baseline;  // kOverBaseline
  // kDoesNotFit: `value` is what the run needs (the smallest memory it fits on under the
  // recorded settings, fit.h), `over` = value - limit; the device, event and request are the
  // first failure on the limit, the evidence.
  int32_t device = 0;
  uint32_t event = 0;     // trace index; kPreexistingEvent: re-creating the blocks older than it
  int64_t requested = 0;  // the request, rounded as the allocator rounds it
  /// kDemand when the run's live memory (its live peak, or the live blocks plus the failing
  /// request) exceeds the limit: no allocator setting can fit it; otherwise the first failure's
  /// verdict (fragmentation, cache not released).
  OomVerdict verdict = OomVerdict::kDemand;
  /// The smallest memory the best candidate setting fits on, when it needs kFitMinGain less than
  /// the recorded settings (fit.h); its label.
  int64_t best_needs = 0;
  std::string best_conf;
  /// Every device that does not fit, with what it needs, by device (one answer per device).
  std::vector<std::pair<int32_t, int64_t>> device_needs;
  // kNoBaseline: the file of the rank's name looked for in the baseline directory.
  std::string baseline_file;
};

/// One line of the verdict.
struct CheckResult {
  CheckMetric metric = CheckMetric::kPeak;
  CheckKind kind = CheckKind::kThreshold;
  bool is_ratio = false;  // stranded: value/limit/baseline are fractions, else bytes
  double value = 0;       // --fits: the replay's peak reserved, or what the run needs (fit.h)
  double limit = 0;       // --fits: the device's capacity
  std::optional<double> baseline;
  double tolerance = 0;  // kBaseline: the growth allowed over the baseline (0.05 = 5%)
  bool passed = true;
  /// Set when the check failed: why, with its figures.
  std::optional<CheckFailure> failure;
};

/// Live bytes by kind of memory (analysis::Category) before and after.
struct KindBytes {
  CategoryBytes before{};
  CategoryBytes after{};
};

struct CheckReport {
  std::string path;
  std::string baseline_path;  // empty without a baseline
  std::vector<CheckResult> checks;
  /// Sites that grew most from the baseline (filled by the caller from the diff engine when a
  /// baseline check failed), largest growth first.
  std::vector<SiteDelta> growing_sites;
  /// With growing_sites: the live bytes by kind of memory in the baseline and this file, at the
  /// same moment (what grew in the user's terms).
  std::optional<KindBytes> growing_kinds;
  bool sites_at_peak = false;  // growing_sites compare the peaks rather than the ends
  /// What growing_sites are rows of (check --by): sites, or annotations, metadata, modules...
  GroupBy growing_by = GroupBy::kSite;
  /// The file (this one or the baseline) without a trace, when the peaks were not compared.
  std::string peak_uncompared_file;
  /// Why growing_sites could not be found (the diff's error), empty when they were or not asked.
  std::string growing_sites_error;
  std::optional<OomReport> fits;  // --fits: the replay on that capacity and its explanation
  CategoryNames categories;       // what the kinds are named (CheckOptions::categories)
  bool passed() const;
  int failures() const;
};

/// Evaluates the thresholds of `options` on `current`, and when `baseline` is given each figure
/// against the baseline's. Errors (InvalidArgument naming the file): --max-peak on a file without
/// a trace; no check requested at all.
absl::StatusOr<CheckReport> RunChecks(const CheckMetrics& current, const CheckMetrics* baseline,
                                      const CheckOptions& options);

/// A rank of `--baseline DIR` that has no file of its name there (`looked_for`): its thresholds
/// as RunChecks evaluates them, and a failed kBaselineFile check naming `looked_for`, so that a
/// rank that cannot be compared fails the gate (exit 1) and every output names it. Errors: those
/// of the thresholds (RunChecks).
absl::StatusOr<CheckReport> RunChecksWithoutBaseline(const CheckMetrics& current,
                                                     std::string looked_for,
                                                     const CheckOptions& options);

/// The growing sites of a failed baseline check, and the live bytes by kind at the same moment.
struct GrowingSites {
  std::vector<SiteDelta> sites;
  KindBytes kinds;
};

/// The `n` sites whose live bytes at the end (at each file's peak with `at_peak`; both files then
/// need a trace) grew most from `baseline` to `current`, sites matched by frame text (and paired
/// across moved lines unless `exact_lines`: DiffOptions::pair_moved), largest growth first; only
/// sites that grew; with the live bytes of every kind of memory in both files at that moment.
/// `by` groups the rows otherwise (diff --by: annotation, metadata, compile_context, module...).
absl::StatusOr<GrowingSites> TopGrowingSites(const Snapshot& baseline, const Snapshot& current,
                                             int n, bool at_peak, bool exact_lines,
                                             const CategoryNames& categories,
                                             GroupBy by = GroupBy::kSite);

}  // namespace memsnap::analysis
