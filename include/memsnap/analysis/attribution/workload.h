#pragma once
// What kind of run a device's memory comes from (docs/attribution.md, "Workload"): training,
// fine-tuning, generation with a KV cache, inference... decided from the stacks the snapshot
// holds (the trace's allocations and the dumped blocks), never from a file's name, and stated
// with its evidence so a reader can check it: "inference (no autograd node in 1,204 stacks)".
// The levers `oom` offers depend on it (activation checkpointing needs a backward pass; a KV
// cache is a generation run's).

#include <cstdint>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

class Attribution;

enum class Workload : uint8_t {
  kTraining,     // a backward pass or an optimizer step
  kFineTuning,   // training of adapters (LoRA, peft) or of a model loaded with from_pretrained
  kRlRollout,    // training beside generation (RL: rollouts, then a step on them)
  kGeneration,   // no backward; a generation loop (generate, _sample...) or a KV cache
  kEvaluation,   // no backward; an evaluation loop (evaluate, validation_step...)
  kInference,    // no backward, forward passes only, the run ended without an OOM
  kForwardOnly,  // no backward yet: the run failed in a forward pass (training or inference)
  kUnknown,      // no stack shows a model (no stacks, or no forward/backward/optimizer frame)
};

/// Whether the run has a backward pass, so levers through it (activation checkpointing) apply.
inline bool HasBackward(Workload w) {
  return w == Workload::kTraining || w == Workload::kFineTuning || w == Workload::kRlRollout;
}
/// Whether the run is known to run without a backward pass (no checkpointing, no gradients).
inline bool WithoutBackward(Workload w) {
  return w == Workload::kGeneration || w == Workload::kEvaluation || w == Workload::kInference;
}

/// The workload of one device and the counts it was decided from: distinct stacks among the
/// device's trace allocations (and its dumped blocks' when the trace shows no model). Its words
/// are report::WorkloadText's (include/memsnap/report/workload_render.h).
struct WorkloadEvidence {
  int32_t device = 0;
  Workload kind = Workload::kUnknown;
  int64_t stacks = 0;         // distinct non-empty stacks looked at
  int64_t backward = 0;       // with an autograd node, the engine or a call into backward
  int64_t optimizer = 0;      // with an optimizer's step, state init or zero_grad
  int64_t forward = 0;        // with a module's forward (or torch.compile's code)
  int64_t generation = 0;     // with a generation loop's frame (generate, _sample, beam search)
  int64_t kv_cache = 0;       // with a KV cache's frame (cache_utils, past_key_values, kv_cache)
  int64_t adapters = 0;       // with an adapter's frame (peft, lora)
  int64_t pretrained = 0;     // with from_pretrained (a pretrained model was loaded)
  int64_t evaluation = 0;     // with an evaluation loop's frame (evaluate, validation_step...)
  int64_t no_grad = 0;        // with torch.no_grad / inference_mode as a decorator
  bool ended_in_oom = false;  // the device's trace has an oom entry
};

/// The workload of `device` of the attribution's snapshot (its trace's allocations and its
/// dumped blocks).
WorkloadEvidence DetectWorkload(Attribution& attribution, int32_t device);
/// Every device's, ascending (Snapshot::Devices()).
std::vector<WorkloadEvidence> DetectWorkloads(Attribution& attribution);

}  // namespace memsnap::analysis
