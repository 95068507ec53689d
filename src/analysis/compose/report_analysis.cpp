// The analyses behind `memsnap report` (report_analysis.h), run in one place so the report layer
// only writes out what they found.
#include "memsnap/analysis/compose/report_analysis.h"

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <numeric>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/sim/config.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

namespace {

// START/END annotations of one device paired by name, the innermost open one first (as the
// Perfetto export pairs them); an END without a START is left out, a START without an END runs to
// the device's last annotation or event time.
std::vector<AnnotationRegion> AnnotationRegionsOf(const Snapshot& snap, int32_t device) {
  std::vector<const Annotation*> list;
  for (const Annotation& a : snap.annotations) {
    if (a.device == device && a.time_us != kNoTime) list.push_back(&a);
  }
  std::stable_sort(list.begin(), list.end(), [](const Annotation* a, const Annotation* b) {
    return a->time_us < b->time_us;
  });
  std::vector<AnnotationRegion> out;
  std::map<std::string_view, std::vector<int64_t>> open;
  int64_t last = kNoTime;
  if (const DeviceTrace* t = snap.TraceOf(device); t != nullptr) {
    for (const TraceEvent& e : snap.EventsOf(*t)) last = std::max(last, e.time_us);
  }
  for (const Annotation* a : list) {
    const std::string_view stage = a->stage.valid() ? snap.strings.Get(a->stage) : "";
    const std::string_view name = a->name.valid() ? snap.strings.Get(a->name) : "";
    last = std::max(last, a->time_us);
    if (stage == "START") {
      open[name].push_back(a->time_us);
    } else if (auto it = open.find(name); it != open.end() && !it->second.empty()) {
      out.push_back({std::string(name), it->second.back(), a->time_us, false});
      it->second.pop_back();
    }
  }
  for (const auto& [name, starts] : open) {
    for (int64_t b : starts) out.push_back({std::string(name), b, std::max(b, last), true});
  }
  std::stable_sort(
      out.begin(), out.end(),
      [](const AnnotationRegion& a, const AnnotationRegion& b) { return a.begin_us < b.begin_us; });
  return out;
}

std::vector<TimelinePoint> OomEvents(const Snapshot& snap, const DeviceTimeline& dt) {
  std::vector<TimelinePoint> out;
  for (uint32_t i = 0; i < dt.num_events; ++i) {
    if (snap.events[dt.event_begin + i].action == Action::kOom)
      out.push_back(TimelinePoint::After(i));
  }
  return out;
}

SiteTable Finish(std::vector<GroupRow> rows, int top) {
  SiteTable t;
  SortAndMergeRows(rows);
  // Only the rows shown get labels (the tail folds into "[N others]"), each the label the whole
  // table would give it.
  if (top > 0) {
    LabelTopRows(rows, static_cast<size_t>(top));
  } else {
    LabelRows(rows);
  }
  for (const GroupRow& r : rows) {
    t.total_bytes += r.bytes;
    t.total_count += r.count;
  }
  if (top > 0) CollapseTail(rows, static_cast<size_t>(top));  // 0: every row
  t.rows = std::move(rows);
  return t;
}

absl::Status AddReplay(const Snapshot& snap, const ReportAnalysisOptions& options,
                       ReportAnalysis& out) {
  if (options.replay_confs.empty()) return absl::OkStatus();
  // The recorded settings first (what the other runs are compared with), then each --replay.
  std::vector<ReplayConfig> configs;
  configs.push_back({"recorded", sim::ConfigFromSettings(snap.settings)});
  for (const std::string& conf : options.replay_confs) {
    absl::StatusOr<sim::AllocatorConfig> parsed = sim::ParseAllocatorConf(conf);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--replay ", conf, ": ", std::string(parsed.status().message())));
    }
    configs.push_back({conf, *parsed});
  }
  ReplayOptions ro;
  ro.curve = true;
  ASSIGN_OR_RETURN(ReplayReport rep, Replay(snap, configs, ro));
  const DeviceReportAnalysis* dev = nullptr;
  for (const DeviceReportAnalysis& d : out.devices) {
    if (d.device == rep.device) dev = &d;
  }
  const DeviceTimeline* dt = out.timeline.Find(rep.device);
  for (const ConfigResult& r : rep.results) {
    ReplayCurve c;
    if (dev != nullptr && dt != nullptr) {
      for (const CurvePoint& p : r.curve) {
        c.x.push_back(p.event == kPreexistingEvent
                          ? 0.0
                          : dev->lod.EventX(snap, *dt, TimelinePoint::After(p.event)));
        c.reserved.push_back(p.reserved);
      }
    }
    out.replay_curves.push_back(std::move(c));
  }
  out.replay = std::move(rep);
  return absl::OkStatus();
}

