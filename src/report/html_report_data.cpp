// The data behind the HTML report: downsampled curves, stacked bands, peak, sites. Pure
// functions of the snapshot; the page script only draws what is here.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/categories.h"
#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/group.h"
#include "memsnap/report/html_report.h"
#include "memsnap/report/timeline_render.h"
#include "report/html_report_internal.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::report {

using analysis::DeviceTimeline;
using analysis::kNoEvent;
using Json = nlohmann::ordered_json;

namespace {

/// x of device-local event i, before any column mapping.
double RawX(const Snapshot& snap, const DeviceTimeline& dt, bool has_time, int64_t t0,
            uint32_t i) {
  if (!has_time) return static_cast<double>(i);
  return static_cast<double>(snap.events[dt.event_begin + i].time_us - t0);
}

}  // namespace

CurveColumns DownsampleCurves(const Snapshot& snap, const DeviceTimeline& dt, int columns) {
  CurveColumns out;
  const uint32_t n = dt.num_events;
  if (n == 0 || columns <= 0) return out;
  out.has_time = dt.has_time;
  if (dt.has_time) {
    out.t0_us = snap.events[dt.event_begin].time_us;
    // Traces are time ordered but not strictly; the range covers every event.
    int64_t lo = out.t0_us, hi = out.t0_us;
    for (uint32_t i = 0; i < n; ++i) {
      int64_t t = snap.events[dt.event_begin + i].time_us;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    out.t0_us = lo;
    out.x_lo = 0;
    out.x_hi = static_cast<double>(hi - lo);
  } else {
    out.x_lo = 0;
    out.x_hi = n;
  }
  const size_t ncols = std::min<size_t>(static_cast<size_t>(columns), n);
  out.live_min.assign(ncols, 0);
  out.live_max.assign(ncols, 0);
  out.reserved_min.assign(ncols, 0);
  out.reserved_max.assign(ncols, 0);
  out.sample_event.assign(ncols, -2);  // -2: no event fell into the column yet

  const double span = out.x_hi - out.x_lo;
  auto column_of = [&](uint32_t i) -> size_t {
    if (!out.has_time) return static_cast<size_t>(uint64_t{i} * ncols / n);
    if (span <= 0) return 0;
    double x = RawX(snap, dt, true, out.t0_us, i);
    auto c = static_cast<int64_t>(std::floor((x - out.x_lo) / span * static_cast<double>(ncols)));
    return static_cast<size_t>(std::clamp<int64_t>(c, 0, static_cast<int64_t>(ncols) - 1));
  };
  auto add = [&](size_t c, int64_t e) {
    int64_t live = dt.LiveAt(e), res = dt.ReservedAt(e);
    if (out.sample_event[c] == -2) {
      out.live_min[c] = out.live_max[c] = live;
      out.reserved_min[c] = out.reserved_max[c] = res;
      out.sample_event[c] = e;
      return;
    }
    out.live_min[c] = std::min(out.live_min[c], live);
    out.reserved_min[c] = std::min(out.reserved_min[c], res);
    out.reserved_max[c] = std::max(out.reserved_max[c], res);
    if (live > out.live_max[c]) {
      out.live_max[c] = live;
      out.sample_event[c] = e;
    }
  };
  add(0, -1);  // the initial state belongs to the first column
  size_t prev = 0;
  std::vector<int64_t> last_event(ncols, -2);
  last_event[0] = -1;
  for (uint32_t i = 0; i < n; ++i) {
    // Columns only move forward, so each band covers one run of columns even when times jitter.
    size_t c = std::max(prev, column_of(i));
    add(c, i);
    last_event[c] = i;
    prev = c;
  }
  int64_t carried = -1;
  for (size_t c = 0; c < ncols; ++c) {
    if (out.sample_event[c] == -2) add(c, carried);  // nothing happened: the state persists
    if (last_event[c] != -2) carried = last_event[c];
  }
  return out;
}

double EventX(const Snapshot& snap, const DeviceTimeline& dt, const CurveColumns& cols,
              int64_t e) {
  if (e < 0) return cols.x_lo;
  return RawX(snap, dt, cols.has_time, cols.t0_us, static_cast<uint32_t>(e));
}

std::vector<uint32_t> SelectBandLifetimes(const Snapshot& snap, const DeviceTimeline& dt,
                                          const CurveColumns& cols, int n) {
  const size_t count = dt.blocks.size();
  if (n <= 0 || count == 0 || cols.size() == 0) return {};
  std::vector<double> area(count);
  for (size_t i = 0; i < count; ++i) {
    const auto& b = dt.blocks[i];
    double x0 = b.alloc_event == kNoEvent ? cols.x_lo : EventX(snap, dt, cols, b.alloc_event);
    double x1 =
        b.free_completed_event == kNoEvent ? cols.x_hi : EventX(snap, dt, cols, b.free_completed_event);
    // A lifetime shorter than one column still shows as one column wide.
    double min_width = (cols.x_hi - cols.x_lo) / static_cast<double>(cols.size());
    area[i] = static_cast<double>(b.requested_size) * std::max(x1 - x0, min_width);
  }
  std::vector<uint32_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  size_t by_area = std::min<size_t>(count, static_cast<size_t>(n) * 3 / 4);
  std::partial_sort(order.begin(), order.begin() + by_area, order.end(), [&](uint32_t a, uint32_t b) {
    return area[a] != area[b] ? area[a] > area[b] : a < b;
  });
  std::vector<uint32_t> chosen(order.begin(), order.begin() + by_area);
  // The rest by size, so short spikes (what makes a peak) get their own band too.
  size_t by_size = std::min<size_t>(count - by_area, static_cast<size_t>(n) - by_area);
  std::partial_sort(order.begin() + by_area, order.begin() + by_area + by_size, order.end(),
                    [&](uint32_t a, uint32_t b) {
                      int64_t sa = dt.blocks[a].requested_size, sb = dt.blocks[b].requested_size;
                      return sa != sb ? sa > sb : a < b;
                    });
  chosen.insert(chosen.end(), order.begin() + by_area, order.begin() + by_area + by_size);
  auto alloc_key = [&](uint32_t i) {
    uint32_t e = dt.blocks[i].alloc_event;
    return e == kNoEvent ? int64_t{-1} : int64_t{e};
  };
  std::sort(chosen.begin(), chosen.end(), [&](uint32_t a, uint32_t b) {
    int64_t ka = alloc_key(a), kb = alloc_key(b);
    return ka != kb ? ka < kb : a < b;
  });
  return chosen;
}

std::vector<Band> StackBands(const DeviceTimeline& dt, const CurveColumns& cols,
                             const std::vector<uint32_t>& lifetimes, int64_t epsilon,
                             std::vector<int64_t>& rest) {
  std::vector<Band> bands(lifetimes.size());
  rest.assign(cols.size(), 0);
  for (size_t k = 0; k < lifetimes.size(); ++k) bands[k].lifetime = lifetimes[k];
  for (size_t c = 0; c < cols.size(); ++c) {
    int64_t e = cols.sample_event[c];
    int64_t bottom = 0;
    for (Band& band : bands) {
      const auto& b = dt.blocks[band.lifetime];
      if (!b.LiveAfter(e)) continue;
      if (band.first_col < 0) band.first_col = static_cast<int>(c);
      band.last_col = static_cast<int>(c);
      if (band.bottoms.empty() || std::llabs(band.bottoms.back().second - bottom) > epsilon) {
        band.bottoms.emplace_back(static_cast<int>(c), bottom);
      }
      bottom += b.requested_size;
    }
    rest[c] = dt.LiveAt(e) - bottom;
  }
  return bands;
}

namespace internal {

int StackTableJson::Add(StackId stack) {
  if (!stack.valid()) return -1;
  auto it = stack_index_.find(stack.v);
  if (it != stack_index_.end()) return it->second;
  std::vector<int> frames;
  for (FrameId f : filter_.Filtered(stack)) frames.push_back(AddText(snap_.FrameText(f)));
  int id = static_cast<int>(stacks_.size());
  stacks_.push_back(std::move(frames));
  stack_index_.emplace(stack.v, id);
  return id;
}

int StackTableJson::AddText(const std::string& text) {
  auto [it, inserted] = text_index_.try_emplace(text, static_cast<int>(frame_texts_.size()));
  if (inserted) frame_texts_.push_back(text);
  return it->second;
}

Json StackTableJson::Indices(const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& t : texts) out.push_back(AddText(t));
  return out;
}

Json StackTableJson::FramesJson() const { return Json(frame_texts_); }
Json StackTableJson::StacksJson() const { return Json(stacks_); }

Json SiteRowsJson(const std::vector<analysis::GroupRow>& rows, StackTableJson& stacks) {
  Json out = Json::array();
  for (const auto& r : rows) {
    Json j;
    j["key"] = r.key;
    j["site"] = r.site;
    j["category"] = std::string(analysis::CategoryName(r.category()));
    j["categories"] = CategoriesJson(r.category_bytes);
    j["frames"] = stacks.Indices(r.frames);
    j["bytes"] = r.bytes;
    j["rounded"] = r.rounded_bytes;
    j["count"] = r.count;
    if (r.synthetic) j["synthetic"] = true;
    out.push_back(std::move(j));
  }
  return out;
}

Json CurveColumnsJson(const CurveColumns& cols) {
  Json j;
  j["has_time"] = cols.has_time;
  if (cols.has_time) j["t0_us"] = cols.t0_us;
  j["x_lo"] = cols.x_lo;
  j["x_hi"] = cols.x_hi;
  j["live_min"] = cols.live_min;
  j["live_max"] = cols.live_max;
  j["reserved_min"] = cols.reserved_min;
  j["reserved_max"] = cols.reserved_max;
  return j;
}

}  // namespace internal

