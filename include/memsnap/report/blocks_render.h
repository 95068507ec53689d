// Renderers of `memsnap blocks`.
#pragma once

#include <ostream>

#include "memsnap/analysis/sites/blocks.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Table: device, address, size, requested, class, lifetime (events), stream, top frames. At most
/// `limit` rows (0 = all), then a "... N more" line.
void RenderBlocksText(const analysis::BlocksReport& rep, size_t limit, std::ostream& out);
/// {total_bytes, count, blocks: [{device, address, version, class, size, requested_size, stream,
/// alloc_event, free_requested_event, free_completed_event (null when not seen), times, frames}]}
nlohmann::ordered_json BlocksToJson(const analysis::BlocksReport& rep, size_t limit);

}  // namespace memsnap::report
