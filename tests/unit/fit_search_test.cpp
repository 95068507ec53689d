// The hinted halving behind the fit searches (src/analysis/allocator/fit_search.h): on a monotone
// predicate it answers exactly as the plain halving does, whatever the hint, and asks at most two
// questions when the hint lies in the threshold's final bracket.
#include "analysis/allocator/fit_search.h"

#include <doctest/doctest.h>

#include <cstdint>
#include <optional>
#include <set>
#include <vector>

namespace memsnap::analysis {
namespace {

bool operator==(const HalvingResult& a, const HalvingResult& b) {
  return a.found == b.found && a.lo == b.lo && a.hi == b.hi;
}

// The plain halving's answer and how many questions it asked, for a threshold `t`.
HalvingResult Plain(const Halving& h, int64_t t, int& asked) {
  asked = 0;
  return RunHalving(h, [&](int64_t x) {
    ++asked;
    return x >= t;
  });
}

// LargestBatchShare's shape: x = 128 - 128 share from 0 (the recorded run, known to fail) to 128
// (share 0, asked first), in steps of 1, without growth.
constexpr Halving kBatchShaped{.lo = 0, .hi = 128, .step = 1, .max_growths = 0};

struct Totals {
  int searches = 0;
  int landed = 0;
  int64_t asked_plain = 0;
  int64_t asked_hinted = 0;
};

// Every threshold in `thresholds` against every hint in `hints(t)`: the same answer as the plain
// halving; at most 2 questions when the hint is in the threshold's bracket, and never more than
// the plain halving's plus the brackets walked (max_up + 2).
template <typename Hints>
void CheckAll(const Halving& h, const std::vector<int64_t>& thresholds, Hints&& hints,
              Totals& totals) {
  constexpr int kMaxUp = 4;
  for (int64_t t : thresholds) {
    int plain_asked = 0;
    const HalvingResult want = Plain(h, t, plain_asked);
    for (std::optional<int64_t> hint : hints(t)) {
      CAPTURE(t);
      CAPTURE(hint.value_or(-1));
      HintStats stats;
      std::set<int64_t> asked;
      const HalvingResult got = HintedHalving(
          h, hint, kMaxUp,
          [&](int64_t x) {
            CHECK(asked.insert(x).second);  // never the same question twice
            return x >= t;
          },
          [] { return true; }, &stats);
      CHECK(got == want);
      CHECK(stats.asked == static_cast<int>(asked.size()));
      CHECK(stats.asked <= plain_asked + kMaxUp + 2);
      if (hint && want.found) {
        const HalvingResult b = HalvingBracketOf(h, *hint);
        if (b == want) {
          CHECK(stats.landed);
          CHECK(stats.asked <= 2);
        }
      }
      if (!hint) CHECK(stats.asked == plain_asked);
      ++totals.searches;
      totals.landed += stats.landed ? 1 : 0;
      totals.asked_plain += plain_asked;
      totals.asked_hinted += stats.asked;
    }
  }
}

}  // namespace

TEST_SUITE("fit search") {
  TEST_CASE("the bracket a hint predicts is the halving's final bracket for thresholds in it") {
    const Halving h{.lo = 999, .hi = 100000, .step = 7};
    for (int64_t t = h.lo - 5; t <= 2 * h.hi; t += 13) {
      const HalvingResult b = HalvingBracketOf(h, t);
      if (!b.found) continue;
      CAPTURE(t);
      CHECK(b.lo < std::max(t, h.lo + 1));
      CHECK(b.hi >= t);
      // Every threshold in (lo, hi] ends in the same bracket.
      for (int64_t u : {b.lo + 1, (b.lo + b.hi) / 2 + 1, b.hi}) CHECK(HalvingBracketOf(h, u) == b);
    }
  }

  TEST_CASE("a capacity search with a hint answers as the halving does, for every threshold") {
    // A fit search's shape: lo below the live peak, hi the unbounded peak, a 2 MiB step, growing
    // by 1/16 (a memory fraction) up to 8 times.
    const Halving h{.lo = 1'000'000 - 1, .hi = 1'050'000, .step = 64, .max_growths = 8};
    std::vector<int64_t> thresholds;
    for (int64_t t = h.lo - 10; t < 1'800'000; t += 97) thresholds.push_back(t);
    for (int64_t t : {h.lo, h.lo + 1, h.hi - 1, h.hi, h.hi + 1}) thresholds.push_back(t);
    Totals totals;
    CheckAll(
        h, thresholds,
        [&](int64_t t) {
          return std::vector<std::optional<int64_t>>{
              std::nullopt, t,    t - 1, t + 1,     t - 500,  t + 500,   t - 5'000,
              t + 5'000,    h.lo, h.hi,  h.lo - 77, 3 * h.hi, int64_t{0}};
        },
        totals);
    MESSAGE(totals.searches, " searches, ", totals.landed,
            " answered from the hint; questions: ", totals.asked_hinted, " hinted, ",
            totals.asked_plain, " plain");
    CHECK(totals.landed > totals.searches / 4);
    CHECK(totals.asked_hinted < totals.asked_plain);
  }

  TEST_CASE("a batch-share search with a hint answers as the halving does, for every threshold") {
    const Halving h = kBatchShaped;
    std::vector<int64_t> thresholds;
    for (int64_t t = -2; t <= 131; ++t) thresholds.push_back(t);
    Totals totals;
    CheckAll(
        h, thresholds,
        [](int64_t t) {
          std::vector<std::optional<int64_t>> hints{std::nullopt};
          for (int64_t d = -9; d <= 9; ++d) hints.push_back(t + d);
          return hints;
        },
        totals);
    CHECK(totals.landed > 0);
    // A hint on the threshold asks two questions instead of the halving's eight (7 when the
    // threshold is 0: share 0 not asked).
    int asked = 0;
    for (int64_t t = 1; t <= 128; ++t) {
      HintStats stats;
      HintedHalving(
          h, t, 4, [&](int64_t x) { return x >= t; }, [] { return true; }, &stats);
      asked += stats.asked;
    }
    CHECK(asked <= 2 * 128);
  }

  TEST_CASE("the walk up stops where asking was not cheap") {
    const Halving h = kBatchShaped;
    // The threshold is 3 brackets above the hint: walking up answers with 5 questions; told that
    // asking is dear, the halving runs after the hint's own bracket (8 questions in all: what
    // the two asked is not asked again).
    HintStats walked;
    const HalvingResult a = HintedHalving(
        h, 40, 4, [](int64_t x) { return x >= 43; }, [] { return true; }, &walked);
    CHECK(walked.landed);
    CHECK(walked.asked == 5);
    HintStats stopped;
    const HalvingResult b = HintedHalving(
        h, 40, 4, [](int64_t x) { return x >= 43; }, [] { return false; }, &stopped);
    CHECK_FALSE(stopped.landed);
    CHECK(stopped.asked == 8);
    CHECK(a == b);
    CHECK(b.hi == 43);
  }

  TEST_CASE("whatever the predicate, the answer's ends are values asked about") {
    // Not monotone: no promise of the halving's answer, but hi held and lo did not when asked,
    // as a fit search promises (a capacity a replay completed on, one it failed on).
    const Halving h = kBatchShaped;
    for (uint64_t seed = 1; seed <= 300; ++seed) {
      auto holds = [seed](int64_t x) {
        uint64_t v =
            (static_cast<uint64_t>(x) + 1) * 0x9E3779B97F4A7C15ULL ^ seed * 0xBF58476D1CE4E5B9ULL;
        v ^= v >> 29;
        return x >= static_cast<int64_t>(seed % 100) ? (v % 7 != 0) : (v % 5 == 0);
      };
      for (std::optional<int64_t> hint :
           {std::optional<int64_t>{}, std::optional<int64_t>{40},
            std::optional<int64_t>{static_cast<int64_t>(seed % 128)}}) {
        std::vector<std::pair<int64_t, bool>> asked;
        const HalvingResult r = HintedHalving(
            h, hint, 4,
            [&](int64_t x) {
              asked.emplace_back(x, holds(x));
              return asked.back().second;
            },
            [] { return true; });
        auto was = [&](int64_t x, bool v) {
          for (auto [a, b] : asked) {
            if (a == x && b == v) return true;
          }
          return false;
        };
        CAPTURE(seed);
        if (r.found) {
          CHECK(was(r.hi, true));
          CHECK((r.lo == h.lo || was(r.lo, false)));
        } else {
          CHECK(was(r.hi, false));
        }
      }
    }
  }
}

}  // namespace memsnap::analysis
