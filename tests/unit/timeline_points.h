// Test shorthands for timeline points: tests write points as the numbers output uses (-1: the
// start) and read the live curve where the timeline has one.
#pragma once

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>

#include "memsnap/analysis/timeline/timeline.h"

namespace memsnap::testing {

/// The point output writes as `e` (-1: the start).
inline analysis::TimelinePoint Point(int64_t e) { return analysis::TimelinePoint::FromIndex(e); }

/// Live requested bytes at point `e` of a timeline built with its curve (fails the test without).
inline int64_t LiveAt(const analysis::DeviceTimeline& dt, int64_t e) {
  std::optional<analysis::LiveCurveRef> curve = dt.live_curve();
  REQUIRE(curve.has_value());
  return curve->At(Point(e));
}

}  // namespace memsnap::testing
