#include "memsnap/query/oom.h"

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

Needs OomNeeds(const OomRequest&) {
  analysis::TimelineOptions to;
  // The peaks only: ExplainOoms builds the lifetimes where it reads them (build_lifetimes), so
  // that they are not held through its searches (docs/oom.md, "Memory").
  to.keep = analysis::KeepLifetimes::kNone;
  to.curve = false;
  return NeedsTimeline(to);
}

absl::StatusOr<analysis::OomReport> OomQuery(const OomRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* tl, session.TimelineFor(*OomNeeds(request).timeline));
  analysis::OomOptions o;
  o.device = request.device;
  o.device_memory = request.device_memory;
  o.candidates = request.candidates;
  o.start = request.start;
  o.top_holders = request.top_holders;
  o.max_threads = request.threads;
  o.timeline = tl;
  o.build_lifetimes = true;
  o.categories = session.categories();
  absl::StatusOr<analysis::OomReport> report = analysis::ExplainOoms(session.snapshot(), o);
  if (!report.ok()) {
    return WithPath(session.path(), report.status());
  }
  return report;
}

}  // namespace memsnap::query