ReportCategories CategoriesOverTime(GroupContext& context, const DeviceTimeline& dt,
                                    const TimelineLod& lod) {
  ReportCategories out;
  // Level 0's columns at their highest point; a column followed by columns without events also
  // gives the state it carries on (its last event) at the next column, as the timeline draws it:
  // held over that gap, its highest point would rise above the curve.
  std::vector<std::pair<int64_t, TimelinePoint>> level0;
  for (const LodTile& t : lod.tiles) {
    if (t.level != 0) continue;
    for (size_t k = 0; k < t.buckets.size(); ++k) {
      const LodBucket& b = t.buckets[k];
      level0.emplace_back(b.index, b.sample_event);
      const int64_t next = k + 1 < t.buckets.size() ? t.buckets[k + 1].index : lod.columns;
      if (next > b.index + 1) level0.emplace_back(b.index + 1, b.last_event);
    }
  }
  // The deeper tiles' samples: per group of kGroup buckets, the highest bucket's sample event,
  // and the group's last state when the next group has no events.
  const int64_t group = ReportCategories::kGroup;
  std::vector<std::vector<TimelinePoint>> tile_points;
  for (const LodTile& t : lod.tiles) {
    if (t.level == 0) continue;
    ReportCategories::Tile out_tile;
    out_tile.level = t.level;
    out_tile.tile = t.tile;
    std::vector<TimelinePoint> tp;
    const int64_t first = t.tile * lod.columns, end = first + lod.columns;
    for (size_t k = 0; k < t.buckets.size();) {
      const int64_t g = (t.buckets[k].index - first) / group;
      const LodBucket* best = &t.buckets[k];
      size_t q = k;
      for (; q < t.buckets.size() && (t.buckets[q].index - first) / group == g; ++q) {
        if (t.buckets[q].live_max > best->live_max) best = &t.buckets[q];
      }
      out_tile.column.push_back(first + g * group);
      tp.push_back(best->sample_event);
      const int64_t group_end = first + (g + 1) * group;
      const bool next_empty =
          q == t.buckets.size() ? group_end < end : t.buckets[q].index >= group_end + group;
      if (next_empty && group_end < end) {
        out_tile.column.push_back(group_end);
        tp.push_back(t.buckets[q - 1].last_event);
      }
      k = q;
    }
    out.tiles.push_back(std::move(out_tile));
    tile_points.push_back(std::move(tp));
  }
  // Sample events ascend with the columns but for the initial state; sort to sample once.
  std::vector<TimelinePoint> points;
  for (const auto& [column, p] : level0) points.push_back(p);
  for (const std::vector<TimelinePoint>& tp : tile_points) {
    points.insert(points.end(), tp.begin(), tp.end());
  }
  points.push_back(lod.peak_event);
  std::sort(points.begin(), points.end());
  points.erase(std::unique(points.begin(), points.end()), points.end());
  // The lifetimes the page's live curve counts, and only those: kinds of memory then add up to
  // that curve and are never negative, even on a trace that cannot be reconciled. Sampled
  // without the curve's per-event arrays (175 MB on the 19.5 M-event benchmark file).
  std::vector<CategoryBytes> sampled =
      SampleCountedCategories(context, dt, lod.counted.counted, points);
  auto at = [&](TimelinePoint p) {
    return sampled[std::lower_bound(points.begin(), points.end(), p) - points.begin()];
  };
  for (const auto& [column, p] : level0) {
    out.column.push_back(column);
    out.columns.push_back(at(p));
  }
  out.peak = at(lod.peak_event);
  for (size_t i = 0; i < out.tiles.size(); ++i) {
    for (TimelinePoint p : tile_points[i]) out.tiles[i].columns.push_back(at(p));
  }
  return out;
}

}  // namespace