namespace {

Json NullableX(const Snapshot& snap, const DeviceTimeline& dt, const CurveColumns& cols,
               uint32_t e) {
  return e == kNoEvent ? Json(nullptr) : Json(EventX(snap, dt, cols, e));
}

// Live bytes per category at each column's sample event: {"parameter": [...], ...}, only the
// categories that hold bytes somewhere.
Json CategoryColumnsJson(analysis::GroupContext& context, const DeviceTimeline& dt,
                         const CurveColumns& cols) {
  analysis::CategoryCurve curve = analysis::BuildCategoryCurve(context, dt);
  std::vector<size_t> order(cols.size());
  std::iota(order.begin(), order.end(), 0);
  // Sample events ascend with the columns except where a column repeats an earlier state.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cols.sample_event[a] < cols.sample_event[b]; });
  std::vector<int64_t> events;
  for (size_t c : order) events.push_back(cols.sample_event[c]);
  std::vector<analysis::CategoryBytes> sampled = analysis::SampleCategoryCurve(curve, events);
  std::vector<analysis::CategoryBytes> by_column(cols.size());
  for (size_t k = 0; k < order.size(); ++k) by_column[order[k]] = sampled[k];
  Json j = Json::object();
  for (int c = 0; c < analysis::kNumCategories; ++c) {
    std::vector<int64_t> values(cols.size());
    bool any = false;
    for (size_t col = 0; col < cols.size(); ++col) {
      values[col] = by_column[col][c];
      any = any || values[col] != 0;
    }
    if (any) j[std::string(analysis::CategoryName(static_cast<analysis::Category>(c)))] = values;
  }
  return j;
}

Json DeviceJson(const Snapshot& snap, const DeviceTimeline& dt, const HtmlReportOptions& options,
                internal::StackTableJson& stacks, analysis::GroupContext& context) {
  Json j;
  j["device"] = dt.device;
  j["num_events"] = dt.num_events;
  j["lifetimes"] = dt.blocks.size();
  j["end_live"] = dt.end_requested;
  j["end_reserved"] = dt.end_reserved;
  j["unreconciled_bytes"] = dt.unreconciled_requested_bytes;
  CurveColumns cols = DownsampleCurves(snap, dt, options.columns);
  if (cols.size() == 0) return j;
  std::vector<uint32_t> chosen = SelectBandLifetimes(snap, dt, cols, options.bands);
  std::vector<int64_t> rest;
  // A tenth of a pixel of a tall chart: bottoms that move less are not worth a point.
  int64_t top = 1;
  for (size_t c = 0; c < cols.size(); ++c) {
    top = std::max({top, cols.live_max[c], cols.reserved_max[c]});
  }
  // Bottoms move when a band below is freed: bounded by bands x columns, but in practice far
  // fewer. Should a trace come near the bound, coarser bottoms keep the page small.
  constexpr size_t kMaxBottoms = 400000;
  std::vector<Band> bands;
  for (int64_t epsilon = top / 8192;; epsilon = std::max<int64_t>(epsilon * 4, 1)) {
    bands = StackBands(dt, cols, chosen, epsilon, rest);
    size_t total = 0;
    for (const Band& b : bands) total += b.bottoms.size();
    if (total <= kMaxBottoms || epsilon > top / 64) break;
  }
  Json curve = internal::CurveColumnsJson(cols);
  curve["rest"] = rest;
  curve["categories"] = CategoryColumnsJson(context, dt, cols);
  j["curve"] = std::move(curve);
  Json bands_json = Json::array();
  for (const Band& band : bands) {
    if (band.first_col < 0) continue;  // live at no sampled column: nothing to draw
    const auto& b = dt.blocks[band.lifetime];
    Json bj;
    bj["size"] = b.requested_size;
    bj["rounded"] = b.rounded_size;
    bj["addr"] = FormatAddress(b.address);
    bj["version"] = b.version;
    bj["stream"] = b.stream;
    bj["class"] = std::string(analysis::LifetimeClassName(b.cls));
    bj["alloc_x"] = NullableX(snap, dt, cols, b.alloc_event);
    bj["free_x"] = NullableX(snap, dt, cols, b.free_completed_event);
    bj["stack"] = stacks.Add(b.stack);
    bj["site"] = b.cls == analysis::LifetimeClass::kPreWindow
                     ? std::string(analysis::kPreWindowRow)
                     : context.attribution().Site(b.stack).BaseLabel();
    bj["category"] = std::string(analysis::CategoryName(context.Categorize(dt, b).category));
    bj["c0"] = band.first_col;
    bj["c1"] = band.last_col;
    Json bottoms = Json::array();
    for (const auto& [c, y] : band.bottoms) {
      bottoms.push_back(c);
      bottoms.push_back(y);
    }
    bj["bottoms"] = std::move(bottoms);
    bands_json.push_back(std::move(bj));
  }
  j["bands"] = std::move(bands_json);
  Json peak;
  peak["bytes"] = dt.peak_requested;
  peak["event"] = dt.peak_event;
  peak["x"] = EventX(snap, dt, cols, dt.peak_event);
  peak["reserved_bytes"] = dt.peak_reserved;
  peak["reserved_x"] = EventX(snap, dt, cols, dt.peak_reserved_event);
  j["peak"] = std::move(peak);
  return j;
}

}  // namespace

