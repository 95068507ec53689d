// Renderers of `memsnap timeline`: the terminal chart, CSV and JSON.
#include "memsnap/report/timeline_render.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/device_sections.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

using analysis::ComputeWindow;
using analysis::DeviceTimeline;
using analysis::LiveRoundedCurve;
using analysis::ReservedCursor;
using analysis::ReservedStep;
using analysis::TimelinePoint;
using Json = nlohmann::ordered_json;

namespace {
constexpr int kChartHeight = 10;
constexpr int kLabelWidth = 10;
constexpr const char* kEighths[9] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};

std::string Offset(int64_t us) {
  if (us < 1000) return absl::StrCat("+", us, " us");
  if (us < 1000000) return absl::StrFormat("+%.3f ms", static_cast<double>(us) / 1e3);
  return absl::StrFormat("+%.3f s", static_cast<double>(us) / 1e6);
}

// x of device-local event e (a real event: 0 <= e < num_events).
int64_t XOf(const Snapshot& snap, const DeviceTimeline& dt, int64_t e) {
  const uint32_t event = static_cast<uint32_t>(e);
  return dt.has_time ? dt.TimeOf(snap, TimelinePoint::After(event)) : e;
}

// The chart's live curve (ComputeWindow and the chart need it; the command builds it).
analysis::LiveCurveRef CurveOf(const DeviceTimeline& dt) {
  std::optional<analysis::LiveCurveRef> curve = dt.live_curve();
  if (!curve) {
    std::fprintf(stderr,
                 "memsnap: internal error: a timeline chart of device %d without its curve\n",
                 static_cast<int>(dt.device));
    std::abort();
  }
  return *curve;
}
}  // namespace

std::string FormatMomentLabel(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p) {
  if (p.is_start()) return "start";
  if (!dt.has_time) return absl::StrCat("event ", p.index());
  return absl::StrCat("event ", p.index(), ", ",
                      Offset(dt.TimeOf(snap, p) - dt.TimeOf(snap, TimelinePoint::After(0))));
}

namespace {
// The chart column of device-local event e: x(e) scaled from [x(first), x(w.to)] to
// [0, plot_w - 1], truncated. Monotone in x.
class ColumnOf {
 public:
  ColumnOf(const Snapshot& snap, const DeviceTimeline& dt, const EventWindow& w, int plot_w)
      : snap_(snap), dt_(dt), plot_w_(plot_w) {
    x0_ = XOf(snap, dt, w.first_event());
    const int64_t x1 = XOf(snap, dt, std::max<int64_t>(w.to.index(), 0));
    span_ = x1 > x0_ ? static_cast<double>(x1 - x0_) : 1.0;
  }
  int operator()(int64_t e) const {
    int c = static_cast<int>(static_cast<double>(XOf(snap_, dt_, e) - x0_) * (plot_w_ - 1) / span_);
    return std::clamp(c, 0, plot_w_ - 1);
  }

 private:
  const Snapshot& snap_;
  const DeviceTimeline& dt_;
  int plot_w_;
  int64_t x0_;
  double span_;
};

// Whether x never decreases over events [first, last] (then ColumnOf never decreases either).
bool XNonDecreasing(const Snapshot& snap, const DeviceTimeline& dt, int64_t first, int64_t last) {
  if (!dt.has_time || dt.time_sorted) return true;  // x is the event index, or known sorted
  const TraceEvent* ev = snap.events.data() + dt.event_begin;
  constexpr int64_t kChunk = 4096;  // branch-free within a chunk, stop at the first bad chunk
  for (int64_t b = first; b < last; b += kChunk) {
    const int64_t end = std::min(last, b + kChunk);
    bool ok = true;
    for (int64_t e = b; e < end; ++e) ok &= ev[e].time_us <= ev[e + 1].time_us;
    if (!ok) return false;
  }
  return true;
}

// Fast path: column c holds the contiguous events [begin[c], begin[c + 1]).
void FillColumnsByRange(const DeviceTimeline& dt, const EventWindow& w, const ColumnOf& col_of,
                        ChartColumns& cols) {
  const int64_t first = w.first_event(), last = w.to.index();
  const int plot_w = static_cast<int>(cols.live.size());
  std::vector<int64_t> begin(plot_w + 1);
  begin[plot_w] = last + 1;
  int64_t lo = first;
  for (int c = 0; c < plot_w; ++c) {  // the first event whose column is >= c
    int64_t hi = last + 1;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (col_of(mid) < c)
        lo = mid + 1;
      else
        hi = mid;
    }
    begin[c] = lo;
  }
  const int64_t* net = dt.live_net.data();
  const std::vector<ReservedStep>& steps = dt.reserved_steps;
  int best = -1;  // the first column holding the window's maximum event
  int64_t best_top = 0;
  size_t next = 0;  // the first step not yet applied
  int64_t reserved = dt.start_reserved;
  for (int c = 0; c < plot_w; ++c) {
    const int64_t a = begin[c], b = begin[c + 1] - 1;
    if (a > b) continue;
    const int64_t top = analysis::MaxLiveNet(dt, a, b);
    if (best < 0 || top > best_top) best = c, best_top = top;
    cols.live[c] = std::max(cols.live[c], dt.start_requested + top);
    cols.live_last[c] = dt.start_requested + net[b];
    while (next < steps.size() && steps[next].event <= a) reserved = steps[next++].bytes;
    int64_t res_top = reserved;  // the value at event a, then each value an event in (a, b] shows
    while (next < steps.size() && steps[next].event <= b) {
      reserved = steps[next++].bytes;
      if (next == steps.size() || steps[next].event != steps[next - 1].event) {
        res_top = std::max(res_top, reserved);
      }
    }
    cols.res[c] = std::max(cols.res[c], res_top);
    cols.res_last[c] = reserved;
  }
  cols.figures = analysis::WindowStartFigures(dt, w);
  analysis::RaiseWindowPeak(dt, best_top, begin[best], begin[best + 1] - 1, cols.figures);
}
}  // namespace

