// Site labels and categories through the attribution model (see site.h).
#include "memsnap/analysis/sites/site.h"

#include <optional>
#include <span>

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

SiteNamer::SiteNamer(const Snapshot& snapshot)
    : attribution_(snapshot, nullptr), slot_(snapshot.stacks.size(), -1) {}

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

std::string_view SiteNamer::Category(StackId stack, uint32_t /*alloc_event*/) {
  if (!stack.valid() || stack.v >= slot_.size()) return kUnknownCategory;
  return CategoryName(StackPhaseCategory(attribution_.Site(stack)).category);
}

std::string_view SiteNamer::Category(const DeviceTimeline& device, const BlockLifetime& lifetime) {
  if (!categorizers_) categorizers_ = std::make_unique<Categorizers>(attribution_);
  return CategoryName(categorizers_->For(device).Categorize(lifetime).category);
}

std::string_view CategoryLever(std::string_view category) {
  if (category == "activation") return "activation checkpointing or a smaller batch";
  if (category == "gradient")
    return "gradient accumulation over smaller micro-batches, or sharding";
  if (category == "optimizer_state") return "a lighter optimizer state (8-bit, sharded, offloaded)";
  if (category == "parameter") return "lower-precision or sharded parameters";
  if (category == "temporary") return "smaller chunks for the operation that needs it";
  if (category == "input") return "a smaller batch or sequence length";
  return "";
}

}  // namespace memsnap::analysis
