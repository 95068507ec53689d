#include "memsnap/analysis/sites/lifetime_sites.h"

namespace memsnap::analysis {

LifetimeSites LifetimeSitesOf(GroupContext& context, const Timeline& timeline,
                              std::span<const LifetimeRef> lifetimes, bool stacks) {
  LifetimeSites out;
  out.categories = context.options().categories;
  out.site.reserve(lifetimes.size());
  out.category.reserve(lifetimes.size());
  // Labels distinct among the listed lifetimes' sites: collect every site first.
  SiteLabels labels(context.attribution());
  for (const LifetimeRef& ref : lifetimes) {
    const DeviceTimeline& dt = timeline.devices[ref.device];
    const BlockLifetime& lt = dt.blocks[ref.lifetime];
    const CategoryVerdict verdict = context.Categorize(dt, lt);
    out.site.push_back(static_cast<uint32_t>(labels.Add(dt, lt, verdict.rule)));
    out.category.push_back(verdict.category);
    if (stacks && lt.stack.valid() && !out.stacks.contains(lt.stack.v)) {
      out.stacks.emplace(lt.stack.v, context.filter().Filtered(lt.stack));
    }
  }
  labels.Finish();
  out.labels.reserve(labels.size());
  for (size_t i = 0; i < labels.size(); ++i) out.labels.push_back(labels.Label(i));
  return out;
}

}  // namespace memsnap::analysis
