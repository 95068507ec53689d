// `memsnap summary`: counts and totals of a snapshot, per device, pool and stream.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/attribution/workload.h"
#include "memsnap/analysis/timeline/event_index.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/window.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

struct SummaryOptions {
  /// Find each device's peaks (one timeline pass) and name the site of each oom entry.
  bool peaks = true;
  /// Threads for the pass over each device's events (0: every core); the report is the same.
  int threads = 1;
  /// Events a thread takes at least (fewer threads for a shorter trace): below about a million
  /// (40 MB of them), starting a thread costs more than it saves. Tests set it low.
  size_t min_events_per_thread = size_t{1} << 20;
  /// Count over each device's events in a pass of Summarize's own even where the timeline it is
  /// given counted them (DeviceTimeline::counts). Tests hold the two reports equal.
  bool own_pass = false;
  /// Also each device's peak per phase of a step (DeviceSummary::phase_peaks), where the timeline
  /// has its live curve and the trace runs a model.
  bool phase_peaks = false;
  /// Also each device's workload and its evidence (DeviceSummary::workload, workload.h).
  bool workload = false;
};

/// The allocator settings as text, one row per setting, in the words of PYTORCH_CUDA_ALLOC_CONF
/// ("max_split_size" -> "unlimited" or "512.0 MiB"): what summary shows and diff compares.
struct SettingText {
  std::string name;
  std::string value;
  bool is_default = true;  // the value PyTorch uses when the setting is not given
};
std::vector<SettingText> DescribeSettings(const AllocatorSettings& settings);

/// Figures summed over a set of segments/blocks/events. Byte figures follow `_memory_viz stats`:
/// reserved = Σ segment total_size; allocated = Σ size of active_allocated blocks;
/// active = Σ size of blocks not inactive; requested = Σ requested_size of active blocks.
struct Totals {
  int64_t segments = 0;
  int64_t blocks = 0;
  int64_t reserved_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t active_bytes = 0;
  int64_t requested_bytes = 0;
  int64_t inactive_bytes = 0;  // cached free bytes
  int64_t trace_entries = 0;
  std::array<int64_t, kNumActions> actions{};
  Totals& operator+=(const Totals& o);
};

struct PoolSummary {
  PoolId pool;
  bool is_small = false;
  Totals totals;
};

struct StreamSummary {
  int64_t stream = 0;
  Totals totals;
};

/// The peaks of one device's trace (the timeline's): value, device-local event, time.
struct TracePeaks {
  int64_t live_bytes = 0;  // live requested bytes
  TimelinePoint live_event;
  int64_t live_time_us = kNoTime;
  int64_t reserved_bytes = 0;
  TimelinePoint reserved_event;
  int64_t reserved_time_us = kNoTime;
};

/// The most live bytes while the program was in one phase of a step (docs/attribution.md, "Phases
/// of a step"): the phase of the phase run holding the event (LifetimeCategorizer::PhaseAtEvent).
struct PhasePeak {
  StepPhase phase = StepPhase::kOther;
  int64_t live_bytes = 0;
  TimelinePoint event;  // the first event of the phase at that value
  int64_t time_us = kNoTime;
};

/// The most live bytes within one training step (StepsByPhases), at its first event.
struct StepPeak {
  StepRange range;  // the step
  int64_t live_bytes = 0;
  TimelinePoint event;
  int64_t time_us = kNoTime;
};

/// An `oom` entry of the trace, as recorded.
struct SummaryOom {
  uint32_t event = 0;  // device-local
  int64_t time_us = kNoTime;
  int64_t requested = 0;  // the rounded size the entry records
  int64_t device_free = 0;
  int64_t stream = 0;
  std::string site;
  /// From the timeline, when Summarize had one: the live bytes when the entry was recorded
  /// (rounded as the allocator's blocks are), and what the process could use then (reserved +
  /// device_free, as `oom` and `replay` imply the capacity). Live + requested above the capacity
  /// is demand: no allocator setting places the request.
  std::optional<int64_t> live_bytes;
  int64_t capacity = 0;
  bool demand() const { return live_bytes && *live_bytes + requested > capacity; }
};

