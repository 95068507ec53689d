#include "memsnap/query/diff.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs DiffNeeds(const DiffRequest& request) {
  analysis::TimelineOptions to = analysis::DiffTimelineOptions(request.options);
  if (request.step) to = TimelineOptionsAt(*request.step, to);
  return NeedsTimeline(to);
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
  analysis::DiffOptions options = request.options;
  // Both files were read with the same settings: one vocabulary of categories for the two sides.
  options.group.categories = before.categories();
  if (request.step) {
    // The same step of each run: its peak in each file, found in each file's own steps.
    std::array<analysis::Moment, 2> at;
    std::string where[2];
    const absl::StatusOr<analysis::Timeline>* tls[2] = {&tb, &ta};
    Session* sessions[2] = {&before, &after};
    for (int side = 0; side < 2; ++side) {
      if (!tls[side]->ok()) return WithPath(sessions[side]->path(), tls[side]->status());
      absl::StatusOr<ResolvedMoment> m =
          ResolveMomentArg(*request.step, sessions[side]->snapshot(), **tls[side]);
      if (!m.ok()) return WithPath(sessions[side]->path(), m.status());
      at[side] = m->arg.moment;
      where[side] = m->arg.described;
    }
    options.auto_moment = false;
    options.at = at[0];
    options.at_each = at;
    options.at_label = absl::StrCat("step ", request.step->text, " of each run (before: ", where[0],
                                    "; after: ", where[1], ")");
  }
  DiffResult r;
  ASSIGN_OR_RETURN(r.report,
                   analysis::DiffSnapshots(before.snapshot(), after.snapshot(), tb, ta, options));
  r.report.before_path = before.path();
  r.report.after_path = after.path();
  if (const analysis::DeviceFilter device = request.device) {
    std::vector<analysis::ScopeDelta>& scopes = r.report.scopes;
    std::vector<analysis::DeviceDelta>& devices = r.report.devices;
    const bool known =
        std::any_of(scopes.begin(), scopes.end(),
                    [&](const analysis::ScopeDelta& s) { return s.device == *device; }) ||
        std::any_of(devices.begin(), devices.end(),
                    [&](const analysis::DeviceDelta& d) { return d.device == *device; });
    if (!known) {
      return absl::InvalidArgumentError(absl::StrCat("--device ", *device, ": no such device in ",
                                                     before.path(), " or ", after.path()));
    }
    std::erase_if(scopes, [&](const analysis::ScopeDelta& s) { return s.device != *device; });
    std::erase_if(devices, [&](const analysis::DeviceDelta& d) { return d.device != *device; });
  }
  if (request.folded) {
    // Differential flame graphs need whole stacks, whatever the table is grouped by.
    if (request.options.group.by == analysis::GroupBy::kStack) {
      r.stacks = r.report;
    } else {
      analysis::DiffOptions by_stack = options;
      by_stack.group.by = analysis::GroupBy::kStack;
      // The same timelines: DiffTimelineOptions does not depend on the grouping.
      ASSIGN_OR_RETURN(
          r.stacks, analysis::DiffSnapshots(before.snapshot(), after.snapshot(), tb, ta, by_stack));
    }
  }
  return r;
}

}  // namespace memsnap::query
