// The single-file page's data: every device's timeline and allocator states, the site tables and
// the replay curves, written out from the finished analyses (analysis/compose/report_analysis.h).
#include "absl/strings/str_cat.h"
#include "memsnap/report/html_report.h"
#include "memsnap/report/oom_render.h"
#include "memsnap/report/replay_render.h"
#include "memsnap/util/format.h"
#include "report/html_report_internal.h"

namespace memsnap::report {

using internal::Json;

namespace {

Json ReplayJson(const analysis::ReportAnalysis& a) {
  if (!a.replay) return Json(nullptr);
  const analysis::ReplayReport& rep = *a.replay;
  Json j;
  j["device"] = rep.device;
  j["notes"] = ReplayNotes(rep);
  Json runs = Json::array();
  for (size_t i = 0; i < rep.results.size(); ++i) {
    const analysis::ConfigResult& r = rep.results[i];
    Json run;
    run["conf"] = r.config.label;
    run["peak_reserved"] = r.peak_reserved;
    run["peak_allocated"] = r.peak_allocated;
    run["cuda_mallocs"] = r.cuda_mallocs;
    run["ooms"] = r.ooms.size();
    // Fragmentation in one meaning on the page, `frag`'s: the share of reserved memory stranded
    // (free blocks inside segments that hold allocations: the inactive split bytes) at the peak.
    const double stranded = r.peak_reserved > 0 ? static_cast<double>(r.inactive_split_at_peak) /
                                                      static_cast<double>(r.peak_reserved)
                                                : 0.0;
    std::string note = absl::StrCat(r.cuda_mallocs, " cudaMalloc, fragmentation at peak ",
                                    FormatPercent(stranded), " stranded");
    if (!r.ooms.empty()) absl::StrAppend(&note, ", ", r.ooms.size(), " OOM");
    run["note"] = note;
    if (i < a.replay_curves.size() && !a.replay_curves[i].x.empty()) {
      run["curve"] = Json{{"x", a.replay_curves[i].x}, {"reserved", a.replay_curves[i].reserved}};
    }
    runs.push_back(std::move(run));
  }
  j["runs"] = std::move(runs);
  return j;
}

// The device's OOM answer (report::OomAnswerLines, as `memsnap oom` opens with): [{"label",
// "text"}]; empty without an OOM on the device.
Json OomAnswerJson(const analysis::ReportAnalysis& a, int32_t device) {
  Json lines = Json::array();
  if (!a.oom) return lines;
  for (const analysis::OomDevice& d : a.oom->devices) {
    if (d.device != device) continue;
    for (const OomAnswerLine& l : OomAnswerLines(*a.oom, d)) {
      lines.push_back({{"label", l.label}, {"text", l.text}});
    }
  }
  return lines;
}

// What the device needs: the smallest memory its run fits on under the recorded settings (the one
// fit answer, analysis/allocator/fit.h; `oom`'s and `check --fits`'s figure) and the start its
// replays took; null on a device without an OOM (nothing was searched).
Json NeedsJson(const analysis::ReportAnalysis& a, int32_t device) {
  if (!a.oom) return Json(nullptr);
  for (const analysis::OomDevice& d : a.oom->devices) {
    if (d.device != device || d.remedies.empty() || d.remedies[0].fits_on <= 0) continue;
    return Json{{"bytes", d.remedies[0].fits_on}, {"start", d.fit_warm ? "recorded" : "cold"}};
  }
  return Json(nullptr);
}

// The card's memory the OOM analysis judges against (`memsnap oom`'s usable capacity: the
// capacity, capped by the recorded per-process memory fraction), for the timeline's capacity
// line; null on a device without an OOM.
Json CapacityJson(const analysis::ReportAnalysis& a, int32_t device) {
  if (!a.oom) return Json(nullptr);
  for (const analysis::OomExplanation& o : a.oom->ooms) {
    if (o.device != device || o.usable_capacity <= 0) continue;
    return Json{{"bytes", o.usable_capacity},
                {"what", o.usable_capacity < o.capacity ? "usable memory" : "the card's memory"}};
  }
  return Json(nullptr);
}

}  // namespace

Json BuildReportData(const Snapshot& snap, const analysis::ReportAnalysis& a) {
  internal::StackTableJson stacks(snap, *a.frames);
  Json j;
  j["mode"] = "single";
  j["file"] = internal::FileJson(snap);
  Json devices = Json::array();
  for (const analysis::DeviceReportAnalysis& d : a.devices) {
    const analysis::DeviceTimeline& dt = a.timeline.devices[d.timeline_index];
    Json dj = internal::TimelineJson(snap, dt, d, a.categories, stacks);
    dj["states"] = internal::StatesJson(snap, dt, d, stacks);
    dj["oom_answer"] = OomAnswerJson(a, d.device);
    dj["capacity"] = CapacityJson(a, d.device);
    dj["needs"] = NeedsJson(a, d.device);
    devices.push_back(std::move(dj));
  }
  j["devices"] = std::move(devices);
  if (!a.other_devices.empty()) {
    // Past kReportDrawnDevices: a column each (100,000 rows as objects would repeat every key).
    Json device = Json::array(), events = Json::array(), peak_live = Json::array(),
         peak_reserved = Json::array(), end_live = Json::array(), end_reserved = Json::array();
    for (const analysis::OtherDevice& o : a.other_devices) {
      device.push_back(o.device);
      events.push_back(o.events);
      peak_live.push_back(o.peak_live_bytes);
      peak_reserved.push_back(o.peak_reserved_bytes);
      end_live.push_back(o.end_live_bytes);
      end_reserved.push_back(o.end_reserved_bytes);
    }
    j["other_devices"] = {{"drawn_at_most", analysis::kReportDrawnDevices},
                          {"device", std::move(device)},
                          {"events", std::move(events)},
                          {"peak_live", std::move(peak_live)},
                          {"peak_reserved", std::move(peak_reserved)},
                          {"end_live", std::move(end_live)},
                          {"end_reserved", std::move(end_reserved)}};
  }
  j["peak_sites"] = internal::SiteTableJson(a.peak_sites, a.categories, stacks);
  j["alloc_sites"] = internal::SiteTableJson(a.alloc_sites, a.categories, stacks);
  j["replay"] = ReplayJson(a);
  j["band_sites"] = internal::BandSitesJson(a);
  j["category_names"] = internal::CategoryNamesJson(a.categories);
  j["category_rules"] = internal::CategoryRulesJson();
  j["frames"] = stacks.FramesJson();
  j["frame_kinds"] = stacks.FrameKindsJson();
  j["stacks"] = stacks.StacksJson();
  return j;
}

}  // namespace memsnap::report
