// What a device's trace shows of the memory older than it (attribution_pre_trace.cpp): kept by
// LifetimeCategorizer, which attribution_category.cpp defines, so its destructor sees this type.
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "memsnap/analysis/attribution/attribution.h"

namespace memsnap::analysis {

struct LifetimeCategorizer::PreTrace {
  /// Blocks the trace never saw (ghosts without a stack), by address, that the evidence shows to
  /// be gradients or optimizer state rather than parameters.
  absl::flat_hash_map<uint64_t, CategoryRule> ghosts;
};

}  // namespace memsnap::analysis
