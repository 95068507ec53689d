// `convert --from/--to`: the allocator state a slice of the trace is written with, the state at
// its end (issue 52), rebuilt from the session's timeline by analysis::RebuildStateAt.
#pragma once

#include <span>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/state_at.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

/// What `convert` needs of its file: a timeline with every lifetime (which names each live
/// block's stack) when it rebuilds a slice's state, else nothing but the snapshot.
Needs ConvertNeeds(bool rebuild_state);

/// The state after each device's cut. Errors: the session's timeline could not be rebuilt (it
/// was not opened with ConvertNeeds(true)).
absl::StatusOr<analysis::StateAtCut> StateAtCuts(const Session& session,
                                                 std::span<const analysis::StateCut> cuts);

}  // namespace memsnap::query