ChartColumns ComputeChartColumns(const Snapshot& snap, const DeviceTimeline& dt,
                                 const EventWindow& w, int plot_w) {
  ChartColumns cols;
  for (auto* v : {&cols.live, &cols.res, &cols.live_last, &cols.res_last}) v->assign(plot_w, -1);
  const int64_t first = w.first_event(), last = w.to.index();
  const ColumnOf col_of(snap, dt, w, plot_w);
  if (w.from.is_start()) {
    cols.live[0] = cols.live_last[0] = dt.start_requested;
    cols.res[0] = cols.res_last[0] = dt.start_reserved;
  }
  if (first <= last && XNonDecreasing(snap, dt, first, last)) {
    FillColumnsByRange(dt, w, col_of, cols);
    cols.contiguous = true;
  } else {
    cols.figures = ComputeWindow(dt, w);
    const analysis::LiveCurveRef curve = CurveOf(dt);
    ReservedCursor reserved(dt);
    for (int64_t e = first; e <= last; ++e) {
      const TimelinePoint p = TimelinePoint::After(static_cast<uint32_t>(e));
      int c = col_of(e);
      cols.live[c] = std::max(cols.live[c], cols.live_last[c] = curve.At(p));
      cols.res[c] = std::max(cols.res[c], cols.res_last[c] = reserved.At(p));
    }
  }
  for (int c = 1; c < plot_w; ++c) {  // a column without events keeps the previous state
    if (cols.live[c] < 0) cols.live[c] = cols.live_last[c] = cols.live_last[c - 1];
    if (cols.res[c] < 0) cols.res[c] = cols.res_last[c] = cols.res_last[c - 1];
  }
  return cols;
}

