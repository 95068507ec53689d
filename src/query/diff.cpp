#include "memsnap/query/diff.h"

#include <optional>

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs DiffNeeds(const DiffRequest& request) {
  return NeedsTimeline(analysis::DiffTimelineOptions(request.options));
}

absl::StatusOr<DiffResult> DiffQuery(const DiffRequest& request, Session& before, Session& after) {
  const analysis::TimelineOptions to = *DiffNeeds(request).timeline;
  // Each session's own timeline when it answers for diff's (a timeline that could not be rebuilt
  // is reported as DiffSnapshots reports it), else one rebuilt here.
  std::optional<absl::StatusOr<analysis::Timeline>> own_before, own_after;
  auto timeline = [&](Session& s, std::optional<absl::StatusOr<analysis::Timeline>>& own)
      -> const absl::StatusOr<analysis::Timeline>& {
    if (s.timeline_options() && TimelineCovers(*s.timeline_options(), to)) {
      return s.timeline_status();
    }
    own = analysis::ReconstructTimeline(s.snapshot(), to);
    return *own;
  };
  const absl::StatusOr<analysis::Timeline>& tb = timeline(before, own_before);
  const absl::StatusOr<analysis::Timeline>& ta = timeline(after, own_after);
  DiffResult r;
  ASSIGN_OR_RETURN(r.report, analysis::DiffSnapshots(before.snapshot(), after.snapshot(), tb, ta,
                                                     request.options));
  r.report.before_path = before.path();
  r.report.after_path = after.path();
  if (request.folded) {
    // Differential flame graphs need whole stacks, whatever the table is grouped by.
    if (request.options.group.by == analysis::GroupBy::kStack) {
      r.stacks = r.report;
    } else {
      analysis::DiffOptions by_stack = request.options;
      by_stack.group.by = analysis::GroupBy::kStack;
      // The same timelines: DiffTimelineOptions does not depend on the grouping.
      ASSIGN_OR_RETURN(r.stacks, analysis::DiffSnapshots(before.snapshot(), after.snapshot(), tb,
                                                         ta, by_stack));
    }
  }
  return r;
}

}  // namespace memsnap::query
