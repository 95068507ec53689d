// The halving search behind the fit answers (SmallestFittingCapacity: `frag`'s fix line, `oom`'s
// `fits on`; LargestBatchShare: `oom`'s `cut` line), and a hinted form of it that probes where
// the answer is predicted to be and returns what the halving returns whenever the predicate is
// monotone (docs/simulator.md, "The search for the smallest memory that fits").
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

namespace memsnap::analysis {

/// Where a halving search for the smallest x at which a predicate holds starts: `lo` is taken
/// not to hold (never asked), `hi` is asked first; while it does not hold, the bracket grows
/// (lo = hi, hi += max(step, hi / 16)), at most `max_growths` times. Then the bracket is halved
/// (mid = lo + (hi - lo) / 2) until it is at most `step` wide when `exact`, else at most
/// max(step, hi / 400).
struct Halving {
  int64_t lo = 0;
  int64_t hi = 1;
  int64_t step = 1;
  int max_growths = 8;
  bool exact = false;
};

/// The final bracket: the predicate did not hold at `lo` and held at `hi`, the answer. `found`
/// false: it did not hold at the last grown `hi` either.
struct HalvingResult {
  bool found = false;
  int64_t lo = 0;
  int64_t hi = 0;
};

/// The halving search of `h`, asking `holds(x)` at each step.
template <typename Holds>
HalvingResult RunHalving(const Halving& h, Holds&& holds) {
  int64_t lo = h.lo;
  int64_t hi = h.hi;
  for (int tries = 0; !holds(hi); ++tries) {
    if (tries == h.max_growths) return {false, lo, hi};
    lo = hi;
    hi += std::max(h.step, hi / 16);
  }
  const int64_t tolerance = h.exact ? h.step : std::max(h.step, hi / 400);
  while (hi - lo > tolerance) {
    const int64_t mid = lo + (hi - lo) / 2;
    (holds(mid) ? hi : lo) = mid;
  }
  return {true, lo, hi};
}

/// The final bracket RunHalving(h) ends in when the predicate holds exactly from `t` up: worked
/// out by arithmetic alone. For every threshold T in (lo, hi] the halving asks the same
/// questions (each one it asks lies at or below lo, or at or above hi) and ends there.
inline HalvingResult HalvingBracketOf(const Halving& h, int64_t t) {
  return RunHalving(h, [t](int64_t x) { return x >= t; });
}

/// What HintedHalving asked (tests and --timings).
struct HintStats {
  int asked = 0;        // calls of the predicate
  bool landed = false;  // answered from the hint's brackets, without the halving
};

/// RunHalving(h, holds) for a predicate that holds from some threshold up, asked fewer times
/// when `hint` is near that threshold: the halving's final bracket for a threshold at `hint` is
/// worked out by arithmetic (HalvingBracketOf), and its ends asked, `lo` first; if `lo` does not
/// hold and `hi` does, that is the halving's answer. While `hi` does not hold either, the next
/// bracket up is tried, at most `max_up` times and while `keep_walking()` says that asking was
/// cheap (a predicate that does not hold is meant to be the cheap answer: a replay that fails
/// stops at its failure, which can still come late in the trace). Otherwise the halving runs,
/// without asking again what is known: a value at or below one that did not hold does not hold, one
/// at or above one that held holds. So a hint that misses costs at most the brackets it tried.
///
/// Whatever the predicate, the returned `hi` is a value at which it was asked and held, and
/// `lo` one at which it was asked and did not (or h.lo): if what was inferred would end the
/// search at a value not asked, the halving runs again asking every value it needs.
template <typename Holds, typename KeepWalking>
HalvingResult HintedHalving(const Halving& h, std::optional<int64_t> hint, int max_up,
                            Holds&& holds, KeepWalking&& keep_walking, HintStats* stats = nullptr) {
  std::map<int64_t, bool> asked;
  int64_t not_holding = h.lo;      // the largest value known not to hold
  std::optional<int64_t> holding;  // the smallest value known to hold
  auto ask = [&](int64_t x) {
    if (auto it = asked.find(x); it != asked.end()) return it->second;
    const bool r = holds(x);
    if (stats != nullptr) ++stats->asked;
    asked.emplace(x, r);
    if (r) {
      holding = holding ? std::min(*holding, x) : x;
    } else {
      not_holding = std::max(not_holding, x);
    }
    return r;
  };
  auto known = [&](int64_t x) {
    if (x <= not_holding) return false;
    if (holding && x >= *holding) return true;
    return ask(x);
  };
  if (hint) {
    HalvingResult b = HalvingBracketOf(h, *hint);
    if (b.found && !known(b.lo)) {
      for (int up = 0; up <= max_up; ++up) {
        if (known(b.hi)) {
          if (stats != nullptr) stats->landed = true;
          return b;
        }
        if (up == max_up || !keep_walking()) break;
        b = HalvingBracketOf(h, b.hi + 1);  // its lo is the hi that did not hold
        if (!b.found) break;
      }
    }
  }
  HalvingResult r = RunHalving(h, known);
  auto was = [&](int64_t x, bool value) {
    auto it = asked.find(x);
    return it != asked.end() && it->second == value;
  };
  // With a monotone predicate the ends are always values asked (every value asked is an end of
  // some final bracket, never inside one); a predicate that is not monotone gets the halving.
  const bool ends_asked =
      r.found ? was(r.hi, true) && (r.lo == h.lo || was(r.lo, false)) : was(r.hi, false);
  if (!ends_asked) {
    r = RunHalving(h, ask);
  }
  return r;
}

}  // namespace memsnap::analysis
