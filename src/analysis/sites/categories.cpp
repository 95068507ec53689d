// Categories of live memory over a device's events and at a moment.
#include "memsnap/analysis/sites/categories.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace memsnap::analysis {

namespace {

// What each lifetime (of those `counted`; nullptr: all) adds to its category, by the one rule
// both forms of the curve follow: one allocated before the trace is live at its start
// (on_start(category, bytes)); one allocated in it adds at its alloc event, and its
// free_completed takes it away (on_change(event, category, delta)).
template <typename OnStart, typename OnChange>
void ForEachCategoryChange(GroupContext& context, const DeviceTimeline& dt,
                           const std::vector<bool>* counted, OnStart&& on_start,
                           OnChange&& on_change) {
  for (size_t i = 0; i < dt.blocks.size(); ++i) {
    if (counted != nullptr && (i >= counted->size() || !(*counted)[i])) continue;
    const BlockLifetime& lt = dt.blocks[i];
    const auto c = static_cast<uint8_t>(context.Categorize(dt, lt).category);
    if (std::optional<uint32_t> a = lt.alloc_event.index(); !a) {
      on_start(c, lt.requested_size);
    } else if (*a < dt.num_events) {
      on_change(*a, c, lt.requested_size);
    }
    if (std::optional<uint32_t> f = lt.free_completed_event.index(); f && *f < dt.num_events) {
      on_change(*f, c, -lt.requested_size);
    }
  }
}

// counted: nullptr for every lifetime. The unexplained rest of the start counts as unknown.
CategoryCurve BuildCurve(GroupContext& context, const DeviceTimeline& dt,
                         const std::vector<bool>* counted) {
  CategoryCurve curve;
  curve.device = dt.device;
  curve.names = context.options().categories;
  curve.category.assign(dt.num_events, static_cast<uint8_t>(kMaxCategories));
  curve.delta.assign(dt.num_events, 0);
  const auto none = static_cast<uint8_t>(kMaxCategories);
  auto change = [&](uint32_t e, uint8_t c, int64_t delta) {
    if (curve.category[e] == none || curve.category[e] == c) {
      curve.category[e] = c;
      curve.delta[e] += delta;
    } else {
      curve.extra.push_back({e, c, delta});
    }
  };
  ForEachCategoryChange(
      context, dt, counted, [&](uint8_t c, int64_t bytes) { curve.start[c] += bytes; }, change);
  std::stable_sort(curve.extra.begin(), curve.extra.end(),
                   [](const auto& a, const auto& b) { return a.event < b.event; });
  // The final bytes the trace cannot explain are live from the start, of no known kind.
  curve.start[static_cast<size_t>(Category::kUnknown)] += dt.unreconciled_requested_bytes;
  return curve;
}

}  // namespace

CategoryCurve BuildCategoryCurve(GroupContext& context, const DeviceTimeline& dt) {
  return BuildCurve(context, dt, nullptr);
}

CategoryCurve BuildCategoryCurve(GroupContext& context, const DeviceTimeline& dt,
                                 const std::vector<bool>& counted) {
  return BuildCurve(context, dt, &counted);
}

void CategoryCurve::Apply(uint32_t e, CategoryBytes& bytes, size_t& next_extra) const {
  if (category[e] < kMaxCategories) bytes[category[e]] += delta[e];
  while (next_extra < extra.size() && extra[next_extra].event <= e) {
    bytes[extra[next_extra].category] += extra[next_extra].delta;
    ++next_extra;
  }
}

std::vector<CategoryBytes> SampleCategoryCurve(const CategoryCurve& curve,
                                               const std::vector<TimelinePoint>& points) {
  std::vector<CategoryBytes> out;
  out.reserve(points.size());
  CategoryBytes now = curve.start;
  uint32_t next = 0;  // first event not yet applied
  size_t next_extra = 0;
  for (TimelinePoint p : points) {
    for (; next < p.next_event() && next < curve.delta.size(); ++next) {
      curve.Apply(next, now, next_extra);
    }
    out.push_back(now);
  }
  return out;
}

