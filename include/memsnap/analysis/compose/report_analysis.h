// Everything the HTML report shows, computed before any of it is rendered: `memsnap report` calls
// AnalyzeForReport (or AnalyzeDiffForReport) and hands the result to report::BuildReportData,
// which only writes it out (docs/report.md).
//
// clang-format off
//   Snapshot ──AnalyzeForReport──> ReportAnalysis
//                                  ├── timeline      lifetimes, reserved steps (timeline.h)
//                                  ├── devices[]     per device with a timeline:
//                                  │     ├── lod     zoomable curves and bands (timeline_lod.h)
//                                  │     └── states  allocator states (alloc_states.h)
//                                  ├── peak_sites    alive at each device's peak, by site
//                                  ├── alloc_sites   allocated over the trace, by site
//                                  └── replay        curves under other settings (replay.h)
// clang-format on
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/alloc_states.h"
#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/analysis/allocator/replay.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/timeline_lod.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// The most trace events (all devices of a file) whose every change the page carries: about 50
/// bytes an event, so at most about 3 MB on a page (docs/report.md).
inline constexpr int64_t kStateStreamMaxEvents = 60000;

/// The most devices the page draws in full (timeline, bands, allocator states, kinds of memory)
/// when a file has more: those with the largest reserved peaks, and every device with an OOM
/// besides; the others are a row each of ReportAnalysis::other_devices (issue 54).
inline constexpr size_t kReportDrawnDevices = 64;

struct ReportAnalysisOptions {
  LodOptions lod;  // curve columns and bands
  /// kReportDrawnDevices: past it, the devices drawn in full (DrawnDevices).
  size_t max_drawn_devices = kReportDrawnDevices;
  /// How many allocator states the page keeps; 16 events either side of each labelled moment
  /// (the peaks, the OOM, the end) so that the page can step through them event by event; and
  /// every event's change when the file's traces have at most stream_max_events events in all
  /// (the page then shows the state after any event exactly).
  AllocatorStatesOptions states = [] {
    AllocatorStatesOptions o;
    o.around = 16;
    o.stream_max_events = kStateStreamMaxEvents;
    return o;
  }();
  int top_sites = 25;  // rows of the site tables (the tail folds into "[N others]"); 0 = all
  GroupOptions group;  // how sites are keyed (frame filters, depth)
  /// PYTORCH_CUDA_ALLOC_CONF strings to replay the trace under (besides the recorded settings).
  std::vector<std::string> replay_confs;
  bool with_states = true;  // the diff page leaves the allocator states and sites out
  bool with_sites = true;
  /// The steps: the single page draws them over the timeline, the diff page aligns the two
  /// timelines on them.
  bool with_steps = true;
};

/// Live memory by category (attribution.h) across one device's trace: one sample per stored column
/// of the timeline's coarsest level, taken at the column's highest live point (its sample event),
/// so the stacked categories reach the drawn live curve's highest line; and at the peak.
struct ReportCategories {
  std::vector<int64_t> column;         // the sampled columns (level-0 bucket indices), ascending
  std::vector<CategoryBytes> columns;  // live bytes per category at each column's sample event
  CategoryBytes peak{};                // at the drawn curve's peak (TimelineLod::peak_event)
  /// The same for the zoom (issue 36 §2), per stored tile of the deeper levels: one sample per
  /// group of kGroup buckets, at the sample event of the group's highest bucket, so that the
  /// stacked kinds reach the highest line the timeline draws over the group and never pass it.
  /// A group followed by a group without events gets a second sample at its end: the state its
  /// last bucket carries on.
  static constexpr int kGroup = 4;
  struct Tile {
    int level = 0;
    int64_t tile = 0;
    std::vector<int64_t> column;  // bucket indices of the level where each sample starts
    std::vector<CategoryBytes> columns;
  };
  std::vector<Tile> tiles;
};

/// A range of the program's annotations (record_function and friends: the trace's
/// external_annotations), paired START to END by name, the innermost open one first.
struct AnnotationRegion {
  std::string name;
  int64_t begin_us = 0, end_us = 0;  // times; an END never seen ends at the device's last time
  bool open = false;                 // its END was not recorded
};

