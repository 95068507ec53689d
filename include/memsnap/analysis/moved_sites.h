// Sites whose Python lines moved between two snapshots (an edit above them): the pairing rule that
// `diff` (MatchSites) and `leaks` (series mode, between consecutive snapshots) share, so one site
// keeps one row across an edit (docs/attribution.md, "Sites whose lines moved").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memsnap/analysis/group.h"

namespace memsnap::analysis {

/// Between a moved frame's lines: "model/net.py:15→17".
inline constexpr std::string_view kMovedArrow = "\u2192";

/// One pair: the index of a row of the earlier snapshot and of a row of the later one.
struct MovedPair {
  size_t before = 0, after = 0;
  bool operator==(const MovedPair&) const = default;
};

/// The rows of two groupings (each key at most once per side) that are one site whose lines moved:
/// a row whose key only `before` has and a row whose key only `after` has, with the same
/// SiteInfo::unlined_key (same files, functions, autograd node and operator from the owner outward,
/// lines aside), neither synthetic, each the only such candidate of its side. Where a side has
/// several candidates of one unlined key, a frame keeps its line when the other side's candidates
/// have its exact text, or when the other side has it in any row and no pair of only candidates
/// shows that frame moved there from another line; the candidates told apart by those lines pair
/// when each is again the only one of its side. Rows without an unlined key
/// (GroupOptions::unlined_keys off, or not grouped by site) never pair. Ordered by `before`.
std::vector<MovedPair> PairMovedSites(const std::vector<GroupRow>& before,
                                      const std::vector<GroupRow>& after);

/// The label parts of a site paired across moved lines: `after`'s, with each text whose line moved
/// showing both lines ("linear ← model/net.py:15→17 forward"). The moves ("model/net.py:15→17")
/// are appended to `moved` (the owner first, then callers outward; each once).
SiteInfo MovedInfo(const SiteInfo& before, const SiteInfo& after, std::vector<std::string>& moved);

}  // namespace memsnap::analysis
