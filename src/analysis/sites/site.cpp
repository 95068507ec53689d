// Site labels and categories through the attribution model (see site.h).
#include "memsnap/analysis/sites/site.h"

#include <optional>
#include <span>
#include <utility>

#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/filter.h"

namespace memsnap::analysis {

std::string ShortenLibraryPath(std::string_view label) {
  // An installed package reads as its import path: ".../site-packages/torch/nn/..." is
  // "torch/nn/...". The user's own files keep their whole path.
  for (std::string_view dir : {"/site-packages/", "/dist-packages/"}) {
    if (size_t at = label.rfind(dir); at != std::string_view::npos) {
      return std::string(label.substr(at + dir.size()));
    }
  }
  return std::string(label);
}

SiteNamer::SiteNamer(const Snapshot& snapshot, CategoryNames categories)
    : attribution_(snapshot, nullptr, AttributionOptions{.categories = std::move(categories)}),
      slot_(snapshot.stacks.size(), -1) {}

SiteNamer::~SiteNamer() = default;

const std::string& SiteNamer::Label(StackId stack, bool before_trace) {
  static const std::string kNoStack(kTracedNoStackRow);
  static const std::string kBefore(kBeforeRecordingRow);
  if (!stack.valid() || stack.v >= slot_.size() ||
      attribution_.snapshot().stacks.Get(stack).empty()) {
    return before_trace ? kBefore : kNoStack;
  }
  int32_t& slot = slot_[stack.v];
  if (slot >= 0) return labels_[static_cast<size_t>(slot)];
  slot = static_cast<int32_t>(labels_.size());
  labels_.push_back(attribution_.Site(stack).BaseLabel());
  return labels_.back();
}

bool SiteNamer::IsSynthetic(StackId stack) {
  if (!stack.valid() || stack.v >= slot_.size() ||
      attribution_.snapshot().stacks.Get(stack).empty()) {
    return true;
  }
  const SiteInfo& site = attribution_.Site(stack);
  // An engine stack without an operator is "[autograd engine]": no operation to point at.
  return site.synthetic() || (site.kind == SiteKind::kEngine && site.op.empty());
}

Category SiteNamer::CategoryOf(StackId stack, uint32_t /*alloc_event*/) {
  if (!stack.valid() || stack.v >= slot_.size()) return Category::kUnknown;
  return StackPhaseCategory(attribution_.Site(stack)).category;
}

Category SiteNamer::CategoryOf(const DeviceTimeline& device, const BlockLifetime& lifetime) {
  return VerdictOf(device, lifetime).category;
}

CategoryVerdict SiteNamer::VerdictOf(const DeviceTimeline& device, const BlockLifetime& lifetime) {
  if (!categorizers_) categorizers_ = std::make_unique<Categorizers>(attribution_);
  return categorizers_->For(device).Categorize(lifetime);
}

bool GrowsWithBatch(Category category) {
  return category == Category::kActivation || category == Category::kTemporary ||
         category == Category::kInput || category == Category::kKvCache;
}

}  // namespace memsnap::analysis
