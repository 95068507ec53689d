#include "memsnap/query/blocks.h"

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs BlocksNeeds(const BlocksRequest& request) {
  analysis::TimelineOptions to;
  to.device = request.device;
  if (!request.query.all) {  // only the lifetimes live at the moment are listed: keep just those
    to.keep = analysis::KeepLifetimes::kLiveAt;
    to.moment = request.at.moment;
    to.curve = false;
    to = TimelineOptionsAt(request.at, to);
  }
  return NeedsTimeline(to);
}

absl::StatusOr<analysis::BlocksReport> BlocksQuery(const BlocksRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl,
                   session.TimelineFor(*BlocksNeeds(request).timeline));
  analysis::BlockQuery q = request.query;
  q.categories = session.categories();
  if (!q.all) {
    ASSIGN_OR_RETURN(ResolvedMoment at, ResolveMomentArg(request.at, session.snapshot(), *tl));
    q.at = at.arg.moment;  // a step is now the point it names
  }
  return analysis::SelectBlocks(session.snapshot(), *tl, q);
}

}  // namespace memsnap::query
