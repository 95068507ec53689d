// Sites whose Python lines moved between two snapshots (an edit above them): the pairing rule that
// `diff` (MatchSites) and `leaks` (series mode, between consecutive snapshots) share, so one site
// keeps one row across an edit (docs/attribution.md, "Sites whose lines moved").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memsnap/analysis/sites/group.h"

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

/// One line of the user's code that one file ran under torch.compile and the other eagerly: the
/// indices of its rows in `before` and in `after` (ascending). The compiled side holds exactly one
/// row, the other side one or more (the eager operators that line ran; fusion makes one compiled
/// allocation of several).
struct CompiledPair {
  std::vector<size_t> before, after;
  bool compiled_after = true;  // the later file ran the line under torch.compile
  bool operator==(const CompiledPair&) const = default;
};

/// The rows of two groupings that are one line of the user's code run eagerly in one file and
/// under torch.compile in the other (docs/attribution.md, "Sites torch.compile replaced"). Only
/// rows that no key and no pair in `moved` matches take part: Python sites (SiteKind::kPython),
/// never synthetic, whose key the other side lacks. A compiled row (SiteInfo::what is
/// kCompiledWhat) is placed by its owner and the callers torch.compile recorded for its code
/// (SiteInfo::traced_callers); an eager row of the other file matches when its owner and callers
/// start with exactly those frames (exact text, lines included). A compiled row pairs with the
/// eager rows that match it when: it is the only compiled row at its place on its side; its side
/// has no eager row and the other side no compiled row there; no matching eager row also matches
/// another compiled row; and the matching eager rows were all called from the same frames beyond
/// the place. Anything else stays unpaired: which eager operator the compiled code replaced would
/// be a guess. Ordered by the first `before` index.
std::vector<CompiledPair> PairCompiledSites(const std::vector<GroupRow>& before,
                                            const std::vector<GroupRow>& after,
                                            const std::vector<MovedPair>& moved);

/// The label parts of a site paired across torch.compile: the compiled side's, with SiteInfo::what
/// naming the change ("mul, sigmoid → torch.compile" when the later file compiled the line,
/// "torch.compile → mul, sigmoid" when it ran it eagerly). `eager_ops` gets the eager side's
/// operators as the label names them: each once, the largest first (bytes, then name); a label
/// lists four and "+N more".
SiteInfo CompiledInfo(const std::vector<const GroupRow*>& eager, const SiteInfo& compiled,
                      bool compiled_after, std::vector<std::string>& eager_ops);

/// The label parts of a site paired across moved lines: `after`'s, with each text whose line moved
/// showing both lines ("linear ← model/net.py:15→17 forward"). The moves ("model/net.py:15→17")
/// are appended to `moved` (the owner first, then callers outward; each once).
SiteInfo MovedInfo(const SiteInfo& before, const SiteInfo& after, std::vector<std::string>& moved);

}  // namespace memsnap::analysis
