// Typed device-local event indices. A device's trace is numbered from 0 (its first event); the
// timeline's points are the states *after* each event, plus the state before the first one.
// Two conventions used to carry this as raw integers, told apart by comments:
//   - lifetimes store a uint32_t event, kNoEvent when the trace did not see it (an alloc older
//     than the trace, a free that never came): LocalEvent;
//   - moments, peaks and curve reads use an int64_t point, -1 for the state before event 0:
//     TimelinePoint.
// Both are 4 or 8 bytes with the same representation, so a field can change type without
// changing layout or speed.
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <optional>

namespace memsnap::analysis {

/// "No such event" for lifetime event indices (LocalEvent's none, as stored).
inline constexpr uint32_t kNoEvent = std::numeric_limits<uint32_t>::max();

/// A state of a device's timeline: before its first event (Start), or just after device-local
/// event i (After(i)).
class TimelinePoint {
 public:
  static constexpr TimelinePoint Start() { return TimelinePoint(-1); }
  static constexpr TimelinePoint After(uint32_t event) { return TimelinePoint(event); }
  /// From the int64_t convention (-1: the start; any negative reads as the start).
  static constexpr TimelinePoint FromIndex(int64_t e) { return TimelinePoint(e < 0 ? -1 : e); }

  constexpr bool is_start() const { return v_ < 0; }
  /// The event this point follows; nullopt at the start.
  constexpr std::optional<uint32_t> event() const {
    if (v_ < 0) return std::nullopt;
    return static_cast<uint32_t>(v_);
  }
  /// -1 for the start, else the event: for output and for loops over points.
  constexpr int64_t index() const { return v_; }

  friend constexpr bool operator==(TimelinePoint, TimelinePoint) = default;
  friend constexpr auto operator<=>(TimelinePoint, TimelinePoint) = default;

 private:
  constexpr explicit TimelinePoint(int64_t v) : v_(v) {}
  int64_t v_;
};

/// A device-local event a lifetime saw, or none (not in the trace). 32 bits: kNoEvent is none.
class LocalEvent {
 public:
  constexpr LocalEvent() = default;  // none
  constexpr explicit LocalEvent(uint32_t index) : v_(index) {}
  static constexpr LocalEvent None() { return LocalEvent(); }
  /// From a field that holds kNoEvent for none.
  static constexpr LocalEvent FromRaw(uint32_t raw) { return LocalEvent(raw); }

  constexpr bool seen() const { return v_ != kNoEvent; }
  /// The index; nullopt when the trace did not see the event.
  constexpr std::optional<uint32_t> index() const {
    if (v_ == kNoEvent) return std::nullopt;
    return v_;
  }
  /// The point just after the event, or `none` when it was not seen (Start() for an alloc older
  /// than the trace: live from the first point).
  constexpr TimelinePoint PointOr(TimelinePoint none) const {
    return seen() ? TimelinePoint::After(v_) : none;
  }
  constexpr uint32_t raw() const { return v_; }  // as stored, kNoEvent for none

  friend constexpr bool operator==(LocalEvent, LocalEvent) = default;

 private:
  uint32_t v_ = kNoEvent;
};

static_assert(sizeof(LocalEvent) == sizeof(uint32_t));
static_assert(sizeof(TimelinePoint) == sizeof(int64_t));

}  // namespace memsnap::analysis
