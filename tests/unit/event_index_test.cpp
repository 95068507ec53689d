#include "memsnap/analysis/timeline/event_index.h"

#include <doctest/doctest.h>

namespace memsnap::analysis {
namespace {

TEST_SUITE("event index") {
  TEST_CASE("a timeline point is the start or the state after one event, in order") {
    constexpr TimelinePoint start = TimelinePoint::Start();
    static_assert(start.is_start());
    static_assert(!start.event().has_value());
    static_assert(start.index() == -1);
    static_assert(TimelinePoint::FromIndex(-1) == start);
    static_assert(TimelinePoint::FromIndex(-7) == start);
    static_assert(TimelinePoint::FromIndex(5) == TimelinePoint::After(5));
    static_assert(*TimelinePoint::After(5).event() == 5);
    static_assert(start < TimelinePoint::After(0));
    static_assert(TimelinePoint::After(0) < TimelinePoint::After(1));
    CHECK(TimelinePoint::After(4000000000u).index() == 4000000000);  // no sign trouble
  }

  TEST_CASE("the points around a trace: before an event, after the last, and the next event") {
    static_assert(TimelinePoint::Before(0) == TimelinePoint::Start());
    static_assert(TimelinePoint::Before(7) == TimelinePoint::After(6));
    static_assert(TimelinePoint::End(0) == TimelinePoint::Start());  // no events: the start
    static_assert(TimelinePoint::End(10) == TimelinePoint::After(9));
    static_assert(TimelinePoint::Start().next_event() == 0);
    static_assert(TimelinePoint::After(4).next_event() == 5);
    static_assert(TimelinePoint() == TimelinePoint::Start());
    CHECK(TimelinePoint::FromIndex(TimelinePoint::After(12).index()) == TimelinePoint::After(12));
  }

  TEST_CASE("a lifetime's event is seen by a point at or after it, and the earlier of two wins") {
    constexpr LocalEvent none, three(3), five(5);
    static_assert(!none.SeenBy(TimelinePoint::After(100)));  // never seen, at no point
    static_assert(!three.SeenBy(TimelinePoint::Start()));
    static_assert(!three.SeenBy(TimelinePoint::After(2)));
    static_assert(three.SeenBy(TimelinePoint::After(3)));
    static_assert(three.SeenBy(TimelinePoint::After(4)));
    static_assert(Earlier(three, five) == three);
    static_assert(Earlier(five, three) == three);
    static_assert(Earlier(none, five) == five);  // a seen event before none
    static_assert(Earlier(none, none) == none);
    CHECK(LocalEvent(0).SeenBy(TimelinePoint::After(0)));
  }

  TEST_CASE("a lifetime's event is seen or not, and only a seen one has an index") {
    constexpr LocalEvent none;
    static_assert(!none.seen());
    static_assert(!none.index().has_value());
    static_assert(none == LocalEvent::None());
    constexpr LocalEvent seven(7);
    static_assert(seven.seen());
    static_assert(*seven.index() == 7);
    // An alloc older than the trace is live from the start; a free never seen, at no point.
    static_assert(none.PointOr(TimelinePoint::Start()) == TimelinePoint::Start());
    static_assert(seven.PointOr(TimelinePoint::Start()) == TimelinePoint::After(7));
    CHECK(LocalEvent(0).seen());
  }
}

}  // namespace
}  // namespace memsnap::analysis
