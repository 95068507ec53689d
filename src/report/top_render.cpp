#include "memsnap/report/top_render.h"

#include "memsnap/report/ranks_render.h"
#include "memsnap/report/timeline_render.h"

namespace memsnap::report {

nlohmann::ordered_json TopResultToJson(const query::TopResult& result) {
  nlohmann::ordered_json j;
  j["file"] = result.file;
  j["at"] = result.at.text;
  if (!result.at.described.empty()) j["at_described"] = result.at.described;
  j.update(GroupToJson(result.report, result.rows));
  return j;
}

void RenderTopResultText(const query::TopResult& result, std::ostream& out) {
  RenderGroupText(result.report, result.rows, out);
}

void RenderTopFolded(const query::TopResult& result, std::ostream& out) {
  if (result.stacks) RenderFolded(result.stacks->rows, out);
}

nlohmann::ordered_json TopRanksToJson(const query::TopRanksResult& result) {
  nlohmann::ordered_json j;
  j["at"] = result.at.text;
  j["by"] = std::string(analysis::GroupByName(result.by));
  j["ranks"] = RankTableToJson(result.ranks);
  j["skipped"] = LeftOutToJson(result.skipped);
  return j;
}

void RenderTopRanksText(const query::TopRanksResult& result, std::ostream& out) {
  RenderRankTableText(result.ranks, out);
}

}  // namespace memsnap::report
