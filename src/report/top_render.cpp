#include "memsnap/report/top_render.h"

#include "absl/strings/str_cat.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::report {

nlohmann::ordered_json TopResultToJson(const query::TopResult& result) {
  nlohmann::ordered_json j;
  j["file"] = result.file;
  j["at"] = result.at.text;
  if (!result.at.described.empty()) j["at_described"] = result.at.described;
  j.update(GroupToJson(result.report, result.rows));
  nlohmann::ordered_json stale = nlohmann::ordered_json::array();
  for (const analysis::StaleGradients& g : result.stale_gradients) {
    stale.push_back({{"device", g.device},
                     {"forward_start_event", g.forward_start},
                     {"bytes", g.bytes},
                     {"blocks", g.blocks},
                     {"freed_by_zero_grad", g.freed_by_zero_grad},
                     {"lever", std::string(kZeroGradLever)}});
  }
  if (!stale.empty()) j["last_step_gradients"] = std::move(stale);  // only where it applies
  return j;
}

void RenderTopResultText(const query::TopResult& result, std::ostream& out) {
  RenderGroupText(result.report, result.rows, out);
  for (const analysis::StaleGradients& g : result.stale_gradients) {
    out << StaleGradientsText(g, result.report.devices.size() > 1) << "\n";
  }
}

std::string StaleGradientsText(const analysis::StaleGradients& g, bool name_device) {
  return absl::StrCat(
      name_device ? absl::StrCat("device ", g.device, ": ") : std::string(),
      "last step's gradients are still alive in this forward pass (from event:", g.forward_start,
      "): ", FormatBytes(g.bytes), " in ", FormatCount(g.blocks),
      g.blocks == 1 ? " block" : " blocks",
      g.freed_by_zero_grad > 0 ? ", freed by zero_grad after it" : ", freed after it", "; ",
      Sv(kZeroGradLever), " before the forward frees them (", FormatBytes(g.bytes), " less here)");
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
