// The workload of a device from its stacks (docs/attribution.md, "Workload"), on small traces
// shaped like the libraries' own: a training step, LoRA fine-tuning, a transformers generation
// loop, a dump whose only stacks are the dumped blocks', an evaluation loop, and a forward pass
// that ran out of memory.
#include "memsnap/analysis/attribution/workload.h"

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/report/workload_render.h"

namespace memsnap::analysis::workload_test {
namespace {

using testing::F;
using testing::MiniTrace;
using testing::Op;
using testing::Py;

const F kForward = Py("/home/u/model.py", 12, "forward");
const F kTrainLoop = Py("/home/u/train.py", 40, "train");
const F kBackwardNode{"torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"};

WorkloadEvidence Detect(Snapshot& snap) {
  Attribution attribution(snap, nullptr);
  return DetectWorkload(attribution, 0);
}

TEST_SUITE("workload") {
  TEST_CASE("a trace with an autograd node and an optimizer step is training") {
    MiniTrace t;
    t.Alloc(0x1000, 1024, t.Stack({Op("mm"), kForward, kTrainLoop}));
    t.Alloc(0x2000, 1024, t.Stack({Op("mm"), kBackwardNode}));
    t.Alloc(0x3000, 1024,
            t.Stack({Op("zeros_like"), Py("/usr/lib/python3/dist-packages/torch/optim/adamw.py",
                                          150, "_init_group")}));
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kTraining);
    CHECK(w.stacks == 3);
    CHECK(w.backward == 1);
    CHECK(w.optimizer == 1);
    CHECK(report::WorkloadText(w) ==
          "training (backward in 1 of 3 stacks, an optimizer step in 1)");
    CHECK(HasBackward(w.kind));
  }

  TEST_CASE("training with peft's LoRA layers is fine-tuning, and 'exploration' is not LoRA") {
    MiniTrace t;
    t.Alloc(0x1000, 1024,
            t.Stack({Op("mm"), Py("/venv/site-packages/peft/tuners/lora/layer.py", 500, "forward"),
                     kTrainLoop}));
    t.Alloc(0x2000, 1024, t.Stack({Op("mm"), kBackwardNode}));
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kFineTuning);
    CHECK(w.adapters == 1);

    MiniTrace u;
    u.Alloc(0x1000, 1024, u.Stack({Op("mm"), Py("/home/u/exploration.py", 5, "forward")}));
    u.Alloc(0x2000, 1024, u.Stack({Op("mm"), kBackwardNode}));
    Snapshot plain = u.Finish();
    CHECK(Detect(plain).kind == Workload::kTraining);
  }

  TEST_CASE("a transformers generation loop without autograd is generation, with its evidence") {
    MiniTrace t;
    const F sample = Py("/venv/site-packages/transformers/generation/utils.py", 3200, "_sample");
    const F generate = Py("/venv/site-packages/transformers/generation/utils.py", 2400, "generate");
    t.Alloc(
        0x1000, 1024,
        t.Stack(
            {Op("cat"), Py("/venv/site-packages/transformers/cache_utils.py", 450, "update"),
             Py("/venv/site-packages/transformers/models/llama/modeling_llama.py", 270, "forward"),
             sample, generate, Py("/home/u/chat.py", 9, "main")}));
    t.Alloc(0x2000, 1024, t.Stack({Op("mm"), kForward, sample, generate}));
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kGeneration);
    CHECK(w.generation == 2);
    CHECK(w.kv_cache == 1);
    CHECK(report::WorkloadText(w) ==
          "generation (no autograd node in 2 stacks; generation frames in 2, KV-cache frames in "
          "1)");
    CHECK(WithoutBackward(w.kind));
  }

  TEST_CASE("a dump whose trace shows nothing is read from the dumped blocks' stacks") {
    MiniTrace t;
    const F sample = Py("/venv/site-packages/transformers/generation/utils.py", 3200, "_sample");
    t.Ghost(0x10000, 4096, t.Stack({Op("cat"), kForward, sample}));
    t.Ghost(0x20000, 8192);  // weights loaded before recording: no stack
    t.Event(Action::kSnapshot, 0, 0);
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kGeneration);
    CHECK(w.stacks == 1);
  }

  TEST_CASE("a forward pass under a function named validate is evaluation") {
    MiniTrace t;
    t.Alloc(0x1000, 1024, t.Stack({Op("mm"), kForward, Py("/home/u/run.py", 30, "validate")}));
    Snapshot snap = t.Finish();
    CHECK(Detect(snap).kind == Workload::kEvaluation);
  }

  TEST_CASE("a forward pass that ran out of memory may be training: forward passes only") {
    MiniTrace t;
    t.Alloc(0x1000, 1024, t.Stack({Op("mm"), kForward, kTrainLoop}));
    t.Event(Action::kOom, 0, 1 << 30);
    Snapshot snap = t.Finish();
    WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kForwardOnly);
    CHECK_FALSE(HasBackward(w.kind));
    CHECK_FALSE(WithoutBackward(w.kind));

    // The same forward pass that ran to its end is inference.
    MiniTrace u;
    u.Alloc(0x1000, 1024, u.Stack({Op("mm"), kForward, kTrainLoop}));
    Snapshot done = u.Finish();
    CHECK(Detect(done).kind == Workload::kInference);
  }

  TEST_CASE("torch.compile compiling is no evidence of a backward pass") {
    MiniTrace t;
    t.Alloc(0x1000, 1024, t.Stack({Op("mm"), kForward}));
    // Inductor's joint-graph passes, under compile_fx, run autograd's graph code.
    t.Alloc(0x2000, 1024,
            t.Stack({Op("full"),
                     Py("/venv/site-packages/torch/_inductor/fx_passes/joint_graph.py", 300,
                        "constant_fold_uniform_value"),
                     Py("/venv/site-packages/torch/autograd/graph.py", 10, "backward_hook"),
                     Py("/venv/site-packages/torch/_inductor/compile_fx.py", 900, "compile_fx")}));
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.stacks == 2);
    CHECK(w.backward == 0);
    CHECK(w.kind == Workload::kInference);
  }

  TEST_CASE("a file without stacks has an unknown workload, and says why") {
    MiniTrace t;
    t.Alloc(0x1000, 1024, StackId());
    Snapshot snap = t.Finish();
    const WorkloadEvidence w = Detect(snap);
    CHECK(w.kind == Workload::kUnknown);
    CHECK(report::WorkloadText(w) == "unknown (the file records no stacks)");
  }
}

}  // namespace
}  // namespace memsnap::analysis::workload_test
