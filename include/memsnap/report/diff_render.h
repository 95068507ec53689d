// Renderers of `memsnap diff`.
#pragma once

#include <ostream>
#include <string>

#include "memsnap/analysis/sites/diff.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Sites table (at most `top` rows, 0 = all), totals per scope, peaks, settings that differ.
void RenderDiffText(const analysis::DiffReport& rep, size_t top, std::ostream& out);
/// {before, after, at, by, live_bytes{before,after,delta}, sites[...], scopes[...], devices[...],
/// settings[...]}.
nlohmann::ordered_json DiffToJson(const analysis::DiffReport& rep);
/// The kinds of memory that changed from `before` to `after`, largest change first, then those
/// that did not: "activation 18.0 GiB -> 24.4 GiB (+6.4 GiB), parameter 12.7 GiB (unchanged)".
/// Empty when no kind changed. (`diff` prints it as "by kind:", `check` as "grew by kind".)
std::string KindChangesText(const analysis::CategoryBytes& before,
                            const analysis::CategoryBytes& after,
                            const analysis::CategoryNames& names);
/// {kind: {before, after, delta}} for every kind, in the order of analysis::Category.
nlohmann::ordered_json KindChangesJson(const analysis::CategoryBytes& before,
                                       const analysis::CategoryBytes& after,
                                       const analysis::CategoryNames& names);
/// Differential folded stacks "stack before after" (difffolded.pl / flamegraph.pl --negate), every
/// site, sorted by key.
void RenderDiffFolded(const analysis::DiffReport& rep, std::ostream& out);

}  // namespace memsnap::report