struct DeviceReportAnalysis {
  int32_t device = 0;
  size_t timeline_index = 0;  // into ReportAnalysis::timeline.devices
  TimelineLod lod;
  AllocatorStates states;                 // empty without options.with_states
  std::vector<TimelinePoint> oom_events;  // the points just after the OOMs
  /// The device's training steps, when found: DetectSteps with the default options, as
  /// `--at step:N` finds them (with_steps).
  StepInfo steps;
  /// The device's annotation regions, in order of their begin (a trace with times).
  std::vector<AnnotationRegion> annotations;
  /// Categories over time and at the peak (with_sites, devices with events).
  std::optional<ReportCategories> categories;
  /// Per band (parallel to lod.bands): its site, an index into ReportAnalysis::band_sites, and its
  /// lifetime's category and the rule that decided it: what a band's hover leads with.
  std::vector<uint32_t> band_site;
  std::vector<Category> band_category;
  std::vector<CategoryRule> band_rule;
  /// The bands whose alloc entry carries `user_metadata` or `compile_context` (AllocExtraOf), by
  /// band index, ascending; empty strings where one of the two is absent.
  struct BandExtra {
    uint32_t band = 0;
    std::string user_metadata, compile_context;
  };
  std::vector<BandExtra> band_extras;
  /// What kind of run the device's stacks show (DetectWorkload), said in the device's header.
  std::optional<WorkloadEvidence> workload;
};

/// A site table: rows sorted by bytes, the tail folded into one "[N others]" row.
struct SiteTable {
  std::string moment;  // "peak" or "end" (peak_sites); empty for alloc_sites
  int64_t total_bytes = 0, total_count = 0;
  std::vector<GroupRow> rows;
};

/// One replay run's reserved curve, at its change points, in the x units of the device's lod.
struct ReplayCurve {
  std::vector<double> x;
  std::vector<int64_t> reserved;
};

/// A device the page lists in a row instead of drawing (past max_drawn_devices): its figures.
struct OtherDevice {
  int32_t device = 0;
  int64_t events = 0;
  int64_t peak_live_bytes = 0, peak_reserved_bytes = 0;  // the timeline's peaks
  int64_t end_live_bytes = 0, end_reserved_bytes = 0;
};

/// The timeline devices (indices into timeline.devices, ascending) drawn in full: all of them up
/// to `max` devices; past it the `max` with the largest reserved peaks (ties: the larger live
/// peak, then the lower device) and every device with an OOM.
std::vector<size_t> DrawnDevices(const Snapshot& snap, const Timeline& timeline, size_t max);

struct ReportAnalysis {
  /// Every lifetime, without the live curve (DeviceTimeline::live_net is empty): each device's
  /// `lod` holds what the page draws of it.
  Timeline timeline;
  /// Sites and categories of this snapshot's stacks (attribution.h), as every table above used
  /// them. Holds a reference to the snapshot.
  std::unique_ptr<GroupContext> context;
  /// What the page's categories are named (options.group.categories, the session's).
  CategoryNames categories;
  /// The frame filter of options.group (--hide, --keep, --python-only), for the stacks the page
  /// lists (copy it to use it: it caches).
  std::optional<FrameFilter> frames;
  std::vector<DeviceReportAnalysis> devices;  // ascending device: the drawn ones (DrawnDevices)
  /// The devices not drawn (past options.max_drawn_devices), ascending; empty up to it.
  std::vector<OtherDevice> other_devices;
  SiteTable peak_sites;   // each device at the peak of its drawn curve (counted lifetimes)
  SiteTable alloc_sites;  // every lifetime counts once
  /// The labels of the bands' sites (every device's), distinct among them (SiteLabels: the rules
  /// of `top`'s labels; a block allocated before the trace is "[allocated before the trace]").
  std::vector<std::string> band_sites;
  std::optional<ReplayReport> replay;
  std::vector<ReplayCurve> replay_curves;  // one per replay.results entry
  /// The OOMs the trace recorded, explained as `memsnap oom FILE` does (on the capacity each
  /// device's first oom entry implies); nullopt when the trace has none (or the diff page).
  std::optional<OomReport> oom;
};

/// Runs every analysis behind the single-file page. Errors: a filter regex or a --replay
/// configuration that does not parse, a replay that fails.
absl::StatusOr<ReportAnalysis> AnalyzeForReport(const Snapshot& snap,
                                                const ReportAnalysisOptions& options);

struct DiffReportAnalysis {
  ReportAnalysis before, after;  // curves, bands and steps of each file
  DiffReport diff;               // sites at the peak (or the end), scopes, settings
};

/// Runs every analysis behind the diff page.
absl::StatusOr<DiffReportAnalysis> AnalyzeDiffForReport(const Snapshot& before,
                                                        const Snapshot& after,
                                                        const ReportAnalysisOptions& options);

}  // namespace memsnap::analysis
