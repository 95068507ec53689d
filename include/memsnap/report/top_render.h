// Renderers of `top`'s results (query/top.h): the table, its JSON, the folded stacks, and the
// per-rank table over several files.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "memsnap/query/top.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// {"file", "at", then GroupToJson of the rows shown, and `last_step_gradients` where a device's
/// moment has them: [{device, forward_start_event, bytes, blocks, freed_by_zero_grad, lever}]}.
nlohmann::ordered_json TopResultToJson(const query::TopResult& result);
void RenderTopResultText(const query::TopResult& result, std::ostream& out);

/// The lever for last step's gradients alive in a forward pass.
inline constexpr std::string_view kZeroGradLever = "optimizer.zero_grad(set_to_none=True)";
/// "last step's gradients are still alive in this forward pass (from event:120): 6.8 MiB in 1
/// block, freed by zero_grad after it; optimizer.zero_grad(set_to_none=True) before the forward
/// frees them (6.8 MiB less here)", after "device N: " when `name_device`.
std::string StaleGradientsText(const analysis::StaleGradients& g, bool name_device);
/// The folded stacks of result.stacks (RenderFolded); nothing when there are none.
void RenderTopFolded(const query::TopResult& result, std::ostream& out);

/// {"at", "by", "ranks", "skipped"}.
nlohmann::ordered_json TopRanksToJson(const query::TopRanksResult& result);
void RenderTopRanksText(const query::TopRanksResult& result, std::ostream& out);

}  // namespace memsnap::report
