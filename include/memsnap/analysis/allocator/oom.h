// `memsnap oom`: why an allocation failed (every `oom` entry of the trace), or where a run would
// fail on a device of a given size, who held the memory then, and which allocator settings would
// have fit, each proven by replaying the trace through the simulator on the same capacity.
// Definitions and a worked example: docs/oom.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/fit.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/attribution/workload.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/sim/allocator.h"

namespace memsnap::analysis {

enum class OomVerdict : uint8_t {
  kDemand,            // live memory + the request > capacity: no allocator could serve it
  kFragmentation,     // enough free memory in total, but no block (or segment) large enough
  kCacheNotReleased,  // a cached block would hold it, but on another stream or refused by the
                      // oversize rules (max_split_size), and the allocator cannot release it
  kNotReproduced,     // a recorded oom entry the replay served: only the recorded figures
};
/// "demand", "fragmentation", "cache_not_released", "not_reproduced".
std::string_view OomVerdictName(OomVerdict v);

struct OomOptions {
  DeviceFilter device;  // default: every device with a trace
  /// The device's capacity; nullopt: implied by each device's first oom entry (device_free +
  /// reserved), and devices without one are not analysed.
  std::optional<int64_t> device_memory;
  /// Settings to try, each applied on top of the recorded ones; empty: DefaultOomCandidates.
  std::vector<std::string> candidates;
  int top_holders = 5;  // sites listed per OOM; 0 = all
  int max_threads = 0;  // replays in parallel (0: all cores)
  EmptyCacheMode empty_cache = EmptyCacheMode::kHeuristic;
  /// The snapshot's timeline when the caller has it: `oom` builds it while the file is read. Its
  /// peaks are used whatever it keeps; with KeepLifetimes::kAll the holders' categories follow
  /// the attribution model's full rules (else what each stack shows alone). nullptr: built here,
  /// beside the replays, with every lifetime.
  const Timeline* timeline = nullptr;
  /// With a `timeline` that kept no lifetimes (KeepLifetimes::kNone): build them here, where
  /// they are read (the batch share's allocations before the searches, the explanation after
  /// them, with the replays' operations freed first), so that they are not held through the
  /// searches: `oom`'s peak memory (docs/oom.md). Off: such a timeline's stacks alone say.
  bool build_lifetimes = false;
  /// When the recorded settings fail: search, per setting, the smallest device memory it fits on
  /// (OomRemedy::fits_on), the one fit search of fit.h (about 5 replays per setting).
  bool search_fits = true;
  /// Where the fit searches' replays start (fit.h), and the explaining replay's when the
  /// recorded state fits on the capacity.
  FitStart start = FitStart::kRecorded;
  /// When no setting fits: search the share of the batch-sized memory the run fits with
  /// (OomDevice::batch_share_fits; about 8 replays). Off: no search.
  bool batch_search = true;
  /// The session's categories (GroupOptions::categories): the holders' kinds.
  CategoryNames categories;
};

/// The candidate settings tried when none are given: expandable segments (or, when the run used
/// them, not), max_split_size_mb 128/256/512, a GC threshold (under a 0.99 memory fraction, the
/// only way it acts) and roundup_power2_divisions:4; those equal to the recorded settings are
/// left out.
std::vector<std::string> DefaultOomCandidates(const sim::AllocatorConfig& recorded);

/// Live memory of one site (or one category) at the failure.
struct OomHolder {
  std::string site;
  /// The site is a bracketed row that names no operation of the program (SiteNamer::IsSynthetic,
  /// kPreWindowRow): a line that points at the code leaves it out.
  bool synthetic = false;
  Category category = Category::kUnknown;
  int64_t bytes = 0;  // allocated (block) bytes
  int64_t blocks = 0;
};

/// One candidate replayed on the device's capacity.
struct OomRemedy {
  std::string conf;      // as tried ("recorded" for the recorded settings)
  std::string settings;  // the resulting settings, canonical (sim::FormatAllocatorConf)
  bool fits = false;
  int64_t peak_reserved = 0;  // over the whole trace when it fits, else up to the failure
  int64_t headroom = 0;       // capacity - peak_reserved (when it fits)
  uint32_t fails_at = 0;      // trace index of the first failure (kPreexistingEvent: before it)
  int64_t fail_requested = 0;
  /// Set when this setting provably takes the same decisions as an earlier one on this trace
  /// (e.g. a max_split_size no block can reach): that one's label; its replay stands for both.
  std::string same_as;
  /// When the recorded settings do not fit: the smallest device memory on which this setting
  /// replays the whole trace, failed requests served (SmallestFittingCapacity: exact to FitUnit
  /// for the recorded settings, to 0.25% for a candidate). 0: not searched, or none found.
  int64_t fits_on = 0;
};

/// One failed (or predicted to fail) allocation, explained.
struct OomExplanation {
  int32_t device = 0;
  bool recorded = false;    // an `oom` entry of the trace; else predicted on --device-memory
  bool reproduced = false;  // the replay failed here too (its figures below are the replay's)
  uint32_t event = 0;       // trace index; kPreexistingEvent: re-creating the blocks alive
                            // before the trace began (the trace does not say when)
  int64_t time_us = kNoTime;
  int64_t start_time_us = kNoTime;  // the device trace's first time, for relative times
  int64_t requested = 0;            // the program's request
  int64_t rounded = 0;              // round_size
  int64_t segment_bytes = 0;        // what a new segment for it needs (the OOM message's figure)
  bool is_small = false;            // small pool (<= 1 MiB) or large
  int64_t stream = 0;
  std::string site;
  bool site_synthetic = false;  // the site names no operation (OomHolder::synthetic)
  Category category = Category::kUnknown;
  int64_t capacity = 0;
  /// The capacity the verdict judges against: `capacity`, capped by the recorded settings'
  /// per_process_memory_fraction.
  int64_t usable_capacity = 0;
  /// The recorded settings' max_split_size (sim::kUnlimitedSize: unlimited), which the
  /// kCacheNotReleased verdict of an oversize block names.
  int64_t max_split_size = sim::kUnlimitedSize;
  int64_t device_free = 0;                      // at the failure, after the retry
  std::optional<int64_t> recorded_device_free;  // what the oom entry recorded
  int64_t reserved = 0;
  int64_t allocated = 0;
  /// The retry: reserved when no cached block served the request, and what the allocator gave
  /// back to the device (whole cached segments, unmapped pages) before failing.
  int64_t reserved_before = 0;
  int64_t released_bytes = 0;
  int64_t released_segments = 0;
  sim::FreeSpace free;  // the cached free blocks at the failure
  /// Why it failed; the figures that prove it are the fields around it (the renderer writes the
  /// sentence: report::OomVerdictText).
  OomVerdict verdict = OomVerdict::kNotReproduced;
  int64_t largest_free_block = 0;  // in the request's pool, on its stream
  int64_t free_bytes = 0;          // capacity - allocated: device free + cached free
  /// How much live memory must shrink for this request to fit, with no fragmentation at all
  /// (allocated + rounded - capacity, at least 0).
  int64_t shortfall = 0;
  std::vector<OomHolder> holders;     // top sites, largest first
  std::vector<OomHolder> categories;  // by category (site empty), largest first
  int64_t holders_bytes = 0;          // Σ over every live block (== allocated when reproduced)
  int64_t holders_blocks = 0;
};

/// What `oom` cuts to make a device fit, when no setting does (OomAnswer::cut).
enum class OomCut : uint8_t {
  kNone,     // nothing to cut (a setting fits, or no figure says how much)
  kRequest,  // the failing request alone is larger than the device: it must ask for less
  kLive,     // live memory must shrink by OomAnswer::cut_bytes (at the peak or the failure)
};

/// The answer for one device that does not fit, decided here and written by the renderer in
/// three lines ahead of the evidence (docs/oom.md): why it fails (the run's own live peak over
/// the capacity, else the first failure's verdict), which setting fits or how much memory the run
/// needs, and what to cut.
struct OomAnswer {
  size_t first = 0;           // index into OomReport::ooms of the device's first failure
  bool peak_too_big = false;  // --device-memory below the run's own live peak: that is why
  OomVerdict verdict = OomVerdict::kNotReproduced;  // the first failure's (when !peak_too_big)
  /// Live bytes that must go at least: the live peak over the capacity, or the first failure's
  /// shortfall (kDemand); 0 when the memory would fit and the layout does not.
  int64_t excess = 0;
  OomCut cut = OomCut::kNone;
  /// kLive: how much to cut; `cut_approximate` when no failure figure says it and it is the
  /// smallest fitting memory over the capacity instead ("about").
  int64_t cut_bytes = 0;
  bool cut_approximate = false;
  /// kLive: the kinds of memory whose lever applies to the run's workload (CategoryLever; not
  /// unknown), largest first, as many as it takes to cover cut_bytes (all of them when they
  /// cannot), where the cut is taken (at the peak when peak_too_big, else at the failure);
  /// `cut_levered_bytes`: what every such kind holds there together. Less than cut_bytes: no
  /// lever memsnap knows covers the cut.
  std::vector<OomHolder> cut_kinds;
  int64_t cut_levered_bytes = 0;
  /// kLive and not peak_too_big: the largest site at the failure (index into its holders).
  bool cut_site = false;
};

/// Whether memory of `category` has a lever (report::CategoryLever words it for each workload):
/// every built-in kind but unknown; not a user category (memsnap knows no lever for it).
bool HasLever(Category category);

/// Where a device's capacity comes from.
enum class CapacitySource {
  kFlag,      // --device-memory
  kOomEntry,  // the trace's oom entry: device_free + reserved
};

/// Last step's gradients alive in the forward pass of the trace's live peak (FindStaleGradients,
/// stale_gradients.h), and the recorded settings replayed on the capacity with them freed before
/// that forward: what `optimizer.zero_grad(set_to_none=True)` there would change.
struct ZeroGradLever {
  int64_t bytes = 0;  // requested bytes live at the peak
  int64_t blocks = 0;
  int64_t freed_by_zero_grad = 0;  // of the blocks, those the trace frees under zero_grad
  uint32_t forward_start = 0;      // device event: the forward pass's first
  bool fits = false;               // the replay runs the whole trace on the capacity
  int64_t peak_reserved = 0;       // the replay's (up to its first failure when it does not fit)
};

/// At most this many failed allocations per device are explained (OomDevice::unexplained_ooms).
inline constexpr size_t kMaxExplainedOoms = 20;

/// One device replayed on a capacity.
struct OomDevice {
  int32_t device = 0;
  int64_t capacity = 0;
  CapacitySource capacity_source = CapacitySource::kFlag;
  int64_t events = 0;
  bool warm_start = false;  // the replays on the capacity started from the recorded state
  bool fit_warm = false;    // the fit searches (OomRemedy::fits_on) started from it (fit.h)
  int64_t preexisting_blocks = 0;
  int64_t preexisting_bytes = 0;
  int64_t recorded_ooms = 0;  // oom entries in the trace
  /// Peak of live requested bytes the trace recorded (its own run), and where.
  int64_t trace_peak_live = 0;
  TimelinePoint trace_peak_event;
  int64_t trace_peak_time_us = kNoTime;  // of trace_peak_event; kNoTime at the start or untimed
  int64_t start_time_us = kNoTime;       // the device's first event's time
  /// What is live at that peak by category (site empty), largest first: what has to shrink when
  /// the peak itself does not fit. Empty without the device's lifetimes.
  std::vector<OomHolder> peak_categories;
  /// What kind of run the device's stacks show (DetectWorkload): which levers apply (activation
  /// checkpointing needs a backward pass; a KV cache is a generation run's).
  WorkloadEvidence workload;
  /// When no setting fits: the largest share s (to within 1/128) such that the trace replays on
  /// the capacity under the recorded settings with every allocation that grows with the batch
  /// (activation, temporary, input: the attribution model's categories) at s times its size, and
  /// the rest (parameters, gradients, optimizer state, and whatever was allocated before the
  /// trace) as recorded. 0: not even with none of them. nullopt: not searched (a setting fits,
  /// no lifetimes, OomOptions::batch_search off, or no such allocation).
  std::optional<double> batch_share_fits;
  /// Set when last step's gradients are alive in the forward pass of the live peak (needs the
  /// device's lifetimes): the zero_grad lever, replayed.
  std::optional<ZeroGradLever> zero_grad;
  /// The recorded settings first, then every candidate, in order.
  std::vector<OomRemedy> remedies;
  /// Index into `remedies` of the candidate (not the recorded settings) that fits with the lowest
  /// peak reserved, the first of equals; -1 when none fits. `fitting_candidates`: how many fit.
  int best_fitting = -1;
  int fitting_candidates = 0;
  /// Index into `remedies` of the setting with the smallest `fits_on` (SmallestFitIndex, fit.h):
  /// the recorded settings unless a candidate needs kFitMinGain less; -1 when nothing was
  /// searched or found.
  int smallest_fit = -1;
  /// When an allocation fails on the capacity: the answer (nullopt when every allocation fits).
  std::optional<OomAnswer> answer;
  /// Failed allocations of the replay on the capacity after the first kMaxExplainedOoms.
  int64_t unexplained_ooms = 0;
  bool fits() const { return !remedies.empty() && remedies[0].fits; }
};

struct OomReport {
  std::string file;
  CategoryNames categories;  // what the holders' categories are named (OomOptions::categories)
  std::optional<int64_t> device_memory;  // --device-memory
  std::vector<OomDevice> devices;
  std::vector<OomExplanation> ooms;  // by device, then trace order
  /// Devices with a trace left out: no oom entry to imply a capacity, and no --device-memory.
  std::vector<int32_t> devices_without_capacity;
  /// Devices whose oom entry implies a capacity that cannot be right (not above 0, or read where
  /// the dumped segments do not explain the trace): the capacity it implied. Also listed in
  /// devices_without_capacity.
  struct RejectedCapacity {
    int32_t device = 0;
    int64_t implied = 0;
    std::string why;  // "it is not above zero", "the trace itself reserves 21.8 GiB after event:N"
  };
  std::vector<RejectedCapacity> rejected_capacities;
};

/// Replays every device (in parallel: one thread per device and setting) and explains its OOMs.
/// Errors (FailedPrecondition): no trace; no capacity (no credible oom entry and no device_memory).
/// InvalidArgument: a candidate that does not parse.
absl::StatusOr<OomReport> ExplainOoms(const Snapshot& snapshot, const OomOptions& options);

/// The verdict from an explanation's figures (capacity, allocated, rounded, segment_bytes,
/// device_free, free, stream...), and the figures it rests on (usable_capacity, free_bytes,
/// shortfall, largest_free_block, max_split_size): a pure function, for the tests.
void JudgeOom(const sim::AllocatorConfig& config, OomExplanation& oom);

}  // namespace memsnap::analysis
