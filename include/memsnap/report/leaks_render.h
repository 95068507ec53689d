// Renderers of `memsnap leaks` (text and JSON) for both series and single-trace reports.
#pragma once

#include <ostream>

#include "memsnap/analysis/sites/leaks.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `leaks --json` object: mode, points[], total verdict, device memory, leaks and other
/// sites (each with bytes/counts per point), verdict counts, steps (single-trace mode).
nlohmann::ordered_json LeaksToJson(const analysis::LeakReport& report);

/// Human-readable report: the points, the leaks with their full stacks, then the other sites that
/// changed by at least --min-growth.
void RenderLeaksText(const analysis::LeakReport& report, std::ostream& out);

}  // namespace memsnap::report
