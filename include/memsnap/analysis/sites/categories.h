// Categories of memory over time and at a moment: the live bytes of each category (parameter,
// gradient, optimizer state...) after every event of a device, from its lifetimes and the
// attribution model's category of each (attribution.h). What `timeline --csv/--json`, `summary`
// and the report show.
//
// Invariant (tested): at every event, Σ categories == the live curve at that point.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/analysis/timeline/window.h"

namespace memsnap::analysis {

/// The live bytes of each category of one device as a start value and one change per event.
struct CategoryCurve {
  int32_t device = 0;
  CategoryNames names;  // what the categories are named (the context's GroupOptions::categories)
  /// Live before event 0: lifetimes older than the trace, by category; the bytes the trace cannot
  /// explain (DeviceTimeline::unreconciled_requested_bytes) are `unknown`.
  CategoryBytes start{};
  /// Per event: the category whose live bytes it changes (kMaxCategories: none) and by how much.
  std::vector<uint8_t> category;
  std::vector<int64_t> delta;
  /// Second changes of an event (an alloc over an address whose free was never seen ends the old
  /// lifetime at the same event), ascending by event.
  struct Change {
    uint32_t event = 0;
    uint8_t category = 0;
    int64_t delta = 0;
  };
  std::vector<Change> extra;
  /// Applies the changes of event e to `bytes`.
  void Apply(uint32_t e, CategoryBytes& bytes, size_t& next_extra) const;
};

/// Builds the curve of `dt`, which must have kept every lifetime (KeepLifetimes::kAll).
CategoryCurve BuildCategoryCurve(GroupContext& context, const DeviceTimeline& dt);
/// The curve of the lifetimes `counted` marks (one flag per DeviceTimeline::blocks entry, as
/// CountedLifetimes::counted), plus the final bytes the trace cannot explain as unknown from the
/// start: with every lifetime counted, Σ categories == the live curve at every event, never
/// negative. What the report's "Memory by kind" draws under its curve.
CategoryCurve BuildCategoryCurve(GroupContext& context, const DeviceTimeline& dt,
                                 const std::vector<bool>& counted);

/// Bytes per category at each of `points` (ascending).
std::vector<CategoryBytes> SampleCategoryCurve(const CategoryCurve& curve,
                                               const std::vector<TimelinePoint>& points);
/// SampleCategoryCurve(BuildCategoryCurve(context, dt, counted), points), without the curve's
/// per-event arrays (9 bytes an event): each lifetime's change is added to the first point that
/// sees it, so memory grows with the points, not the events (the report's peak, issue 37).
std::vector<CategoryBytes> SampleCountedCategories(GroupContext& context, const DeviceTimeline& dt,
                                                   const std::vector<bool>& counted,
                                                   const std::vector<TimelinePoint>& points);

/// The live bytes of each category over a window of the timeline (`timeline --json`): at its
/// start, at `peak` and at its end, and a series at about `samples` points spread evenly over it
/// (its ends included; a point is not repeated), all read in one pass over the curve.
struct WindowCategories {
  CategoryBytes start{}, peak{}, end{};
  std::vector<TimelinePoint> points;  // the series' points, ascending
  std::vector<CategoryBytes> series;  // one per point
};
WindowCategories SampleWindowCategories(const CategoryCurve& curve, const EventWindow& window,
                                        TimelinePoint peak, int samples);

/// One device's categories at a moment.
struct DeviceCategories {
  int32_t device = 0;
  TimelinePoint event;
  int64_t live_bytes = 0;
  CategoryBytes bytes{};
  bool has_trace = true;  // without events that change memory the moment is the dumped state
};

/// The categories of the memory live at `moment` on every device of `timeline` (which must keep
/// the lifetimes live then: kAll, or kLiveAt at that moment), decided in `categories` (the
/// session's). Errors as GroupLive.
absl::StatusOr<std::vector<DeviceCategories>> CategoriesAt(const Snapshot& snap,
                                                           const Timeline& timeline,
                                                           const Moment& moment,
                                                           const CategoryNames& categories);

}  // namespace memsnap::analysis
