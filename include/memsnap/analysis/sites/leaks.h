// `memsnap leaks`: memory that an allocation site holds grows step after step and is never given
// back. Two modes share one verdict machinery (docs/leaks.md):
//
// clang-format off
//   series mode        FILE FILE FILE ...  one SeriesPoint per snapshot (live memory at its end,
//                                          grouped by site)  ──AnalyzeSeries──> LeakReport
//   single-trace mode  FILE (with a trace) DetectSteps -> step ends -> one SeriesPoint per step end
//                                          ──AnalyzeSeries──> LeakReport (+ step boundaries)
// clang-format on
//
// Sites are keyed like `top`'s rows (group.h: the site identity by default), so they match across
// files of different flavours; they are labelled with DistinctLabels.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// How a site's live bytes moved over the series (steps = consecutive pairs of points).
enum class Verdict : uint8_t {
  kGrowing,            // grew in every step
  kGrowingThenFlat,    // grew, then stayed flat to the end (warm-up, caches that fill up)
  kGrowingWithPauses,  // never shrank, grew in some steps but not in a prefix (batched growth)
  kFluctuating,        // went up and down
  kShrinking,          // never grew, shrank at least once
  kSteady,             // the same in every point
};
/// "growing", "growing_then_flat", "growing_with_pauses", "fluctuating", "shrinking", "steady".
std::string_view VerdictName(Verdict v);

/// Classifies a series of values (at least 2). A step counts as growth/shrink when its change is
/// larger than `tolerance` bytes in absolute value, else as flat.
Verdict ClassifySeries(const std::vector<int64_t>& values, int64_t tolerance = 0);

/// Where LeakReport::device_memory comes from.
enum class LeakMemorySource : uint8_t {
  kNone,      // unknown (device_memory 0)
  kFlag,      // --device-memory
  kOomEntry,  // an OOM entry of the trace (series: of LeakReport::device_memory_file)
};

struct LeakOptions {
  GroupOptions group;  // --by, --hide, --keep, --python-only, default noise filter
  /// A site is reported as a leak when it grows in every step, has at least `min_steps` steps and
  /// grew by at least this many bytes in total (--min-growth).
  int64_t min_growth = int64_t{1} << 20;
  int min_steps = 2;
  /// Device capacity for the "full at step" projection; nullopt = infer from an OOM entry.
  std::optional<int64_t> device_memory;
  /// Non-leak sites listed (largest |growth| first, at least min_growth; 0 = all); the rest are
  /// counted.
  size_t top = 10;
  /// Series mode: pair a site with itself across an edit that moved its Python lines between two
  /// consecutive snapshots (PairMovedSites, moved_sites.h; by site only, not with ignore_lines),
  /// so its history is one row. Off: --exact-lines.
  bool pair_moved = true;
};

/// One point of a series: a whole snapshot (series mode) or one step end (single-trace mode).
struct SeriesPoint {
  std::string label;          // file path, or "step N"
  int64_t time_us = kNoTime;  // last trace time of the file / time of the step-end event
  /// Single-trace mode: the step's end (the state after its last event); none in series mode.
  std::optional<TimelinePoint> event;
  /// Live memory grouped by site (any order; one row per key). With LeakOptions::pair_moved the
  /// site rows carry SiteInfo::unlined_key.
  std::vector<GroupRow> rows;
  int64_t live_bytes = 0;  // Σ rows.bytes
  int64_t live_count = 0;
  /// Device capacity inferred from an OOM entry (reserved at the OOM + device_free), or 0.
  int64_t inferred_device_memory = 0;
};

/// Live memory at the end of `snapshot` on all devices, grouped by site (with unlined keys when
/// options.pair_moved), plus its last trace time and the device capacity an OOM entry implies.
/// Errors only for invalid filter regexes.
absl::StatusOr<SeriesPoint> SeriesPointOf(const Snapshot& snapshot, const LeakOptions& options);

