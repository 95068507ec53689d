// The per-rank table of every command over many files (analysis::RankTable), printed through
// the generic table renderers (report/table_render.h).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/util/table.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The table of ranks: file, one column per metric (bytes or ratio), the notes; a "median"
/// footer. Metrics no rank knows (no trace: no peak) and notes not meant for the table are left
/// out of the text (in_text false), kept in the data.
Table RankTableToTable(const analysis::RankTable& table);

/// {"medians":{metric: value}, "ranks":[{file, metric: value..., note: text...}],
/// "outliers":[{file, metric, value, median, reason}]}; bytes as integers, ratios as fractions
/// (4 decimals), unknown values as null.
nlohmann::ordered_json RankTableToJson(const analysis::RankTable& table);

/// Files left out of a per-rank analysis: [{"path": ..., "reason": ...}], in input order.
nlohmann::ordered_json LeftOutToJson(const std::vector<analysis::LeftOutFile>& files);

/// Why a rank is called out, in one sentence: "highest peak_bytes: 18.0 MiB (median 14.0 MiB),
/// 28.6% above it", "top site differs: ...".
std::string OutlierReason(const analysis::Outlier& outlier);

/// The table (one line per file, a median line) followed by the outliers.
void RenderRankTableText(const analysis::RankTable& table, std::ostream& out);

}  // namespace memsnap::report
