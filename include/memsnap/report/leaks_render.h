// Renderers of `memsnap leaks` (text and JSON) for both series and single-trace reports.
#pragma once

#include <ostream>
#include <string>

#include "memsnap/analysis/sites/leaks.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The report's caveats in words, joined by "; " (the `note` of JSON, "Note:" in text): the step
/// finder's finding when there are fewer than two steps, else too few steps, a series out of time
/// order, a pattern that may be the layers of one pass. Empty when there is nothing to say.
std::string LeaksNote(const analysis::LeakReport& report);

/// The `leaks --json` object: mode, points[], total verdict, device memory, leaks and other
/// sites (each with bytes/counts per point), verdict counts, steps (single-trace mode).
nlohmann::ordered_json LeaksToJson(const analysis::LeakReport& report);

/// Human-readable report: the points, the leaks with their full stacks, then the other sites that
/// changed by at least --min-growth.
void RenderLeaksText(const analysis::LeakReport& report, std::ostream& out);

}  // namespace memsnap::report
