// The words for a device's workload (analysis::WorkloadEvidence; docs/attribution.md,
// "Workload"), shared by summary, top, oom and the report.

#include "memsnap/report/workload_render.h"

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"

namespace memsnap::report {
namespace {

std::string Stacks(int64_t n) {
  return absl::StrCat(FormatCount(n), n == 1 ? " stack" : " stacks");
}

}  // namespace

std::string_view WorkloadName(analysis::Workload w) {
  using analysis::Workload;
  switch (w) {
    case Workload::kTraining:
      return "training";
    case Workload::kFineTuning:
      return "fine_tuning";
    case Workload::kRlRollout:
      return "rl_rollout";
    case Workload::kGeneration:
      return "generation";
    case Workload::kEvaluation:
      return "evaluation";
    case Workload::kInference:
      return "inference";
    case Workload::kForwardOnly:
      return "forward_only";
    case Workload::kUnknown:
      return "unknown";
  }
  return "unknown";
}

std::string WorkloadEvidenceText(const analysis::WorkloadEvidence& w) {
  using analysis::Workload;
  const std::string of = absl::StrCat(" of ", Stacks(w.stacks));
  // What shows a training step: "backward in 43 of 128 stacks, an optimizer step in 12".
  const std::string trained =
      w.backward == 0
          ? absl::StrCat("an optimizer step in ", FormatCount(w.optimizer), of)
          : absl::StrCat("backward in ", FormatCount(w.backward), of,
                         w.optimizer > 0
                             ? absl::StrCat(", an optimizer step in ", FormatCount(w.optimizer))
                             : std::string());
  switch (w.kind) {
    case Workload::kTraining:
      return trained;
    case Workload::kFineTuning:
      return absl::StrCat(
          trained, w.adapters > 0
                       ? absl::StrCat(", adapter (LoRA, peft) frames in ", FormatCount(w.adapters))
                       : absl::StrCat(", a pretrained model loaded (from_pretrained) in ",
                                      FormatCount(w.pretrained)));
    case Workload::kRlRollout:
      return absl::StrCat(trained, ", generation frames in ", FormatCount(w.generation));
    case Workload::kGeneration: {
      std::string text = absl::StrCat("no autograd node in ", Stacks(w.stacks));
      if (w.generation > 0)
        absl::StrAppend(&text, "; generation frames in ", FormatCount(w.generation));
      if (w.kv_cache > 0) {
        absl::StrAppend(&text, w.generation > 0 ? ", " : "; ", "KV-cache frames in ",
                        FormatCount(w.kv_cache));
      }
      return text;
    }
    case Workload::kEvaluation:
      return absl::StrCat("no autograd node in ", Stacks(w.stacks), "; evaluation-loop frames in ",
                          FormatCount(w.evaluation));
    case Workload::kInference:
      return absl::StrCat("no autograd node in ", Stacks(w.stacks),
                          w.no_grad > 0
                              ? absl::StrCat("; torch.no_grad in ", FormatCount(w.no_grad))
                              : std::string());
    case Workload::kForwardOnly:
      return absl::StrCat("no autograd node in ", Stacks(w.stacks),
                          ", and the run failed in a forward pass: training that never reached "
                          "its backward, or inference");
    case Workload::kUnknown:
      if (w.stacks == 0) return "the file records no stacks";
      return absl::StrCat(w.stacks == 1 ? std::string("its one stack shows")
                                        : absl::StrCat("none of its ", Stacks(w.stacks), " shows"),
                          w.stacks == 1 ? " no" : " a",
                          " model's forward pass, backward or optimizer step");
  }
  return "";
}

std::string_view WorkloadTitle(analysis::Workload w) {
  using analysis::Workload;
  switch (w) {  // the kinds whose words differ from their JSON id
    case Workload::kFineTuning:
      return "fine-tuning";
    case Workload::kRlRollout:
      return "training beside generation (an RL rollout)";
    case Workload::kForwardOnly:
      return "forward passes only";
    default:
      return WorkloadName(w);
  }
}

std::string WorkloadText(const analysis::WorkloadEvidence& w) {
  return absl::StrCat(std::string(WorkloadTitle(w.kind)), " (", WorkloadEvidenceText(w), ")");
}

}  // namespace memsnap::report
