// Invariants of the timeline and grouping on every file of the real corpus (reported as skipped
// when it is absent).
#include <algorithm>
#include <filesystem>

#include "doctest/doctest.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/parse/reader.h"
#include "test_util.h"
#include "timeline_keep_check.h"

namespace memsnap::analysis {
namespace {

int64_t FinalLiveBytes(const Snapshot& snap, int32_t device) {
  int64_t sum = 0;
  for (const Segment& seg : snap.segments) {
    if (seg.device != device) continue;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (b.is_active()) sum += b.requested_size;
    }
  }
  return sum;
}

void CheckGroupTotals(const Snapshot& snap, const Timeline& tl, std::string_view at, GroupBy by) {
  GroupOptions o;
  o.by = by;
  auto m = ParseMoment(at);
  auto rep = GroupLive(snap, tl, *m, o);
  REQUIRE(rep.ok());
  int64_t rows = 0, expected = 0;
  for (const GroupRow& r : rep->rows) rows += r.bytes;
  for (const DeviceMoment& d : rep->devices) expected += d.live_bytes;
  CHECK(rows == rep->total_bytes);
  CHECK(rows == expected);
}

TEST_SUITE("corpus") {
  TEST_CASE(
      "reconstruction never fails, never goes negative, ends at the final live bytes and keeps "
      "lifetimes consistently") {
    for (const std::string& path : testing::CorpusFiles()) {
      CAPTURE(path);
      absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      auto tl = ReconstructTimeline(*snap);
      REQUIRE(tl.ok());
      for (const DeviceTimeline& dt : tl->devices) {
        CAPTURE(dt.device);
        CHECK(dt.end_requested == FinalLiveBytes(*snap, dt.device));
        CHECK(dt.FindLive(TimelinePoint::End(dt.num_events)) == dt.end_requested);
        CHECK(dt.unreconciled_requested_bytes == 0);
        CHECK(dt.start_requested >= 0);
        CHECK(dt.start_rounded >= 0);
        CHECK(dt.start_reserved >= 0);
        if (dt.num_events > 0) {
          std::vector<int64_t> live = dt.LiveCurve();
          CHECK(*std::min_element(live.begin(), live.end()) >= 0);
          std::vector<int64_t> rounded = analysis::LiveRoundedCurve(dt);
          CHECK(*std::min_element(rounded.begin(), rounded.end()) >= 0);
          CHECK(rounded.back() == dt.end_rounded);
          for (const analysis::ReservedStep& step : dt.reserved_steps) CHECK(step.bytes >= 0);
          CHECK(dt.ReservedAt(TimelinePoint::End(dt.num_events)) == dt.end_reserved);
        }
        int64_t by_class = 0;
        for (const BlockLifetime& b : dt.blocks) by_class += b.live_at_end() ? b.requested_size : 0;
        CHECK(by_class == dt.end_requested);
      }
      testing::CheckKeepModesAgree(*snap, Moment{Moment::Kind::kPeak, 0});
      testing::CheckKeepModesAgree(*snap, Moment{Moment::Kind::kEnd, 0});
      CheckGroupTotals(*snap, *tl, "peak", GroupBy::kStack);
      CheckGroupTotals(*snap, *tl, "end", GroupBy::kFunction);
      CheckGroupTotals(*snap, *tl, "peak", GroupBy::kAnnotation);
    }
  }

  TEST_CASE("legacy flavours without time_us are ordered by event index") {
    auto dir = testing::CorpusDir();
    if (!dir) return;  // skipped: the corpus is absent
    for (const char* name : {"Maphsge4_select_n__snapshot__5a601013.pickle",
                             "Yiyi_LLM-inference__1.3b_snapshot__08fa910c.pickle"}) {
      CAPTURE(name);
      auto snap = parse::ReadSnapshot(*dir + "/" + name);
      REQUIRE(snap.ok());
      auto tl = ReconstructTimeline(*snap);
      REQUIRE(tl.ok());
      REQUIRE(!tl->devices.empty());
      for (const DeviceTimeline& dt : tl->devices) CHECK(!dt.has_time);
    }
  }

  TEST_CASE("diff of natural corpus pairs shows the growth of the larger context") {
    auto dir = testing::CorpusDir();
    if (!dir) return;  // skipped: the corpus is absent
    auto a = parse::ReadSnapshot(
        *dir + "/Wedsonlin_a2__results_medium_128_training_memory_snapshot__0db7d8c0.pickle");
    auto b = parse::ReadSnapshot(
        *dir + "/Wedsonlin_a2__results_medium_512_training_memory_snapshot__61dcd14d.pickle");
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    DiffOptions o;
    o.at.kind = Moment::Kind::kPeak;
    auto rep = DiffSnapshots(*a, *b, o);
    REQUIRE(rep.ok());
    CHECK(rep->live_bytes.delta() > 0);
    int64_t sum = 0;
    for (const SiteDelta& s : rep->sites) sum += s.delta_bytes();
    for (const SiteDelta& s : rep->other_sites) sum += s.delta_bytes();
    CHECK(sum == rep->live_bytes.delta());
  }
}

}  // namespace
}  // namespace memsnap::analysis