struct DeviceSummary {
  int32_t device = 0;
  Totals totals;
  std::vector<PoolSummary> pools;      // sorted by (pool, small before large)
  std::vector<StreamSummary> streams;  // sorted by stream handle
  int64_t first_time_us = kNoTime;
  int64_t last_time_us = kNoTime;
  int64_t frees_without_alloc = 0;  // frees whose alloc is older than the trace window
  int64_t ghost_blocks = 0;         // live blocks at the end whose alloc is not in the trace
  /// Why the trace frees blocks it never allocated (read only when frees_without_alloc > 0).
  TraceStart trace_start = TraceStart::kMidRun;
  int64_t ghost_bytes = 0;
  int64_t segments_expandable = 0;
  /// What the trace does not explain of the final state, as the timeline's one model reads it
  /// (DeviceTimeline; docs/figures.md, "When the trace does not explain the state"). Zero on a
  /// consistent trace; filled with the peaks.
  struct Unexplained {
    int64_t unplaced_frees = 0, unplaced_free_bytes = 0;  // left out of every figure
    int64_t first_unplaced_free = -1;                     // device-local event
    int64_t beyond_end_blocks = 0, beyond_end_bytes = 0;  // live to the end, not in the state
    int64_t unreconciled_bytes = 0;                       // in the state, live from the start
    int64_t live_over_reserved = 0;  // the most live exceeds reserved by: a self-contradiction
    bool any() const {
      return unplaced_frees + beyond_end_bytes + unreconciled_bytes + live_over_reserved > 0;
    }
  } unexplained;
  std::optional<TracePeaks> peaks;  // devices with a trace, with SummaryOptions::peaks
  /// SummaryOptions::phase_peaks: one per phase the trace shows, in StepPhase order; empty when
  /// the trace runs no model (no forward, backward or optimizer allocation).
  std::vector<PhasePeak> phase_peaks;
  /// SummaryOptions::phase_peaks: the peak of each training step when the trace holds two or more
  /// (StepsByPhases), and how they were found ("optimizer steps", "backward passes").
  std::vector<StepPeak> step_peaks;
  std::string steps_method;
  /// SummaryOptions::phase_peaks: the trace runs one forward pass and nothing repeats as a step
  /// does (HoldsOneForwardPass): no steps, and the reason.
  bool one_forward_pass = false;
  std::vector<SummaryOom> ooms;
  /// SummaryOptions::workload: what kind of run the device's stacks show, and why.
  std::optional<WorkloadEvidence> workload;
};

struct SummaryReport {
  SourceInfo source;
  Totals totals;
  int64_t unique_stacks = 0;
  int64_t unique_frames = 0;
  int64_t annotations = 0;
  std::vector<DeviceSummary> devices;  // ascending device
  AllocatorSettings settings;
  /// allocator_settings.trace_alloc_overflowed is set: the ring buffer lost its oldest events.
  /// With the devices' frees_without_alloc, ghost_blocks and trace_start, the findings
  /// report::SummaryWarnings writes in words.
  bool ring_overflowed = false;
  /// What the reader clamped, dropped, reconciled or guessed (Snapshot::diagnostics), as the read
  /// printed it on stderr (Diagnostics::Shown): `summary --json` lists these first in `warnings`.
  std::vector<std::string> read_warnings;
};

/// Counts and totals of `snapshot`; with SummaryOptions::peaks it rebuilds the timeline for them
/// (SummaryTimelineOptions()).
SummaryReport Summarize(const Snapshot& snapshot, const SummaryOptions& options = {});

/// Each phase's peak on one device (PhasePeak, in StepPhase order, the phases its trace shows);
/// empty when the timeline was built without its live curve or the trace runs no model.
std::vector<PhasePeak> PhasePeaks(const Snapshot& snapshot, const DeviceTimeline& dt);

/// The peak of each training step of one device (StepPeak); empty without the live curve or when
/// the trace holds fewer than two steps.
std::vector<StepPeak> StepPeaks(const Snapshot& snapshot, const DeviceTimeline& dt,
                                std::string* method);

/// The timeline Summarize rebuilds for the peaks, for a caller that rebuilds it during the read
/// (cli::LoadWithTimeline). Every timeline of all devices has the same peaks, whatever it keeps.
TimelineOptions SummaryTimelineOptions();

/// Summarize with the snapshot's timeline already rebuilt for every device (any KeepLifetimes,
/// with or without the curve): the peaks come from it, and so do the counts over each device's
/// trace (DeviceTimeline::counts) instead of a pass over the events of its own; the report is the
/// same either way. nullptr (a timeline that failed) leaves the peaks unknown, as in Summarize.
SummaryReport Summarize(const Snapshot& snapshot, const Timeline* timeline,
                        const SummaryOptions& options = {});

}  // namespace memsnap::analysis
