// `oom`: why each recorded OOM happened, or where the run would fail on a device of a given size,
// who held the memory then, and which settings fit (proven by replay; analysis/allocator/oom.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct OomRequest {
  std::optional<int64_t> device_memory;  // nullopt: the capacity each oom entry implies
  analysis::DeviceFilter device;         // nullopt: every device with a trace
  std::vector<std::string> candidates;   // empty: analysis::DefaultOomCandidates
  analysis::FitStart start = analysis::FitStart::kRecorded;  // where the replays start (fit.h)
  int top_holders = 5;                                       // 0: all
  int threads = 0;                                           // replays at once; 0: all cores
};

/// The timeline keeps every lifetime: the holders' categories read them.
Needs OomNeeds(const OomRequest& request);
/// Errors name the file (no trace, no capacity, a candidate that does not parse).
absl::StatusOr<analysis::OomReport> OomQuery(const OomRequest& request, Session& session);

}  // namespace memsnap::query
