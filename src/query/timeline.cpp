#include "memsnap/query/timeline.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

absl::StatusOr<EventWindow> ResolveWindow(const Snapshot& snap, const analysis::Timeline& timeline,
                                          const analysis::DeviceTimeline& dt,
                                          const std::optional<MomentArg>& from,
                                          const std::optional<MomentArg>& to) {
  using Kind = analysis::Moment::Kind;
  EventWindow w{analysis::TimelinePoint::Start(), analysis::TimelinePoint::End(dt.num_events)};
  if (from && from->step) {
    ASSIGN_OR_RETURN(w.from, StepPoint(*from, snap, timeline, dt, /*from=*/true));
  } else if (from) {
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, from->moment, from->flag, from->text));
    analysis::Moment m = from->moment;
    const bool time =
        m.kind != Kind::kEvent && m.kind != Kind::kPeak && m.kind != Kind::kEnd && dt.has_time;
    if (time) {
      // The first event at or after the time.
      m.value += m.kind == Kind::kBeforeEnd ? 1 : -1;
      w.from = analysis::TimelinePoint::After(analysis::ResolveMoment(snap, dt, m).next_event());
    } else {
      w.from = analysis::ResolveMoment(snap, dt, m);
    }
  }
  if (to && to->step) {
    ASSIGN_OR_RETURN(w.to, StepPoint(*to, snap, timeline, dt, /*from=*/false));
  } else if (to) {
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, to->moment, to->flag, to->text));
    w.to = analysis::ResolveMoment(snap, dt, to->moment);
  }
  if (w.to < w.from) {
    // "event:5 (+400 us)", or "+2s (event:12 (+2.000 s))" when the text was not the event.
    auto where = [&](const std::string& text, analysis::TimelinePoint p) {
      std::string d = analysis::DescribeEvent(snap, dt, p);
      return d.starts_with(text) ? d : absl::StrCat(text, " (", d, ")");
    };
    return absl::InvalidArgumentError(absl::StrCat(
        "--from ", where(from ? from->text : "", w.from), " is after --to ",
        where(to ? to->text : "end", w.to), " on device ", dt.device, ": the window is empty"));
  }
  return w;
}

Needs TimelineNeeds(const TimelineRequest& request) {
  analysis::TimelineOptions to;
  to.device = request.device;
  // The rounded curve and the categories over time are rebuilt from the lifetimes; the chart
  // needs none.
  to.keep = request.categories ? analysis::KeepLifetimes::kAll : analysis::KeepLifetimes::kNone;
  // Steps are found from the curve (periodicity); the chart draws it anyway.
  if ((request.from && request.from->step) || (request.to && request.to->step)) to.curve = true;
  return NeedsTimeline(to);
}

absl::StatusOr<TimelineResult> TimelineQuery(const TimelineRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl,
                   session.TimelineFor(*TimelineNeeds(request).timeline));
  const Snapshot& snap = session.snapshot();
  std::unique_ptr<analysis::GroupContext> context;
  if (request.categories) {
    analysis::GroupOptions group;
    group.categories = session.categories();
    ASSIGN_OR_RETURN(context, analysis::GroupContext::Create(snap, group));
  }
  TimelineResult r;
  r.file = session.path();
  r.category_names = session.categories();
  for (const analysis::DeviceTimeline& dt : tl->devices) {
    TimelineDevice d;
    d.timeline = &dt;
    ASSIGN_OR_RETURN(d.window, ResolveWindow(snap, *tl, dt, request.from, request.to));
    if (context) d.categories = analysis::BuildCategoryCurve(*context, dt);
    r.devices.push_back(std::move(d));
  }
  return r;
}

}  // namespace memsnap::query
