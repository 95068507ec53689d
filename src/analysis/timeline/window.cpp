#include "memsnap/analysis/timeline/window.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::analysis {

absl::StatusOr<EventWindow> ResolveWindow(const Snapshot& snap, const DeviceTimeline& dt,
                                          const std::string& from, const std::string& to) {
  EventWindow w{TimelinePoint::Start(), TimelinePoint::End(dt.num_events)};
  if (!from.empty()) {
    ASSIGN_OR_RETURN(Moment m, ParseMoment(from, "--from"));
    RETURN_IF_ERROR(CheckMoment(snap, dt, m, "--from", from));
    const bool time = m.kind != Moment::Kind::kEvent && m.kind != Moment::Kind::kPeak &&
                      m.kind != Moment::Kind::kEnd && dt.has_time;
    if (time) {
      // The first event at or after the time.
      m.value += m.kind == Moment::Kind::kBeforeEnd ? 1 : -1;
      w.from = TimelinePoint::After(ResolveMoment(snap, dt, m).next_event());
    } else {
      w.from = ResolveMoment(snap, dt, m);
    }
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(Moment m, ParseMoment(to, "--to"));
    RETURN_IF_ERROR(CheckMoment(snap, dt, m, "--to", to));
    w.to = ResolveMoment(snap, dt, m);
  }
  if (w.to < w.from) {
    // "event:5 (+400 us)", or "+2s (event:12 (+2.000 s))" when the text was not the event.
    auto where = [&](const std::string& text, TimelinePoint p) {
      std::string d = DescribeEvent(snap, dt, p);
      return d.starts_with(text) ? d : absl::StrCat(text, " (", d, ")");
    };
    return absl::InvalidArgumentError(absl::StrCat(
        "--from ", where(from, w.from), " is after --to ", where(to.empty() ? "end" : to, w.to),
        " on device ", dt.device, ": the window is empty"));
  }
  return w;
}

namespace {

LiveCurveRef CurveOf(const DeviceTimeline& dt) {
  std::optional<LiveCurveRef> curve = dt.live_curve();
  if (!curve) {
    std::fprintf(stderr, "memsnap: internal error: a window of device %d without its curve\n",
                 static_cast<int>(dt.device));
    std::abort();
  }
  return *curve;
}

}  // namespace

int64_t MaxLiveNet(const DeviceTimeline& dt, int64_t a, int64_t b) {
  // A plain loop over contiguous memory, nothing else per event.
  const int64_t* net = dt.live_net.data();
  int64_t top = net[a];
  for (int64_t e = a + 1; e <= b; ++e) top = std::max(top, net[e]);
  return top;
}

WindowFigures WindowStartFigures(const DeviceTimeline& dt, const EventWindow& w) {
  WindowFigures f;
  const LiveCurveRef curve = CurveOf(dt);
  f.start_bytes = curve.At(w.from);
  f.end_bytes = curve.At(w.to);
  f.peak_bytes = f.start_bytes;
  f.peak_event = w.from;
  std::tie(f.peak_reserved, f.peak_reserved_event) = dt.ReservedPeakIn(w.from, w.to);
  return f;
}

void RaiseWindowPeak(const DeviceTimeline& dt, int64_t top, int64_t a, int64_t b,
                     WindowFigures& f) {
  if (dt.start_requested + top <= f.peak_bytes) return;
  const int64_t* net = dt.live_net.data();
  f.peak_bytes = dt.start_requested + top;
  f.peak_event =
      TimelinePoint::After(static_cast<uint32_t>(std::find(net + a, net + b + 1, top) - net));
}

WindowFigures ComputeWindow(const DeviceTimeline& dt, const EventWindow& w) {
  WindowFigures f = WindowStartFigures(dt, w);
  const int64_t first = w.first_event(), last = w.to.index();
  if (first <= last) RaiseWindowPeak(dt, MaxLiveNet(dt, first, last), first, last, f);
  return f;
}

}  // namespace memsnap::analysis
