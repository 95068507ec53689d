// Renderers of `top`'s results (query/top.h): the table, its JSON, the folded stacks, and the
// per-rank table over several files.
#pragma once

#include <ostream>

#include "memsnap/query/top.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// {"file", "at", then GroupToJson of the rows shown}.
nlohmann::ordered_json TopResultToJson(const query::TopResult& result);
void RenderTopResultText(const query::TopResult& result, std::ostream& out);
/// The folded stacks of result.stacks (RenderFolded); nothing when there are none.
void RenderTopFolded(const query::TopResult& result, std::ostream& out);

/// {"at", "by", "ranks", "skipped"}.
nlohmann::ordered_json TopRanksToJson(const query::TopRanksResult& result);
void RenderTopRanksText(const query::TopRanksResult& result, std::ostream& out);

}  // namespace memsnap::report