std::vector<CategoryBytes> SampleCountedCategories(GroupContext& context, const DeviceTimeline& dt,
                                                   const std::vector<bool>& counted,
                                                   const std::vector<TimelinePoint>& points) {
  // A change at event e shows from the first point k with e < points[k].next_event() on (none:
  // past the last point, seen by none). The first such k is looked up in [first[e >> kShift],
  // first[(e >> kShift) + 1]], a short stretch of the points.
  constexpr int kShift = 6;
  const uint32_t n = dt.num_events;
  std::vector<uint32_t> ends;  // points[k].next_event(), capped at the device's events
  ends.reserve(points.size());
  for (TimelinePoint p : points) ends.push_back(std::min(p.next_event(), n));
  std::vector<uint32_t> first((static_cast<size_t>(n) >> kShift) + 2);
  for (size_t j = 0; j < first.size(); ++j) {
    const uint64_t e = uint64_t{j} << kShift;
    first[j] =
        static_cast<uint32_t>(std::upper_bound(ends.begin(), ends.end(), e,
                                               [](uint64_t v, uint32_t end) { return v < end; }) -
                              ends.begin());
  }
  auto point_of = [&](uint32_t e) -> size_t {
    const size_t j = e >> kShift;
    return static_cast<size_t>(
        std::upper_bound(ends.begin() + first[j], ends.begin() + first[j + 1], e) - ends.begin());
  };
  std::vector<CategoryBytes> out(points.size(), CategoryBytes{});
  CategoryBytes start{};
  // The final bytes the trace cannot explain are live from the start, of no known kind.
  start[static_cast<size_t>(Category::kUnknown)] += dt.unreconciled_requested_bytes;
  ForEachCategoryChange(
      context, dt, &counted, [&](uint8_t c, int64_t bytes) { start[c] += bytes; },
      [&](uint32_t e, uint8_t c, int64_t delta) {
        if (const size_t k = point_of(e); k < out.size()) out[k][c] += delta;
      });
  // Running sums: each point holds what every earlier change left.
  CategoryBytes now = start;
  for (CategoryBytes& bytes : out) {
    for (size_t c = 0; c < bytes.size(); ++c) now[c] += bytes[c];
    bytes = now;
  }
  return out;
}

absl::StatusOr<std::vector<DeviceCategories>> CategoriesAt(const Snapshot& snap,
                                                           const Timeline& timeline,
                                                           const Moment& moment,
                                                           const CategoryNames& categories) {
  GroupOptions options;
  options.by = GroupBy::kCategory;
  options.categories = categories;
  auto context = GroupContext::Create(snap, options);
  if (!context.ok()) return context.status();
  std::vector<DeviceCategories> out;
  for (const DeviceTimeline& dt : timeline.devices) {
    DeviceCategories d;
    d.device = dt.device;
    d.event = ResolveMoment(snap, dt, moment);
    d.has_trace = dt.num_events > 0 && dt.RecordsMemory();
    if (dt.kept == KeepLifetimes::kNone ||
        (dt.kept == KeepLifetimes::kLiveAt && dt.kept_event != d.event)) {
      return absl::InternalError(absl::StrCat("device ", dt.device,
                                              ": the timeline did not keep the lifetimes live at ",
                                              DescribeEvent(snap, dt, d.event)));
    }
    std::optional<int64_t> live = dt.FindLive(d.event);
    if (!live) {
      return absl::InternalError(absl::StrCat("device ", dt.device,
                                              ": the timeline has no curve at ",
                                              DescribeEvent(snap, dt, d.event)));
    }
    d.live_bytes = *live;
    int64_t explained = 0;
    for (uint32_t i : LiveBlocksAt(dt, d.event)) {
      const BlockLifetime& lt = dt.blocks[i];
      d.bytes[static_cast<size_t>((*context)->Categorize(dt, lt).category)] += lt.requested_size;
      explained += lt.requested_size;
    }
    // Bytes no lifetime explains (unreconciled with the final state) are unknown.
    d.bytes[static_cast<size_t>(Category::kUnknown)] += d.live_bytes - explained;
    out.push_back(d);
  }
  return out;
}

WindowCategories SampleWindowCategories(const CategoryCurve& curve, const EventWindow& w,
                                        TimelinePoint peak, int samples) {
  WindowCategories out;
  const int64_t span = w.to.index() - w.from.index();
  const int64_t n = std::max<int64_t>(1, std::min<int64_t>(samples, span));
  for (int64_t k = 0; k <= n; ++k) {
    const TimelinePoint p = TimelinePoint::FromIndex(w.from.index() + span * k / n);
    if (out.points.empty() || out.points.back() != p) out.points.push_back(p);
  }
  std::vector<TimelinePoint> all = out.points;
  all.push_back(peak);
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  const std::vector<CategoryBytes> sampled = SampleCategoryCurve(curve, all);
  auto at = [&](TimelinePoint p) {
    return sampled[std::lower_bound(all.begin(), all.end(), p) - all.begin()];
  };
  out.start = at(w.from);
  out.peak = at(peak);
  out.end = at(w.to);
  for (TimelinePoint p : out.points) out.series.push_back(at(p));
  return out;
}

}  // namespace memsnap::analysis
