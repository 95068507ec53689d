// How text tables show a site over several lines: the row's label (SiteLabel::head), then the
// callers it does not show, in stack order, one per line (docs/attribution.md, "Distinct
// labels"). Shared by top, diff, leaks and blocks.
#pragma once

#include <ostream>
#include <string_view>

#include "memsnap/analysis/attribution.h"

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

}  // namespace memsnap::report
