// The diff page's data: both files' curves, sites before/after/delta, scope totals, settings.
#include <algorithm>

#include "memsnap/analysis/diff.h"
#include "memsnap/report/html_report.h"
#include "memsnap/util/status_macros.h"
#include "report/html_report_internal.h"

namespace memsnap::report {

using Json = nlohmann::ordered_json;

namespace {

Json CurvesOf(const Snapshot& snap, const analysis::Timeline& timeline, int columns) {
  Json devices = Json::array();
  for (const analysis::DeviceTimeline& dt : timeline.devices) {
    Json d;
    d["device"] = dt.device;
    d["end_live"] = dt.end_requested;
    d["end_reserved"] = dt.end_reserved;
    d["peak_bytes"] = dt.peak_requested;
    CurveColumns cols = DownsampleCurves(snap, dt, columns);
    if (cols.size() > 0) d["curve"] = internal::CurveColumnsJson(cols);
    devices.push_back(std::move(d));
  }
  return devices;
}

Json DeltaJson(const analysis::Delta& d) { return Json::array({d.before, d.after}); }

}  // namespace

absl::StatusOr<Json> BuildDiffData(const Snapshot& before, const Snapshot& after,
                                   const HtmlReportOptions& options) {
  ASSIGN_OR_RETURN(analysis::Timeline tb, analysis::ReconstructTimeline(before));
  ASSIGN_OR_RETURN(analysis::Timeline ta, analysis::ReconstructTimeline(after));
  analysis::DiffOptions diff_options;
  diff_options.group = options.group;
  // Sites at the peak when both files can tell it, else at the end.
  bool peak = !before.events.empty() && !after.events.empty();
  diff_options.at = analysis::Moment{peak ? analysis::Moment::Kind::kPeak
                                          : analysis::Moment::Kind::kEnd,
                                     0};
  ASSIGN_OR_RETURN(analysis::DiffReport diff,
                   analysis::DiffSnapshots(before, after, diff_options));
  Json j;
  j["mode"] = "diff";
  j["before"] = internal::FileJson(before);
  j["after"] = internal::FileJson(after);
  j["before"]["devices"] = CurvesOf(before, tb, options.columns);
  j["after"]["devices"] = CurvesOf(after, ta, options.columns);
  j["moment"] = peak ? "peak" : "end";
  j["live_bytes"] = DeltaJson(diff.live_bytes);
  j["live_count"] = DeltaJson(diff.live_count);
  j["sites_only_before"] = diff.sites_only_before;
  j["sites_only_after"] = diff.sites_only_after;
  j["sites_unchanged"] = diff.sites_unchanged;
  Json sites = Json::array();
  size_t shown = std::min(diff.sites.size(), static_cast<size_t>(std::max(options.top_sites, 0)) * 2);
  for (size_t i = 0; i < shown; ++i) {
    const analysis::SiteDelta& s = diff.sites[i];
    Json r;
    r["key"] = s.key;
    r["site"] = s.site;
    r["category"] = std::string(analysis::CategoryName(s.category()));
    r["frames"] = s.frames;
    r["before"] = s.before_bytes;
    r["after"] = s.after_bytes;
    r["before_count"] = s.before_count;
    r["after_count"] = s.after_count;
    r["presence"] = std::string(analysis::PresenceName(s.presence));
    sites.push_back(std::move(r));
  }
  j["sites"] = std::move(sites);
  j["sites_total"] = diff.sites.size();
  Json scopes = Json::array();
  for (const analysis::ScopeDelta& s : diff.scopes) {
    Json r;
    r["scope"] = s.scope;
    r["reserved"] = DeltaJson(s.reserved);
    r["allocated"] = DeltaJson(s.allocated);
    r["requested"] = DeltaJson(s.requested);
    r["segments"] = DeltaJson(s.segments);
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
