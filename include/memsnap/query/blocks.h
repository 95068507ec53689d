// `blocks`: the individual block lifetimes live at a moment (or all of them), filtered.
#pragma once

#include <optional>

#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/blocks.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct BlocksRequest {
  analysis::BlockQuery query;     // query.at is at.moment
  MomentArg at;                   // when !query.all
  analysis::DeviceFilter device;  // nullopt: every device
};

Needs BlocksNeeds(const BlocksRequest& request);
absl::StatusOr<analysis::BlocksReport> BlocksQuery(const BlocksRequest& request, Session& session);

}  // namespace memsnap::query
