// Renderers of `memsnap diff`.
#pragma once

#include <ostream>

#include "memsnap/analysis/diff.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Sites table (at most `top` rows, 0 = all), totals per scope, peaks, settings that differ.
void RenderDiffText(const analysis::DiffReport& rep, size_t top, std::ostream& out);
/// {before, after, at, by, live_bytes{before,after,delta}, sites[...], scopes[...], devices[...],
/// settings[...]}.
nlohmann::ordered_json DiffToJson(const analysis::DiffReport& rep);
/// Differential folded stacks "stack before after" (difffolded.pl / flamegraph.pl --negate), every
/// site, sorted by key.
void RenderDiffFolded(const analysis::DiffReport& rep, std::ostream& out);

}  // namespace memsnap::report