absl::StatusOr<Json> BuildReportData(const Snapshot& snap, const HtmlReportOptions& options) {
  // Lifetimes and curves of every device: what the timeline, the bands and the peak are made of.
  ASSIGN_OR_RETURN(analysis::Timeline timeline, analysis::ReconstructTimeline(snap));
  ASSIGN_OR_RETURN(std::unique_ptr<analysis::GroupContext> context,
                   analysis::GroupContext::Create(snap, options.group));
  internal::StackTableJson stacks(snap, context->filter());
  Json j;
  j["mode"] = "single";
  j["file"] = internal::FileJson(snap);
  Json devices = Json::array();
  for (const DeviceTimeline& dt : timeline.devices) {
    devices.push_back(DeviceJson(snap, dt, options, stacks, *context));
  }
  j["devices"] = std::move(devices);
  // What was alive at each device's peak, by site.
  bool any_events = false;
  for (const DeviceTimeline& dt : timeline.devices) any_events = any_events || dt.num_events > 0;
  analysis::Moment at{any_events ? analysis::Moment::Kind::kPeak : analysis::Moment::Kind::kEnd, 0};
  ASSIGN_OR_RETURN(analysis::GroupReport at_peak, analysis::GroupLive(*context, timeline, at));
  analysis::CollapseTail(at_peak.rows, static_cast<size_t>(options.top_sites));
  Json peak_sites;
  peak_sites["moment"] = any_events ? "peak" : "end";
  peak_sites["total_bytes"] = at_peak.total_bytes;
  peak_sites["total_count"] = at_peak.total_count;
  peak_sites["categories"] = CategoriesJson(at_peak.category_bytes);
  peak_sites["rows"] = internal::SiteRowsJson(at_peak.rows, stacks);
  j["peak_sites"] = std::move(peak_sites);
  // Where memory is allocated over the whole trace (every lifetime counts once).
  std::vector<analysis::GroupRow> alloc_rows;
  int64_t alloc_total = 0, alloc_count = 0;
  for (const DeviceTimeline& dt : timeline.devices) {
    std::vector<uint32_t> all(dt.blocks.size());
    std::iota(all.begin(), all.end(), 0);
    analysis::AccumulateGroups(dt, all, *context, alloc_rows);
  }
  analysis::SortAndMergeRows(alloc_rows);
  analysis::LabelRows(alloc_rows);
  for (const auto& r : alloc_rows) {
    alloc_total += r.bytes;
    alloc_count += r.count;
  }
  analysis::CollapseTail(alloc_rows, static_cast<size_t>(options.top_sites));
  Json alloc_sites;
  alloc_sites["total_bytes"] = alloc_total;
  alloc_sites["total_count"] = alloc_count;
  alloc_sites["rows"] = internal::SiteRowsJson(alloc_rows, stacks);
  j["alloc_sites"] = std::move(alloc_sites);
  j["frames"] = stacks.FramesJson();
  j["stacks"] = stacks.StacksJson();
  // Optional sections: present only when memsnap was built with the analyses behind them.
  ASSIGN_OR_RETURN(Json segments, internal::SegmentMapJson(snap, timeline));
  j["segments"] = std::move(segments);
  ASSIGN_OR_RETURN(Json replay, internal::ReplayJson(snap, timeline, options));
  j["replay"] = std::move(replay);
  return j;
}

}  // namespace memsnap::report
