#include "memsnap/query/export.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

absl::StatusOr<ExportResult> ExportQuery(const ExportRequest& request, Session& session) {
  ASSIGN_OR_RETURN(const analysis::Timeline* timeline, session.timeline());
  const Snapshot& snap = session.snapshot();
  // Folded stacks are whole stacks; the other formats name sites the way `top` does.
  analysis::GroupOptions group = request.group;
  group.by = analysis::GroupBy::kStack;
  group.categories = session.categories();
  ASSIGN_OR_RETURN(std::unique_ptr<analysis::GroupContext> context,
                   analysis::GroupContext::Create(snap, group));
  ExportResult r;
  switch (request.format) {
    case ExportFormat::kFolded: {
      ASSIGN_OR_RETURN(ResolvedMoment at, ResolveMomentArg(request.at, snap, *timeline));
      ASSIGN_OR_RETURN(r.folded, analysis::GroupLive(*context, *timeline, at.arg.moment));
      break;
    }
    case ExportFormat::kCsv: {
      std::vector<analysis::LifetimeRef> all;
      for (size_t d = 0; d < timeline->devices.size(); ++d) {
        for (size_t i = 0; i < timeline->devices[d].blocks.size(); ++i) {
          all.push_back({static_cast<uint32_t>(d), static_cast<uint32_t>(i)});
        }
      }
      r.lifetimes = analysis::LifetimeSitesOf(*context, *timeline, all, /*stacks=*/false);
      break;
    }
    case ExportFormat::kPerfetto: {
      r.slices.resize(timeline->devices.size());
      for (size_t d = 0; d < timeline->devices.size(); ++d) {
        const analysis::DeviceTimeline& dt = timeline->devices[d];
        if (dt.num_events == 0) continue;  // the file's state alone: counters, no slices
        std::vector<uint32_t> order(dt.blocks.size());
        for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
        const size_t n = request.top_slices <= 0
                             ? order.size()  // 0: every lifetime
                             : std::min(order.size(), static_cast<size_t>(request.top_slices));
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n),
                          order.end(), [&](uint32_t a, uint32_t b) {
                            const int64_t sa = dt.blocks[a].requested_size;
                            const int64_t sb = dt.blocks[b].requested_size;
                            return sa != sb ? sa > sb : a < b;
                          });
        order.resize(n);
        std::vector<analysis::LifetimeRef> refs;
        refs.reserve(n);
        for (uint32_t i : order) refs.push_back({static_cast<uint32_t>(d), i});
        r.slices[d].sites = analysis::LifetimeSitesOf(*context, *timeline, refs, /*stacks=*/true);
        r.slices[d].lifetimes = std::move(order);
      }
      break;
    }
  }
  return r;
}

}  // namespace memsnap::query
