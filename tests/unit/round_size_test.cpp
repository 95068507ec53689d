// round_size (docs/allocator-model.md §4), the one implementation in memsnap/sim/sizes.h that the
// simulator, the frag pass and the timeline share: known answers, the recorded settings, and
// the timeline's deliberate plain 512-byte rounding.
#include <doctest/doctest.h>

#include <limits>

#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/sim/allocator.h"
#include "memsnap/sim/config.h"
#include "memsnap/sim/sizes.h"
#include "trace_builders.h"

namespace memsnap::sim {
namespace {

constexpr RoundupDivisions Uniform(int64_t d) {
  RoundupDivisions r{};
  r.fill(d);
  return r;
}

constexpr int64_t k1_1MiB = kMiB + kMiB / 10;  // 1153433 bytes

// constexpr: these hold at compile time too.
static_assert(RoundSize(1, kNoRoundupDivisions) == 512);
static_assert(RoundSize(513, kNoRoundupDivisions) == 1024);
static_assert(RoundSize(k1_1MiB, Uniform(4)) == kMiB + kMiB / 4);

TEST_SUITE("round_size") {
  TEST_CASE("without divisions every size rounds up to a multiple of 512, at least 512") {
    CHECK(RoundSize(-1, kNoRoundupDivisions) == 512);
    CHECK(RoundSize(0, kNoRoundupDivisions) == 512);
    CHECK(RoundSize(1, kNoRoundupDivisions) == 512);
    CHECK(RoundSize(512, kNoRoundupDivisions) == 512);
    CHECK(RoundSize(513, kNoRoundupDivisions) == 1024);
    CHECK(RoundSize(1200, kNoRoundupDivisions) == 1536);
    CHECK(RoundSize(k1_1MiB, kNoRoundupDivisions) == 1153536);
    CHECK(RoundSize(300 * kMiB + 1, kNoRoundupDivisions) == 300 * kMiB + 512);
  }

  TEST_CASE("four divisions round to quarters between powers of two above 512 * 4 bytes") {
    const RoundupDivisions d = Uniform(4);
    CHECK(RoundSize(1, d) == 512);
    CHECK(RoundSize(1200, d) == 1536);                // 1200 <= 512 * 4: the 512 rule
    CHECK(RoundSize(2048, d) == 2048);                // 512 * 4 itself: still the 512 rule
    CHECK(RoundSize(2049, d) == 2560);                // quarters of [2048, 4096)
    CHECK(RoundSize(k1_1MiB, d) == kMiB + kMiB / 4);  // 1.1 MiB -> 1.25 MiB
    CHECK(RoundSize(300 * kMiB, d) == 320 * kMiB);
    CHECK(RoundSize(256 * kMiB, d) == 256 * kMiB);  // powers of two stay
  }

  TEST_CASE("each size bucket uses its own division count") {
    RoundupDivisions d{};
    d[0] = 8;  // < 2 MiB
    d[9] = 2;  // [512 MiB, 1 GiB)
    CHECK(RoundSize(k1_1MiB, d) == kMiB + kMiB / 8);
    CHECK(RoundSize(3 * kMiB + 1, d) == 3 * kMiB + 512);  // bucket 1: none
    CHECK(RoundSize(600 * kMiB + 1, d) == 768 * kMiB);
    d[15] = 4;  // the last bucket takes everything above
    CHECK(RoundSize(int64_t{50} << 40, d) == int64_t{56} << 40);
  }

  TEST_CASE("the config overload reads the configuration's divisions") {
    absl::StatusOr<AllocatorConfig> c = ParseAllocatorConf("roundup_power2_divisions:4");
    REQUIRE(c.ok());
    CHECK(RoundSize(k1_1MiB, *c) == kMiB + kMiB / 4);
    CHECK(RoundSize(k1_1MiB, AllocatorConfig{}) == 1153536);
  }

  TEST_CASE("recorded settings and the configuration built from them round alike") {
    AllocatorSettings s;
    s.present = true;
    s.conf = "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]";
    s.roundup_power2_divisions[0] = 4;
    s.roundup_power2_divisions[9] = 2;
    s.roundup_power2_divisions[10] = 4;
    for (int b = 11; b < 16; ++b) s.roundup_power2_divisions[b] = 8;
    const AllocatorConfig c = ConfigFromSettings(s);
    for (int64_t n :
         {int64_t{1}, int64_t{1200}, k1_1MiB, 600 * kMiB + 1, 1200 * kMiB, 3000 * kMiB}) {
      CAPTURE(n);
      CHECK(RoundSize(n, c) == RoundSize(n, s.roundup_power2_divisions));
    }
  }

  TEST_CASE("round_size is monotone, a multiple of 512 and at least the request") {
    const RoundupDivisions d = Uniform(4);
    int64_t last = 0;
    for (int64_t n = 1; n < 4 * kMiB; n += 4093) {
      const int64_t r = RoundSize(n, d);
      CHECK(r >= n);
      CHECK(r % kMinBlockSize == 0);
      CHECK(r >= last);
      last = r;
    }
  }

  TEST_CASE("round_size saturates at the largest multiple of 512 instead of overflowing") {
    // Found by UBSan: a trace entry of 2^63-1 bytes overflowed n + 511 (issue 20). The reader
    // bounds sizes to 1 TiB now, but RoundSize must be safe for any int64 on its own.
    constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
    constexpr int64_t kTop = kMax - (kMinBlockSize - 1);  // 2^63 - 512
    CHECK(RoundSize(kMax, kNoRoundupDivisions) == kTop);
    CHECK(RoundSize(kTop, kNoRoundupDivisions) == kTop);
    CHECK(RoundSize(kTop + 1, kNoRoundupDivisions) == kTop);
    CHECK(RoundSize(kTop - 1, kNoRoundupDivisions) == kTop);
    CHECK(RoundSize(std::numeric_limits<int64_t>::min(), kNoRoundupDivisions) == kMinBlockSize);
    // Divisions: the step above the last power of two would reach 2^63.
    CHECK(RoundSize(kMax, Uniform(2)) == kTop);
    CHECK(RoundSize(kMax, Uniform(4)) == kTop);
    CHECK(RoundSize(int64_t{1} << 62, Uniform(2)) == int64_t{1} << 62);
    CHECK(RoundSize((int64_t{1} << 62) + 1, Uniform(2)) == (int64_t{1} << 62) + (int64_t{1} << 61));
    // A division count so large that 512 * d overflows: no such step exists, the 512 rule holds.
    CHECK(RoundSize(kMiB + 1, Uniform(kMax)) == kMiB + 512);
    CHECK(RoundSize(kMiB + 1, Uniform(int64_t{1} << 62)) == kMiB + 512);
    CHECK(RoundSize(kMax, Uniform(int64_t{1} << 62)) == kTop);
    CHECK(RoundSize(kMiB + 1, Uniform(-4)) == kMiB + 512);
    // Monotone up to the top.
    int64_t last = 0;
    for (int shift = 50; shift <= 62; ++shift) {
      for (int64_t n :
           {(int64_t{1} << shift) - 1, int64_t{1} << shift, (int64_t{1} << shift) + 1}) {
        for (const RoundupDivisions& d : {kNoRoundupDivisions, Uniform(2), Uniform(16)}) {
          const int64_t r = RoundSize(n, d);
          CHECK(r >= n);
          CHECK(r % kMinBlockSize == 0);
        }
        CHECK(RoundSize(n, Uniform(2)) >= last);
        last = RoundSize(n, Uniform(2));
      }
    }
  }

  TEST_CASE("the segment size of a saturated request saturates too") {
    const AllocatorConfig config;
    constexpr int64_t kTop = std::numeric_limits<int64_t>::max() - (kMinBlockSize - 1);
    CHECK(SegmentSize(kTop, config) >= kTop - kRoundLarge);
    CHECK(SegmentSize(kTop, config) % kMinBlockSize == 0);
    CHECK(SegmentSize(50 * kMiB + 1, config) == 52 * kMiB);
  }

  TEST_CASE("the timeline rounds traced requests to 512 bytes whatever divisions were recorded") {
    Snapshot snap = testing::TraceSnapshot({
        testing::Ev(Action::kAlloc, 0x1000, k1_1MiB),
        testing::Ev(Action::kFreeRequested, 0x1000, k1_1MiB),
        testing::Ev(Action::kFreeCompleted, 0x1000, k1_1MiB),
    });
    snap.settings.roundup_power2_divisions = Uniform(4);
    absl::StatusOr<analysis::Timeline> tl = analysis::ReconstructTimeline(snap);
    REQUIRE_MESSAGE(tl.ok(), tl.status().message());
    REQUIRE(tl->devices.size() == 1);
    REQUIRE(tl->devices[0].blocks.size() == 1);
    CHECK(tl->devices[0].blocks[0].rounded_size == 1153536);
    CHECK(analysis::LiveRoundedCurve(tl->devices[0]).front() == 1153536);
  }
}

}  // namespace
}  // namespace memsnap::sim
