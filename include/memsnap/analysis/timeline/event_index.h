// Typed device-local event indices. A device's trace is numbered from 0 (its first event); the
// timeline's points are the states *after* each event, plus the state before the first one.
//   - LocalEvent: an event a lifetime saw, or none (an alloc older than the trace, a free that
//     never came). 32 bits, as the hot structs store it.
//   - TimelinePoint: a moment of the timeline (a peak, a resolved --at, a curve read): the start,
//     or just after event i.
// Neither converts from or to a plain integer implicitly: the -1 of JSON output and the numbers
// of flags meet them only through FromIndex and index().
#pragma once

#include <compare>
#include <cstdint>
#include <limits>
#include <optional>

namespace memsnap::analysis {

/// A state of a device's timeline: before its first event (Start), or just after device-local
/// event i (After(i)). Ordered in time.
class TimelinePoint {
 public:
  constexpr TimelinePoint() = default;  // the start
  static constexpr TimelinePoint Start() { return TimelinePoint(); }
  static constexpr TimelinePoint After(uint32_t event) { return TimelinePoint(event); }
  /// The state just before `event` (the start for event 0).
  static constexpr TimelinePoint Before(uint32_t event) {
    return TimelinePoint(static_cast<int64_t>(event) - 1);
  }
  /// The state after a trace of `num_events` events: its last event's, or the start for none.
  static constexpr TimelinePoint End(uint32_t num_events) {
    return num_events == 0 ? Start() : After(num_events - 1);
  }
  /// From a number as output and flags write it (-1: the start; any negative reads as the start).
  static constexpr TimelinePoint FromIndex(int64_t e) { return TimelinePoint(e < 0 ? -1 : e); }

  constexpr bool is_start() const { return v_ < 0; }
  /// The event this point follows; nullopt at the start.
  constexpr std::optional<uint32_t> event() const {
    if (v_ < 0) return std::nullopt;
    return static_cast<uint32_t>(v_);
  }
  /// The first event after this point (0 after the start).
  constexpr uint32_t next_event() const { return static_cast<uint32_t>(v_ + 1); }
  /// -1 for the start, else the event: what output (JSON, CSV, "event:N") writes.
  constexpr int64_t index() const { return v_; }

  friend constexpr bool operator==(TimelinePoint, TimelinePoint) = default;
  friend constexpr auto operator<=>(TimelinePoint, TimelinePoint) = default;

 private:
  constexpr explicit TimelinePoint(int64_t v) : v_(v) {}
  int64_t v_ = -1;
};

/// A device-local event a lifetime saw, or none (not in the trace). 32 bits.
class LocalEvent {
 public:
  constexpr LocalEvent() = default;  // none
  constexpr explicit LocalEvent(uint32_t index) : v_(index) {}
  static constexpr LocalEvent None() { return LocalEvent(); }

  constexpr bool seen() const { return v_ != kNone; }
  /// The index; nullopt when the trace did not see the event.
  constexpr std::optional<uint32_t> index() const {
    if (v_ == kNone) return std::nullopt;
    return v_;
  }
  /// The point just after the event, or `none` when it was not seen (Start() for an alloc older
  /// than the trace: live from the first point).
  constexpr TimelinePoint PointOr(TimelinePoint none) const {
    return seen() ? TimelinePoint::After(v_) : none;
  }
  /// Seen, and at or before `p` (the state at `p` includes it).
  constexpr bool SeenBy(TimelinePoint p) const { return seen() && TimelinePoint::After(v_) <= p; }
  /// The earlier of two events, a seen one before none.
  friend constexpr LocalEvent Earlier(LocalEvent a, LocalEvent b) { return a.v_ <= b.v_ ? a : b; }

  friend constexpr bool operator==(LocalEvent, LocalEvent) = default;

  /// The most events a device's trace can have: every index below it is a LocalEvent.
  static constexpr uint64_t kMaxEvents = std::numeric_limits<uint32_t>::max();

 private:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  uint32_t v_ = kNone;
};

/// One step of a device's trace as two points of its timeline: from the state before its first
/// event to the state after its last, so its events are first_event() .. *to.event().
struct StepRange {
  TimelinePoint from, to;
  uint32_t first_event() const { return from.next_event(); }
  uint32_t end_event() const { return to.next_event(); }  // one past its last event
  friend bool operator==(const StepRange&, const StepRange&) = default;
};

static_assert(sizeof(LocalEvent) == sizeof(uint32_t));
static_assert(sizeof(TimelinePoint) == sizeof(int64_t));

}  // namespace memsnap::analysis
