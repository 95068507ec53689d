// The diff page's data: both files' timelines (curves, bands, steps), the sites before/after/delta
// from `memsnap diff`, scope totals and settings, written out from the finished analyses.
#include <algorithm>

#include "memsnap/report/html_report.h"
#include "report/html_report_internal.h"

namespace memsnap::report {

using internal::Json;

namespace {

Json SideJson(const Snapshot& snap, const analysis::ReportAnalysis& a,
              internal::StackTableJson& stacks) {
  Json j = internal::FileJson(snap);
  Json devices = Json::array();
  for (const analysis::DeviceReportAnalysis& d : a.devices) {
    devices.push_back(internal::TimelineJson(snap, a.timeline.devices[d.timeline_index], d,
                                             a.categories, stacks));
  }
  j["devices"] = std::move(devices);
  return j;
}

Json DeltaPairJson(const analysis::Delta& d) { return Json::array({d.before, d.after}); }

}  // namespace

Json BuildDiffData(const Snapshot& before, const Snapshot& after,
                   const analysis::DiffReportAnalysis& a, int top_sites) {
  // One stack table per file (frame texts are shared by text, stacks are per file).
  internal::StackTableJson before_stacks(before, *a.before.frames);
  internal::StackTableJson after_stacks(after, *a.after.frames);
  const analysis::DiffReport& diff = a.diff;
  Json j;
  j["mode"] = "diff";
  j["before"] = SideJson(before, a.before, before_stacks);
  j["after"] = SideJson(after, a.after, after_stacks);
  j["category_names"] = internal::CategoryNamesJson(a.before.categories);
  j["category_rules"] = internal::CategoryRulesJson();
  j["before"]["band_sites"] = internal::BandSitesJson(a.before);
  j["before"]["frames"] = before_stacks.FramesJson();
  j["before"]["frame_kinds"] = before_stacks.FrameKindsJson();
  j["before"]["stacks"] = before_stacks.StacksJson();
  j["after"]["band_sites"] = internal::BandSitesJson(a.after);
  j["after"]["frames"] = after_stacks.FramesJson();
  j["after"]["frame_kinds"] = after_stacks.FrameKindsJson();
  j["after"]["stacks"] = after_stacks.StacksJson();
  j["moment"] = diff.options.at.kind == analysis::Moment::Kind::kPeak ? "peak" : "end";
  j["live_bytes"] = DeltaPairJson(diff.live_bytes);
  j["live_count"] = DeltaPairJson(diff.live_count);
  j["sites_only_before"] = diff.sites_only_before;
  j["sites_only_after"] = diff.sites_only_after;
  j["sites_unchanged"] = diff.sites_unchanged;
  Json sites = Json::array();
  size_t shown = top_sites <= 0 ? diff.sites.size()  // 0: every site
                                : std::min(diff.sites.size(), static_cast<size_t>(top_sites) * 2);
  for (size_t i = 0; i < shown; ++i) {
    const analysis::SiteDelta& s = diff.sites[i];
    Json r;
    r["key"] = s.key;
    r["site"] = s.site;
    r["category"] = std::string(diff.options.group.categories.Name(s.category()));
    r["frames"] = s.frames;
    r["before"] = s.before_bytes;
    r["after"] = s.after_bytes;
    r["before_count"] = s.before_count;
    r["after_count"] = s.after_count;
    r["presence"] = std::string(analysis::PresenceName(s.presence));
    if (s.synthetic) r["synthetic"] = true;
    sites.push_back(std::move(r));
  }
  j["sites"] = std::move(sites);
  j["sites_total"] = diff.sites.size();
  Json peaks = Json::array();
  for (const analysis::DeviceDelta& d : diff.devices) {
    peaks.push_back(Json{{"device", d.device},
                         {"has_peak", d.has_peak},
                         {"peak", DeltaPairJson(d.peak)},
                         {"live", DeltaPairJson(d.live)}});
  }
  j["device_deltas"] = std::move(peaks);
  Json scopes = Json::array();
  for (const analysis::ScopeDelta& s : diff.scopes) {
    Json r;
    r["scope"] = s.scope;
    r["reserved"] = DeltaPairJson(s.reserved);
    r["allocated"] = DeltaPairJson(s.allocated);
    r["requested"] = DeltaPairJson(s.requested);
    r["segments"] = DeltaPairJson(s.segments);
    scopes.push_back(std::move(r));
  }
  j["scopes"] = std::move(scopes);
  Json settings = Json::array();
  for (const analysis::SettingDelta& s : diff.settings) {
    settings.push_back(Json::array({s.name, s.before, s.after}));
  }
  j["settings"] = std::move(settings);
  return j;
}

}  // namespace memsnap::report
