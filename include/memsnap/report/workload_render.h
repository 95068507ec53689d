// The words for a device's workload (analysis::WorkloadEvidence; docs/attribution.md,
// "Workload"): the JSON id, a title and the evidence, as summary, top, oom and the report say it.
#pragma once

#include <string>
#include <string_view>

#include "memsnap/analysis/attribution/workload.h"

namespace memsnap::report {

/// The JSON id: "training", "fine_tuning", "rl_rollout", "generation", "evaluation", "inference",
/// "forward_only", "unknown".
std::string_view WorkloadName(analysis::Workload w);
/// In words: "training", "fine-tuning", "training beside generation (an RL rollout)"...
std::string_view WorkloadTitle(analysis::Workload w);
/// The evidence: "no autograd node in 1,204 stacks; generation frames in 14, KV-cache frames in 3".
std::string WorkloadEvidenceText(const analysis::WorkloadEvidence& w);
/// The title and the evidence: "generation (no autograd node in 1,204 stacks; ...)".
std::string WorkloadText(const analysis::WorkloadEvidence& w);

}  // namespace memsnap::report