void RenderTimelineChart(const Snapshot& snap, const DeviceTimeline& dt, const EventWindow& w,
                         int width, std::ostream& out, bool show_reserved) {
  out << "device " << dt.device << ": " << FormatCount(dt.num_events) << " events";
  if (!w.from.is_start() || w.to < TimelinePoint::End(dt.num_events)) {
    out << " (showing " << w.first_event() << ".." << w.to.index() << ")";
  }
  out << (dt.has_time ? "" : ", no time_us (x = event index)") << "\n";
  if (dt.num_events == 0 || w.to.is_start()) {
    out << "  no trace: live " << FormatBytes(dt.end_requested) << ", reserved "
        << FormatBytes(dt.end_reserved) << "\n";
    return;
  }
  const int plot_w = std::max(10, width - kLabelWidth - 2);
  const int64_t first = w.first_event();
  const int64_t x0 = XOf(snap, dt, first), x1 = XOf(snap, dt, w.to.index());
  ChartColumns cols = ComputeChartColumns(snap, dt, w, plot_w);
  const WindowFigures& fig = cols.figures;
  std::vector<int64_t>& live = cols.live;
  std::vector<int64_t>& res = cols.res;
  int64_t ymax = 1;
  if (!show_reserved) std::fill(res.begin(), res.end(), 0);
  for (int c = 0; c < plot_w; ++c) ymax = std::max({ymax, live[c], res[c]});
  const int peak_col =
      fig.peak_event.is_start() ? 0 : ColumnOf(snap, dt, w, plot_w)(fig.peak_event.index());

  std::string marker(kLabelWidth + 2, ' ');
  for (int c = 0; c < plot_w; ++c) marker += (c == peak_col ? "▼" : " ");
  while (!marker.empty() && marker.back() == ' ') marker.pop_back();
  out << marker << "\n";
  for (int r = kChartHeight - 1; r >= 0; --r) {
    std::string label;
    if (r == kChartHeight - 1) label = FormatBytes(ymax);
    if (r == kChartHeight / 2 - 1) label = FormatBytes(ymax / 2);
    std::string line = absl::StrFormat("%*s ┤", kLabelWidth, label);
    for (int c = 0; c < plot_w; ++c) {
      int64_t eighths = live[c] * kChartHeight * 8 / ymax - r * 8;
      eighths = std::clamp<int64_t>(eighths, 0, 8);
      // The row whose top edge is the first at or above the reserved level (labels are top edges).
      int res_row = static_cast<int>(
          std::clamp<int64_t>((res[c] * kChartHeight + ymax - 1) / ymax - 1, 0, kChartHeight - 1));
      if (eighths == 0 && res_row == r && res[c] > 0) {
        line += "┄";
      } else {
        line += kEighths[eighths];
      }
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  std::string axis = absl::StrFormat("%*s └", kLabelWidth, "0 B");
  for (int c = 0; c < plot_w; ++c) axis += "─";
  out << axis << "\n";
  std::string left, right;
  if (dt.has_time) {
    const int64_t t0 = dt.TimeOf(snap, TimelinePoint::After(0));
    left = Offset(x0 - t0);
    right = Offset(x1 - t0);
  } else {
    left = absl::StrCat("event ", first);
    right = absl::StrCat("event ", w.to.index());
  }
  int gap = std::max(1, plot_w - static_cast<int>(left.size() + right.size()));
  out << std::string(kLabelWidth + 2, ' ') << left << std::string(gap, ' ') << right << "\n";
  out << (show_reserved ? "  █ live (requested)  ┄ reserved\n" : "  █ live (requested)\n");
  out << "  peak " << FormatBytes(fig.peak_bytes) << " at "
      << FormatMomentLabel(snap, dt, fig.peak_event) << "; start " << FormatBytes(fig.start_bytes)
      << ", end " << FormatBytes(fig.end_bytes) << "; reserved peak "
      << FormatBytes(fig.peak_reserved) << "\n";
  const auto& pre = dt.by_class[static_cast<int>(analysis::LifetimeClass::kPreWindow)];
  const auto& ghost = dt.by_class[static_cast<int>(analysis::LifetimeClass::kGhost)];
  if (pre.count + ghost.count > 0) {
    out << "  live from t0: " << FormatCount(pre.count) << " pre-window (" << FormatBytes(pre.bytes)
        << "), " << FormatCount(ghost.count) << " ghost (" << FormatBytes(ghost.bytes) << ")\n";
  }
  if (dt.unreconciled_requested_bytes != 0) {
    out << "  warning: " << FormatBytes(dt.unreconciled_requested_bytes)
        << " of the final live bytes are not explained by the trace (added at t0)\n";
  }
}

void RenderTimelineDevicesTable(
    const std::vector<std::pair<const analysis::DeviceTimeline*, EventWindow>>& devices,
    std::ostream& out) {
  out << CompactDevicesNote(devices.size(), "timeline") << "\n";
  Table t;
  AddDeviceColumn(t);
  t.AddColumn("events", "events", Unit::kCount).min_width = 9;
  t.AddColumn("start_bytes", "start", Unit::kBytes).min_width = 12;
  t.AddColumn("peak_bytes", "peak live", Unit::kBytes).min_width = 12;
  t.AddColumn("end_bytes", "end", Unit::kBytes).min_width = 12;
  t.AddColumn("peak_reserved_bytes", "peak reserved", Unit::kBytes).min_width = 14;
  t.rows.reserve(devices.size());
  for (const auto& [dt, w] : devices) {
    const WindowFigures fig = ComputeWindow(*dt, w);
    t.AddRow({int64_t{dt->device}, static_cast<int64_t>(dt->num_events), fig.start_bytes,
              fig.peak_bytes, fig.end_bytes, fig.peak_reserved});
  }
  RenderTableText(t, out, {"  ", true});
}

void RenderTimelineCsvHeader(std::ostream& out, const analysis::CategoryNames* categories) {
  out << "device,event,time_us,time_rel_us,live_requested,live_rounded,reserved";
  if (categories != nullptr) {
    for (int c = 0; c < categories->size(); ++c) {
      out << "," << categories->Name(static_cast<analysis::Category>(c));
    }
  }
  out << "\n";
}

void RenderTimelineCsv(const Snapshot& snap, const DeviceTimeline& dt, const EventWindow& w,
                       const analysis::CategoryCurve* categories, std::ostream& out) {
  std::string buf;
  const std::vector<int64_t> rounded = LiveRoundedCurve(dt);
  ReservedCursor reserved(dt);
  analysis::CategoryBytes now{};
  size_t next_extra = 0;
  int64_t applied = 0;  // events whose category changes are in `now`
  if (categories != nullptr) now = categories->start;
  const int64_t t0 = dt.TimeOf(snap, TimelinePoint::After(0));
  const analysis::LiveCurveRef curve = CurveOf(dt);
  for (int64_t e = w.first_event(); e <= w.to.index(); ++e) {
    const TimelinePoint p = TimelinePoint::After(static_cast<uint32_t>(e));
    int64_t t = dt.TimeOf(snap, p);
    const bool timed = t != kNoTime && t0 != kNoTime;
    absl::StrAppend(&buf, dt.device, ",", e, ",", timed ? absl::StrCat(t) : std::string(), ",",
                    timed ? absl::StrCat(t - t0) : std::string(), ",", curve.At(p), ",", rounded[e],
                    ",", reserved.At(p));
    if (categories != nullptr) {
      for (; applied <= e; ++applied) {
        categories->Apply(static_cast<uint32_t>(applied), now, next_extra);
      }
      for (int c = 0; c < categories->names.size(); ++c) absl::StrAppend(&buf, ",", now[c]);
    }
    buf += '\n';
    if (buf.size() > (1 << 16)) {
      out << buf;
      buf.clear();
    }
  }
  out << buf;
}

Json DeviceTimelineToJson(const Snapshot& snap, const DeviceTimeline& dt, const EventWindow& w,
                          const analysis::CategoryCurve* categories, int samples) {
  WindowFigures fig = ComputeWindow(dt, w);
  Json j;
  j["device"] = dt.device;
  j["events"] = dt.num_events;
  j["has_time"] = dt.has_time;
  j["from_event"] = w.from.index();
  j["to_event"] = w.to.index();
  j["start_bytes"] = fig.start_bytes;
  j["peak_bytes"] = fig.peak_bytes;
  j["peak_event_index"] = fig.peak_event.index();
  int64_t pt = dt.TimeOf(snap, fig.peak_event);
  j["peak_time_us"] = internal::TimeToJson(pt);
  j["end_bytes"] = fig.end_bytes;
  j["peak_reserved_bytes"] = fig.peak_reserved;
  j["peak_reserved_event_index"] = fig.peak_reserved_event.index();
  j["end_reserved_bytes"] = dt.ReservedAt(w.to);
  j["end_rounded_bytes"] = w.to.is_start() ? dt.start_rounded
                           : w.to == TimelinePoint::End(dt.num_events)
                               ? dt.end_rounded
                               : LiveRoundedCurve(dt)[w.to.index()];
  j["unreconciled_bytes"] = dt.unreconciled_requested_bytes;
  j["frees_without_alloc"] = dt.frees_without_alloc;
  j["segments_left_out"] = dt.segments_left_out;
  j["segments_left_out_bytes"] = dt.segments_left_out_bytes;
  Json classes;
  for (int c = 0; c < 4; ++c) {
    classes[std::string(analysis::LifetimeClassName(static_cast<analysis::LifetimeClass>(c)))] = {
        {"count", dt.by_class[c].count}, {"bytes", dt.by_class[c].bytes}};
  }
  j["lifetimes"] = classes;
  j["segment_lifetimes"] = dt.segments.size();
  if (categories != nullptr) {
    // Start, peak and end of the window, and a series across it (analysis samples them).
    const analysis::WindowCategories cats =
        analysis::SampleWindowCategories(*categories, w, fig.peak_event, samples);
    const analysis::CategoryNames& names = categories->names;
    j["categories"] = {{"start", CategoriesJson(cats.start, names)},
                       {"peak", CategoriesJson(cats.peak, names)},
                       {"end", CategoriesJson(cats.end, names)}};
    const std::vector<TimelinePoint>& events = cats.points;
    const std::vector<analysis::CategoryBytes>& series = cats.series;
    Json s;
    Json indices = Json::array();
    for (TimelinePoint p : events) indices.push_back(p.index());
    s["event"] = indices;
    Json times = Json::array();
    for (TimelinePoint p : events) {
      int64_t t = dt.TimeOf(snap, p);
      times.push_back(internal::TimeToJson(t));
    }
    s["time_us"] = times;
    for (int c = 0; c < names.size(); ++c) {
      std::vector<int64_t> values;
      bool any = false;
      for (const analysis::CategoryBytes& b : series) {
        values.push_back(b[c]);
        any = any || b[c] != 0;
      }
      if (any) s[std::string(names.Name(static_cast<analysis::Category>(c)))] = values;
    }
    j["category_series"] = std::move(s);
  }
  return j;
}

}  // namespace memsnap::report
