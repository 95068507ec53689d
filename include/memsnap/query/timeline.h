// `timeline`: live and reserved bytes over time per device, in a window of the trace (--from,
// --to), with the categories of live memory over time when asked.
#pragma once

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/window.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

/// A slice of one device's timeline (analysis/timeline/window.h).
using EventWindow = analysis::EventWindow;

/// The window of device `dt` between two moments (either may be absent: the trace's start or
/// end), both checked against its trace. A time as `from` starts at the first event at or after
/// it. A step (`--from step:N --to step:M`) spans from where step N begins to where step M ends,
/// the steps of device `dt` (StepPoint; `timeline` holds it and needs its curve). A window that
/// ends before it starts is an error naming both flags, not one event.
absl::StatusOr<EventWindow> ResolveWindow(const Snapshot& snap, const analysis::Timeline& timeline,
                                          const analysis::DeviceTimeline& dt,
                                          const std::optional<MomentArg>& from,
                                          const std::optional<MomentArg>& to);

struct TimelineRequest {
  analysis::DeviceFilter device;  // nullopt: every device
  std::optional<MomentArg> from;  // nullopt: the start
  std::optional<MomentArg> to;    // nullopt: the end
  bool categories = false;        // the categories of live memory over time (and the lifetimes)
};

struct TimelineDevice {
  const analysis::DeviceTimeline* timeline = nullptr;  // owned by the session
  EventWindow window;
  analysis::CategoryCurve categories;  // empty unless asked
};

struct TimelineResult {
  std::string file;
  analysis::CategoryNames category_names;  // what the curves' categories are named
  std::vector<TimelineDevice> devices;
};

Needs TimelineNeeds(const TimelineRequest& request);
/// The result points into `session`'s timeline: keep the session while it is used.
absl::StatusOr<TimelineResult> TimelineQuery(const TimelineRequest& request, Session& session);

}  // namespace memsnap::query
