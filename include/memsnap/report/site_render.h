// How text tables show a site over several lines: the row's label (SiteLabel::head), then the
// callers it does not show, in stack order, one per line (docs/attribution.md, "Distinct
// labels"). Shared by top, diff, leaks and blocks.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/attribution/attribution.h"

namespace memsnap::report {

/// The arrow before a caller under a row: the label's arrow, "← ".
inline constexpr std::string_view kCallerArrow = "\u2190 ";
/// The mark after a caller that tells its row apart from another with the same first line.
inline constexpr std::string_view kDiffersMark = "  [differs]";
/// The footnote for kDiffersMark, printed once under a table that used it.
inline constexpr std::string_view kDiffersNote =
    "[differs]: the caller that tells rows with the same first line apart\n";

/// Writes `indent` "← CALLER" for each analysis::CallerLines entry (at least `context`), then,
/// with `count_more`, `indent` "← … N more frames" when callers are left out. Returns whether a
/// line was marked.
bool RenderCallerLines(const analysis::SiteInfo& site, const analysis::SiteLabel& label,
                       size_t context, std::string_view indent, bool count_more, std::ostream& out);

/// The moves (MovedInfo's texts) that a site's lines as shown (`site` or its head, and up to
/// `callers_shown` callers) do not show.
std::vector<std::string_view> UnseenMoves(const std::string& site, const analysis::SiteInfo& info,
                                          const analysis::SiteLabel& label,
                                          const std::vector<std::string>& moved,
                                          size_t callers_shown);

/// The tag after the first line of a site paired across moved lines whose lines as shown (`site`
/// or its head, and up to `callers_shown` callers) do not show every move: the first unseen move,
/// its directories left out, and how many more (the JSON lists them all): " [moved:
/// benchmark.py:222→224 +2]"; " [lines moved]" when `moved` is empty; "" when all are shown.
std::string MovedTag(const std::string& site, const analysis::SiteInfo& info,
                     const analysis::SiteLabel& label, const std::vector<std::string>& moved,
                     size_t callers_shown);

}  // namespace memsnap::report