/// A site's figures over the series.
struct LeakSite {
  /// `key`, `info` and `frames` are those of the first point that has the site; for a site paired
  /// across moved lines, of the last one, with each moved line shown first→last in `info`
  /// (MovedInfo).
  std::string key;
  std::string site;                 // label, distinct among the report's sites
  SiteLabel label;                  // `site` as a text table shows it (head, callers)
  SiteInfo info;                    // label parts
  std::vector<std::string> frames;  // innermost first (filtered)
  /// Requested bytes per category: over the site's lifetimes (single-trace mode) or summed over
  /// the points (series mode); decides category().
  CategoryBytes category_bytes{};
  Category category() const { return DominantCategory(category_bytes); }
  bool synthetic = false;
  std::vector<int64_t> bytes;   // one per point
  std::vector<int64_t> counts;  // one per point
  Verdict verdict = Verdict::kSteady;
  bool leak = false;
  int64_t growth() const { return bytes.empty() ? 0 : bytes.back() - bytes.front(); }
  int64_t bytes_per_step = 0;  // growth / steps (leaks); 0 otherwise
  /// Projected 0-based point index at which the device would be full if this site kept growing at
  /// bytes_per_step and nothing else changed; nullopt when no capacity is known.
  std::optional<int64_t> full_at_step;
  /// Single-trace mode: bytes allocated in step k that are still live at the end of step k+1,
  /// one per step but the last (empty in series mode).
  std::vector<int64_t> retained;
  /// Series mode, a site paired across moved lines: its other keys (which differ from `key` in
  /// Python line numbers only), in the order the series met them.
  std::vector<std::string> earlier_keys;
  /// Its frames whose line moved from the first point that has the site to the last,
  /// "model/net.py:15→17" (MovedInfo: the owner first, then callers outward). Empty when unpaired.
  std::vector<std::string> moved;
};

/// Lines that moved between two consecutive snapshots of a series (an edit of the script), as
/// shown by the sites paired across them.
struct LineMoves {
  size_t from = 0;                 // point index: between points `from` and `from + 1`
  std::vector<std::string> moves;  // "benchmark.py:222→223" (MovedInfo), by file, then line
  int64_t sites = 0;               // sites paired between these two points
};

/// Why a step finder found fewer than two steps, or what it found instead (query::StepsNote says
/// it in words).
enum class StepsFinding {
  kNone,
  kFewerThanTwo,       // fewer than two steps, and no finder said why
  kNoEvents,           // the device has no trace events
  kTooShort,           // periodicity: the trace has only `finding_events` events
  kFlat,               // periodicity: live bytes do not vary along the trace
  kNoPattern,          // periodicity: the best autocorrelation `best_score` < kMinPeriodScore
  kFewerThanTwoWhole,  // --steps N: fewer than two whole steps
  kOneTrainingStep,    // the training step's phases: the trace holds one step
  /// Periodicity found repeats every `finding_events` events inside the one top-level call of a
  /// model that ran forward only (no backward pass or optimizer step run twice): its layers.
  kOneForwardPass,
  /// Periodicity found repeats every `finding_events` events, but the trace runs no backward pass
  /// or optimizer step twice and not every repeat holds one of its `finding_calls` top-level
  /// calls of the model: what repeats lies inside the calls (their layers).
  kRepeatsInsideCalls,
};

/// The fewest trace events periodicity looks for a repeating step in (fewer: kTooShort).
inline constexpr int64_t kMinEventsForSteps = 64;

/// The lowest autocorrelation a repeating pattern of the live curve must reach to be taken as
/// steps.
inline constexpr double kMinPeriodScore = 0.5;

/// Step boundaries of a single trace.
struct StepInfo {
  std::string method;  // "annotation NAME", "--steps N", "periodicity", "none"
  int32_t device = 0;
  /// The steps, in order, never overlapping. Empty when none was found.
  std::vector<StepRange> ranges;
  std::vector<int64_t> begin_time, end_time;   // time_us of the first / last event, or kNoTime
  int64_t period_events = 0;                   // periodicity: the detected period in events
  double score = 0.0;                          // periodicity: autocorrelation at that period (0..1)
  StepsFinding finding = StepsFinding::kNone;  // why no steps were found, or what was found
  int64_t finding_events = 0;  // kTooShort, kOneForwardPass, kRepeatsInsideCalls: see StepsFinding
  int64_t finding_calls = 0;   // kOneForwardPass, kRepeatsInsideCalls: the model's top-level calls
  double best_score = 0.0;     // kNoPattern: the best autocorrelation found
};

