#pragma once

#include <ostream>

#include "memsnap/analysis/ranks.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// {"median_reserved_bytes":..., "ranks":[{file, reserved_bytes, allocated_bytes, peak_bytes,
/// top_site}], "outliers":[{file, metric, value, median, reason}]}
nlohmann::ordered_json RanksToJson(const analysis::RankReport& report);

/// A per-rank table (one line per file) followed by the outliers.
void RenderRanksText(const analysis::RankReport& report, std::ostream& out);

/// {"medians":{metric: value}, "ranks":[{file, metric: value..., note_label: note}],
/// "outliers":[...]}; bytes as integers, ratios as fractions, unknown values as null.
nlohmann::ordered_json RankTableToJson(const analysis::RankTable& table);

/// The table (one line per file, a median line) followed by the outliers.
void RenderRankTableText(const analysis::RankTable& table, std::ostream& out);

}  // namespace memsnap::report
