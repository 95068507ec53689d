// The site and the category of individual lifetimes (the CSV and Perfetto exports), decided once,
// here, by the same GroupContext every other command groups with: a block's kind is the same in
// `top --by category`, `summary`, the page and every export (docs/figures.md, "Categories").
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"

namespace memsnap::analysis {

/// One lifetime of a Timeline: `device` indexes Timeline::devices, `lifetime` that device's
/// blocks.
struct LifetimeRef {
  uint32_t device = 0;
  uint32_t lifetime = 0;
};

/// What an export prints of each of a list of lifetimes (LifetimeSitesOf), in the list's order.
struct LifetimeSites {
  std::vector<std::string> labels;  // the sites' labels, distinct among the listed lifetimes
  std::vector<uint32_t> site;       // per lifetime: its site's index into `labels`
  std::vector<Category> category;   // per lifetime: CategoryVerdict::category
  CategoryNames categories;         // what `category` is named (the context's GroupOptions)
  /// With `stacks`: the filtered frames (innermost first) of each listed lifetime's stack, by
  /// StackId::v (a pre-window lifetime's stack is its free's). Looked up, never iterated.
  absl::flat_hash_map<uint32_t, std::vector<FrameId>> stacks;
};

/// The site (SiteLabels: pre-window lifetimes and those without a stack get their bracketed row)
/// and category (GroupContext::Categorize) of each lifetime of `lifetimes`, and with `stacks` the
/// frames of their stacks that the context's filter keeps.
LifetimeSites LifetimeSitesOf(GroupContext& context, const Timeline& timeline,
                              std::span<const LifetimeRef> lifetimes, bool stacks);

}  // namespace memsnap::analysis