struct LeakReport {
  LeakOptions options;
  std::string mode;  // "series" or "single-trace"
  std::vector<std::string> labels;
  std::vector<int64_t> times;        // per point, kNoTime when unknown
  std::vector<int64_t> live_bytes;   // per point
  std::vector<int64_t> live_counts;  // per point
  Verdict total_verdict = Verdict::kSteady;
  std::vector<LeakSite>
      sites;  // leaks first (growth desc, key), then the rest (|growth| desc, key)
  int64_t num_leaks = 0;
  int64_t leak_bytes_per_step = 0;  // Σ bytes_per_step of the leaks
  int64_t device_memory = 0;        // 0 = unknown
  LeakMemorySource device_memory_source = LeakMemorySource::kNone;
  std::string device_memory_file;  // kOomEntry in series mode: the snapshot whose OOM entry it is
  std::optional<int64_t> full_at_step;  // all leaks together
  int64_t sites_total = 0;
  int64_t verdict_counts[6] = {};  // sites per Verdict
  std::optional<StepInfo> steps;   // single-trace mode
  /// Series mode: sites paired across moved lines (one row each, LeakSite::earlier_keys set), and
  /// the moves of every step that has some, in step order.
  int64_t sites_moved = 0;
  std::vector<LineMoves> moves;
  /// Caveats, as facts (report::LeaksNote says them in words).
  /// Single trace: the steps climb at every end by more than half a step's swing (the pattern may
  /// be the layers of one pass).
  bool layers_suspected = false;
  /// Fewer steps than options.min_steps: growth cannot be told apart from a warm-up.
  std::optional<int64_t> too_few_steps;
  /// Series: the first point (index > 0) whose trace ends before the previous point's, and by
  /// how many microseconds; 0 when the series is in time order.
  size_t out_of_order_point = 0;
  int64_t out_of_order_by_us = 0;
};

/// Compares the points in the order given. Needs at least 2 points. A site is matched by key over
/// the whole series and, with options.pair_moved, across a pair of moved rows (PairMovedSites)
/// between consecutive points whose later key the series has not met before; a row whose site
/// already has a row in the same point starts a site of its own.
LeakReport AnalyzeSeries(std::vector<SeriesPoint> points, const LeakOptions& options);

/// The annotation torch.profiler writes around each step it records (`ProfilerStep#12`): taken
/// as the steps when the file has it and no other way was asked for.
inline constexpr std::string_view kProfilerStepAnnotation = "ProfilerStep#*";

struct StepOptions {
  /// --step-annotation NAME or GLOB: steps are the START..END ranges of the annotations it names
  /// (a glob such as "ProfilerStep#*" names one range per step); empty: ProfilerStep#* when the
  /// file has it, else the training step's phases, else periodicity.
  std::string annotation;
  int steps = 0;        // --steps N (equal slices of the device's events)
  DeviceFilter device;  // default: the device with the most trace events
};

/// Steps from the phases of a training step (docs/leaks.md, "Finding the step"): each ends where
/// its optimizer step ends (without an optimizer: a step starts at each forward pass after a
/// backward pass). Fills `info` (method, steps, a note when there is one step) and returns true
/// when the trace shows such steps; false (info untouched) when it runs no backward pass and no
/// optimizer.
bool StepsByPhases(const Snapshot& snapshot, const DeviceTimeline& dt, StepInfo& info);

/// Whether the device's trace runs a model forward only (no backward pass, no optimizer step) in
/// one top-level call: one forward pass, whose repeats are its layers, never steps. False for a
/// trace of fewer than kMinEventsForSteps events, too short to look for a step in.
bool HoldsOneForwardPass(const Snapshot& snapshot, const DeviceTimeline& dt);

/// Whether live memory climbs at every step end by more than half of a step's own swing: the
/// steps found are more likely the layers of one pass (a forward pass keeps activations for
/// backward) than training steps.
bool ClimbsAtEveryStepEnd(const LiveCurveRef& curve, const StepInfo& steps);

/// Finds the repeating step of one device's trace: by annotation START/END pairs, by N equal
/// slices, by the training step's phases (StepsByPhases), or by the periodicity of the live-bytes
/// curve (autocorrelation of the detrended, downsampled curve; boundaries snapped to local minima).
/// In a trace that runs a model, the repeats periodicity finds are steps only when a backward pass
/// or an optimizer step runs at least twice, or when every repeat holds the start of a top-level
/// call of the model (a forward run under one outermost module call: a generation loop's calls);
/// else they are the layers of its forward passes, and there are no steps (kOneForwardPass,
/// kRepeatsInsideCalls). A trace that shows no model keeps what periodicity found.
/// Returns no steps (with a note) when none is found; errors for an unknown device or an annotation
/// name the file does not have.
absl::StatusOr<StepInfo> DetectSteps(const Snapshot& snapshot, const Timeline& timeline,
                                     const StepOptions& options);

/// Single-trace mode: live memory by site at the end of every step, then AnalyzeSeries, plus the
/// bytes each step leaves behind. Errors when the file has no trace.
absl::StatusOr<LeakReport> AnalyzeTraceLeaks(const Snapshot& snapshot, const LeakOptions& options,
                                             const StepOptions& step_options);

}  // namespace memsnap::analysis