std::vector<size_t> DrawnDevices(const Snapshot& snap, const Timeline& timeline, size_t max) {
  const std::vector<DeviceTimeline>& devices = timeline.devices;
  std::vector<size_t> all(devices.size());
  std::iota(all.begin(), all.end(), size_t{0});
  if (devices.size() <= max) return all;
  std::vector<size_t> by_peak = all;
  auto larger = [&](size_t a, size_t b) {
    const DeviceTimeline &x = devices[a], &y = devices[b];
    if (x.peak_reserved != y.peak_reserved) return x.peak_reserved > y.peak_reserved;
    if (x.peak_requested != y.peak_requested) return x.peak_requested > y.peak_requested;
    return x.device < y.device;
  };
  std::partial_sort(by_peak.begin(), by_peak.begin() + static_cast<std::ptrdiff_t>(max),
                    by_peak.end(), larger);
  std::vector<uint8_t> drawn(devices.size(), 0);
  for (size_t k = 0; k < max; ++k) drawn[by_peak[k]] = 1;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!drawn[i] && !OomEvents(snap, devices[i]).empty()) drawn[i] = 1;
  }
  std::vector<size_t> out;
  for (size_t i : all) {
    if (drawn[i]) out.push_back(i);
  }
  return out;
}

absl::StatusOr<ReportAnalysis> AnalyzeForReport(const Snapshot& snap,
                                                const ReportAnalysisOptions& options) {
  ReportAnalysis out;
  out.categories = options.group.categories;
  std::optional<ScopedTimer> phase;
  phase.emplace("report: timeline");
  ASSIGN_OR_RETURN(out.timeline, ReconstructTimeline(snap));
  phase.emplace("report: frames' attribution");
  ASSIGN_OR_RETURN(out.context, GroupContext::Create(snap, options.group));
  phase.emplace("report: allocator states' table of frees");
  GroupContext& context = *out.context;
  // Past max_drawn_devices the page draws some devices and lists the others (issue 54): every
  // pass below over "the devices" is over the drawn ones.
  const std::vector<size_t> drawn =
      DrawnDevices(snap, out.timeline, std::max<size_t>(options.max_drawn_devices, 1));
  {
    std::vector<uint8_t> is_drawn(out.timeline.devices.size(), 0);
    for (size_t i : drawn) is_drawn[i] = 1;
    for (size_t i = 0; i < out.timeline.devices.size(); ++i) {
      if (is_drawn[i]) continue;
      const DeviceTimeline& dt = out.timeline.devices[i];
      out.other_devices.push_back({dt.device, dt.num_events, dt.peak_requested, dt.peak_reserved,
                                   dt.end_requested, dt.end_reserved});
    }
  }
  // The page's budget is for the file: devices with a trace share it.
  int64_t traced = 0;
  for (size_t i : drawn) traced += out.timeline.devices[i].num_events > 0 ? 1 : 0;
  const int64_t share = std::max<int64_t>(traced, 1);
  // The allocator states, on a second core from the start: they need only the moment the page's
  // live curve peaks, which on a consistent trace is the timeline's own peak (what
  // BuildTimelineLod takes as its peak_event), so they run beside the level-of-detail summary
  // rather than after it. Where the summary's counted peak turns out to be elsewhere, they are
  // taken again at it below.
  std::vector<std::vector<TimelinePoint>> ooms(out.timeline.devices.size());  // per device
  for (size_t i : drawn) ooms[i] = OomEvents(snap, out.timeline.devices[i]);
  std::vector<AllocatorStatesOptions> states_options(out.timeline.devices.size());
  std::vector<AllocatorStates> states(out.timeline.devices.size());
  std::vector<std::optional<TimelinePoint>> states_peak(out.timeline.devices.size());
  // Device i's options with the drawn curve's peak as their first moment.
  auto at_peak = [&](size_t i, TimelinePoint peak) {
    AllocatorStatesOptions o = states_options[i];
    o.moments.insert(o.moments.begin(), {peak, "peak live"});
    return o;
  };
  std::vector<std::future<AllocatorStates>> state_jobs;  // deferred: run by the worker below
  std::vector<size_t> state_of;                          // each job's device (timeline index)
  const SegmentsByDevice segments(snap);  // one sort for every device's states (issue 54)
  if (options.with_states) {
    // Every event's change only when the whole file's trace fits the budget (issue 36 §3).
    int64_t file_events = 0;
    for (size_t i : drawn) file_events += out.timeline.devices[i].num_events;
    for (size_t i : drawn) {
      const DeviceTimeline& dt = out.timeline.devices[i];
      AllocatorStatesOptions& so = states_options[i];
      so = options.states;
      so.segments = &segments;
      if (file_events > so.stream_max_events) so.stream_max_events = 0;
      so.max_spans = std::max<int64_t>(so.max_spans / share, 20000);
      for (TimelinePoint p : ooms[i]) so.moments.push_back({p, "OOM"});
      if (dt.num_events > 0) states_peak[i] = dt.peak_event;
      // Its table of frees built here: the worker thread's own heap could not reuse what this
      // thread freed (docs/BENCHMARKS.md, "`report` and `oom` within the file's size").
      state_jobs.push_back(std::async(
          std::launch::deferred, [&snap, &dt, o = states_peak[i] ? at_peak(i, *states_peak[i]) : so,
                                  freed = FreedLifetimes(dt)]() mutable {
            return ReconstructAllocatorStates(snap, dt, o, std::move(freed));
          }));
      state_of.push_back(i);
    }
  }
  // One worker thread runs the devices' states one after the other, then the sites and kinds of
  // memory once the summary is ready (below): in one thread, the sites reuse the heap the states
  // freed, where a thread of their own would add its heap to the peak (docs/BENCHMARKS.md).
  std::promise<void> summary_ready;
  std::function<void()> sites;  // set before summary_ready
  std::future<void> worker =
      std::async(std::launch::async, [&states, &sites, &state_of, jobs = std::move(state_jobs),
                                      ready = summary_ready.get_future()]() mutable {
        {
          ScopedTimer timer("report: allocator states (second core)");
          for (size_t k = 0; k < jobs.size(); ++k) states[state_of[k]] = jobs[k].get();
        }
        ready.wait();
        if (sites) {
          ScopedTimer timer("report: sites and kinds of memory (second core)");
          sites();
        }
      });
  // Never leaves the worker waiting: released on every way out of this function.
  struct Release {
    std::promise<void>& p;
    bool done = false;
    void operator()() {
      if (!done) p.set_value();
      done = true;
    }
    ~Release() { (*this)(); }
  } release{summary_ready};
  // Per device: the level-of-detail summary but its bands; then the bands on another core while
  // this one reads the summary for the sites and kinds of memory.
  phase.emplace("report: level of detail");
  std::vector<TimelineLodBuild> lods;  // parallel to out.devices
  for (size_t i : drawn) {
    const DeviceTimeline& dt = out.timeline.devices[i];
    DeviceReportAnalysis d;
    d.device = dt.device;
    d.timeline_index = i;
    d.oom_events = std::move(ooms[i]);
    LodOptions lod = options.lod;
    lod.max_buckets = std::max<int64_t>(lod.max_buckets / share, 20 * lod.columns);
    lod.max_band_lifetimes = std::max<int64_t>(lod.max_band_lifetimes / share, 4 * lod.bands);
    lod.focus_events.insert(lod.focus_events.end(), d.oom_events.begin(), d.oom_events.end());
    lods.emplace_back(snap, dt, lod);
    if (options.with_steps && dt.num_events > 0) {
      StepOptions so;
      so.device = dt.device;
      // No steps is an answer, not an error: the page then draws none.
      if (absl::StatusOr<StepInfo> steps = DetectSteps(snap, out.timeline, so); steps.ok()) {
        d.steps = *std::move(steps);
      }
    }
    if (dt.has_time) d.annotations = AnnotationRegionsOf(snap, dt.device);
    out.devices.push_back(std::move(d));
  }
  // The summary holds what the page draws of the live curve; nothing after it reads the
  // timeline's own (8 bytes an event, 156 MB of the 19.5 M-event benchmark file).
  for (DeviceTimeline& dt : out.timeline.devices) std::vector<int64_t>().swap(dt.live_net);
  // The sites and kinds of memory read the summary but its bands: the worker runs them while
  // this thread chooses the bands, whose larger allocations reuse what this thread freed.
  sites = [&] {
    if (options.with_sites) {
      // What was alive at each device's peak (the curve the page draws), by site.
      bool any_events = false;
      std::vector<GroupRow> rows;
      absl::flat_hash_map<std::string, uint32_t> index;  // rows by key, over every call
      for (size_t k = 0; k < out.devices.size(); ++k) {
        const DeviceTimeline& dt = out.timeline.devices[out.devices[k].timeline_index];
        const TimelineLod& lod = lods[k].lod();
        any_events = any_events || dt.num_events > 0;
        const TimelinePoint p = dt.num_events > 0 ? lod.peak_event : TimelinePoint::Start();
        std::vector<uint32_t> live;
        for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
          if (lod.counted.counted[i] && dt.blocks[i].LiveAt(p)) live.push_back(i);
        }
        AccumulateGroups(dt, live, context, rows, index);
      }
      // The devices not drawn, each at its timeline's peak: the table is every device's.
      std::vector<uint32_t> live;
      for (const OtherDevice& o : out.other_devices) {
        const DeviceTimeline& dt = *out.timeline.Find(o.device);
        any_events = any_events || dt.num_events > 0;
        const TimelinePoint p = dt.num_events > 0 ? dt.peak_event : TimelinePoint::Start();
        live.clear();
        for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
          if (dt.blocks[i].LiveAt(p)) live.push_back(i);
        }
        AccumulateGroups(dt, live, context, rows, index);
      }
      out.peak_sites = Finish(std::move(rows), options.top_sites);
      out.peak_sites.moment = any_events ? "peak" : "end";
      // Where memory is allocated over the whole trace (every lifetime counts once).
      std::vector<GroupRow> all_rows;
      index.clear();
      // In slices of lifetimes, not a list of them all (4 bytes a lifetime, 26 MB on the 19.5
      // M-event benchmark file, held beside the bands' choice).
      constexpr uint32_t kSlice = 1 << 16;
      std::vector<uint32_t> slice;
      for (const DeviceTimeline& dt : out.timeline.devices) {
        const uint32_t n = static_cast<uint32_t>(dt.blocks.size());
        for (uint32_t first = 0; first < n; first += kSlice) {
          slice.resize(std::min(kSlice, n - first));
          std::iota(slice.begin(), slice.end(), first);
          AccumulateGroups(dt, slice, context, all_rows, index);
        }
      }
      out.alloc_sites = Finish(std::move(all_rows), options.top_sites);
      // Memory by category over time and at the peak.
      for (size_t k = 0; k < out.devices.size(); ++k) {
        DeviceReportAnalysis& d = out.devices[k];
        const DeviceTimeline& dt = out.timeline.devices[d.timeline_index];
        if (dt.num_events > 0) d.categories = CategoriesOverTime(context, dt, lods[k].lod());
      }
    }
  };
  release();
  phase.emplace("report: bands");
  for (TimelineLodBuild& lod : lods) lod.ChooseBands();
  phase.emplace("report: waiting for the states and sites");
  worker.get();
  // A trace that ran out of memory: the page leads with why, what fits and what to cut.
  const bool any_oom =
      std::any_of(out.devices.begin(), out.devices.end(),
                  [](const DeviceReportAnalysis& d) { return !d.oom_events.empty(); });
  if (options.with_sites && any_oom) {
    phase.emplace("report: out-of-memory explanation");
    OomOptions oo;
    oo.timeline = &out.timeline;
    absl::StatusOr<OomReport> oom = ExplainOoms(snap, oo);
    if (oom.ok()) out.oom = *std::move(oom);  // else the page shows the markers alone
  }
  for (size_t k = 0; k < out.devices.size(); ++k) out.devices[k].lod = std::move(lods[k]).Take();
  lods.clear();
  // Each band's site and category, for its hover (the same labels and categories as `top`).
  phase.emplace("report: bands' sites");
  SiteLabels labels(context.attribution());
  for (DeviceReportAnalysis& d : out.devices) {
    const DeviceTimeline& dt = out.timeline.devices[d.timeline_index];
    for (const LodBand& band : d.lod.bands) {
      const BlockLifetime& b = dt.blocks[band.lifetime];
      const CategoryVerdict verdict = context.Categorize(dt, b);
      d.band_site.push_back(static_cast<uint32_t>(labels.Add(dt, b, verdict.rule)));
      d.band_category.push_back(verdict.category);
      d.band_rule.push_back(verdict.rule);
      if (const EventExtra* x = AllocExtraOf(snap, dt, b)) {
        DeviceReportAnalysis::BandExtra& e = d.band_extras.emplace_back();
        e.band = static_cast<uint32_t>(d.band_site.size() - 1);
        if (x->user_metadata.valid()) e.user_metadata = snap.strings.Get(x->user_metadata);
        if (x->compile_context.valid()) e.compile_context = snap.strings.Get(x->compile_context);
      }
    }
  }
  labels.Finish();
  for (size_t i = 0; i < labels.size(); ++i) out.band_sites.push_back(labels.Label(i));
  {
    absl::flat_hash_map<int32_t, DeviceReportAnalysis*> by_device;
    for (DeviceReportAnalysis& d : out.devices) by_device[d.device] = &d;
    for (WorkloadEvidence& w : DetectWorkloads(context.attribution())) {  // one pass for all
      if (auto it = by_device.find(w.device); it != by_device.end()) it->second->workload = w;
    }
  }
  phase.reset();
  for (DeviceReportAnalysis& d : out.devices) {
    if (!options.with_states) break;
    const size_t i = d.timeline_index;
    if (states_peak[i] && *states_peak[i] != d.lod.peak_event) {
      // The counted curve left lifetimes out: its peak is elsewhere (an inconsistent trace).
      states[i] =
          ReconstructAllocatorStates(snap, out.timeline.devices[i], at_peak(i, d.lod.peak_event));
    }
    d.states = std::move(states[i]);
  }
  out.frames = context.filter();
  RETURN_IF_ERROR(AddReplay(snap, options, out));
  return out;
}

absl::StatusOr<DiffReportAnalysis> AnalyzeDiffForReport(const Snapshot& before,
                                                        const Snapshot& after,
                                                        const ReportAnalysisOptions& options) {
  ReportAnalysisOptions side = options;
  side.with_states = false;
  side.with_sites = false;
  side.with_steps = true;
  side.replay_confs.clear();
  DiffReportAnalysis out;
  ASSIGN_OR_RETURN(out.before, AnalyzeForReport(before, side));
  ASSIGN_OR_RETURN(out.after, AnalyzeForReport(after, side));
  DiffOptions diff_options;
  diff_options.group = options.group;
  // Sites at the peak when both files can tell it, else at the end.
  bool peak = !before.events.empty() && !after.events.empty();
  diff_options.at = Moment{peak ? Moment::Kind::kPeak : Moment::Kind::kEnd, 0};
  ASSIGN_OR_RETURN(out.diff, DiffSnapshots(before, after, diff_options));
  return out;
}

}  // namespace memsnap::analysis
