#include "memsnap/query/convert.h"

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs ConvertNeeds(bool rebuild_state) {
  if (!rebuild_state) return Needs{};
  analysis::TimelineOptions options;
  options.keep = analysis::KeepLifetimes::kAll;
  options.curve = false;  // the rewind reads the lifetimes only
  return NeedsTimeline(options);
}

absl::StatusOr<analysis::StateAtCut> StateAtCuts(const Session& session,
                                                 std::span<const analysis::StateCut> cuts) {
  ASSIGN_OR_RETURN(const analysis::Timeline* timeline, session.timeline());
  return analysis::RebuildStateAt(session.snapshot(), *timeline, cuts);
}

}  // namespace memsnap::query
