// Site labels and categories until the attribution model lands (see site.h).
#include "memsnap/analysis/site.h"

#include <optional>
#include <span>

#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/group.h"

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
    : snap_(&snapshot), slot_(snapshot.stacks.size(), -1) {}

const std::string& SiteNamer::Label(StackId stack, bool before_trace) {
  static const std::string kNoStack(kNoStackRow);
  static const std::string kBefore(kPreWindowRow);
  if (!stack.valid() || stack.v >= slot_.size() || snap_->stacks.Get(stack).empty()) {
    return before_trace ? kBefore : kNoStack;
  }
  int32_t& slot = slot_[stack.v];
  if (slot >= 0) return labels_[static_cast<size_t>(slot)];
  std::span<const FrameId> frames = snap_->stacks.Get(stack);
  // With C++ frames the innermost frame is the allocator's own malloc. The innermost Python frame
  // outside torch/ is most often the user's line (or the model library's); else the innermost
  // Python frame; else the innermost frame the upstream viewers show.
  std::optional<FrameId> site;
  std::optional<FrameId> python;
  for (FrameId f : frames) {
    std::string_view file = snap_->strings.Get(snap_->frames.Get(f).filename);
    if (!file.ends_with(".py")) continue;
    if (!python) python = f;
    if (file.find("torch/") == std::string_view::npos) {
      site = f;
      break;
    }
  }
  if (!site) site = python;
  if (!site) {
    for (FrameId f : frames) {
      const Frame& fr = snap_->frames.Get(f);
      if (!IsNoiseFrame(snap_->strings.Get(fr.name), snap_->strings.Get(fr.filename))) {
        site = f;
        break;
      }
    }
  }
  if (!site && !frames.empty()) site = frames.front();
  slot = static_cast<int32_t>(labels_.size());
  labels_.push_back(site ? ShortenLibraryPath(FrameKeyText(*snap_, *site, false)) : kNoStack);
  return labels_.back();
}

std::string_view SiteNamer::Category(StackId, uint32_t) const { return kUnknownCategory; }

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
