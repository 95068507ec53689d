// Site labels and categories for code that names allocations one stack at a time, without a
// timeline (memsnap oom, check --fits, summary's and replay's OOM lines): a thin front of the
// attribution model (analysis/attribution/attribution.h, docs/attribution.md), so that an OOM's
// holders read exactly like the rows of `top`.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// Labels stacks of one snapshot, caching per StackId. Not thread-safe.
class SiteNamer {
 public:
  /// `categories`: the session's (GroupOptions::categories); the user's are tried first by
  /// CategoryOf. Labels do not depend on them.
  SiteNamer(const Snapshot& snapshot, CategoryNames categories);
  ~SiteNamer();
  /// The attribution model's label of the stack's site ("what ← file.py:LINE owner",
  /// "BmmBackward0 (bmm)"); "[allocation recorded without a stack]" when the trace recorded it
  /// without frames. Every site memsnap oom, check --fits and summary's OOM lines print comes
  /// from here. `before_trace`: a block live in the snapshot that the trace never saw, so a stack
  /// without frames reads "[allocated before recording started]" (NoStackRow in group.h).
  const std::string& Label(StackId stack, bool before_trace = false);
  /// Whether Label(stack) is a bracketed row that names no operation of the program
  /// ("[allocation recorded without a stack]", "[allocator frames only]", "[autograd engine]"):
  /// a renderer that points at the code leaves such a row out.
  bool IsSynthetic(StackId stack);
  /// The category of memory allocated with `stack`, from what the stack shows alone (the
  /// attribution model's stack-phase rule, docs/attribution.md): an AccumulateGrad or backward
  /// stack is a gradient, an optimizer step's is optimizer state, a forward pass's an activation,
  /// module init's a parameter, the data loader's an input; Category::kUnknown otherwise. Without
  /// the device's timeline it cannot tell a temporary from what outlives its phase.
  analysis::Category CategoryOf(StackId stack, uint32_t alloc_event);
  /// The category of one lifetime of `device`'s timeline by the attribution model's full rules
  /// (LifetimeCategorizer: what `top` and `summary` say of it): memory older than the trace with
  /// no stack that outlives a trace running a model is a parameter, a backward allocation kept
  /// after backward a gradient, one freed inside its phase a temporary, and so on.
  analysis::Category CategoryOf(const DeviceTimeline& device, const BlockLifetime& lifetime);
  /// The same with the rule that decided (CategoryRule): what names the row of memory older than
  /// the trace when the trace showed what it was (PreTraceEvidenceRow).
  CategoryVerdict VerdictOf(const DeviceTimeline& device, const BlockLifetime& lifetime);
  /// The attribution model the labels come from.
  Attribution& attribution() { return attribution_; }

 private:
  Attribution attribution_;
  std::unique_ptr<Categorizers> categorizers_;  // made on the first Category(device, lifetime)
  std::vector<int32_t> slot_;                   // StackId -> index into labels_, -1 unknown
  std::deque<std::string> labels_;              // a deque: references stay valid as it grows
};

/// A frame label with an installed package's path cut to its import path
/// (".../site-packages/torch/nn/functional.py:2546:layer_norm" -> "torch/nn/functional.py:...").
std::string ShortenLibraryPath(std::string_view label);

/// Whether memory of this kind grows with the batch (activation, temporary, input, kv_cache): what
/// a smaller batch shrinks, and what `oom`'s batch search scales.
bool GrowsWithBatch(Category category);

}  // namespace memsnap::analysis
