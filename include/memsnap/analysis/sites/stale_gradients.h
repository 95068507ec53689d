// Last step's gradients still alive in the next forward pass (docs/attribution.md, "Last step's
// gradients"): the memory `optimizer.zero_grad(set_to_none=True)` before the forward would free.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"

namespace memsnap::analysis {

/// The gradients live at a moment inside a forward pass that an earlier step made: allocated
/// before the forward pass began (or before the trace), of category gradient, and freed later in
/// the trace (by zero_grad or the next AccumulateGrad), so freeing them before the forward is
/// what the program does anyway, only sooner. Gradients never freed (zero_grad(set_to_none=False)
/// keeps them for good) are not counted: freeing them would make the next backward allocate
/// them again.
struct StaleGradients {
  int32_t device = 0;
  uint32_t forward_start = 0;  // device event: the first of the forward pass holding the moment
  int64_t bytes = 0;           // requested bytes live at the moment
  int64_t blocks = 0;
  /// Of them, blocks whose free the trace shows under an optimizer's zero_grad frame.
  int64_t freed_by_zero_grad = 0;
  std::vector<uint32_t> lifetimes;  // indices into the device timeline's blocks
};

/// nullopt when `moment` is not inside a forward pass (the step phase of the event it follows),
/// or no such gradient is live then. The timeline must hold the lifetimes live at `moment`.
std::optional<StaleGradients> FindStaleGradients(GroupContext& context, const DeviceTimeline& dt,
                                                 TimelinePoint moment);

}  // namespace memsnap::analysis
