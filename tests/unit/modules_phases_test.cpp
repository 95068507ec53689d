// Modules and phases of a step (docs/attribution.md, "Modules" and "Phases of a step"): the module
// tree of `top --by module`, `top --by phase`, summary's peak per phase and per step, steps from
// the optimizer, and notebook labels ("Notebooks and machinery"), on small traces with known
// answers.
#include "analysis/attribution/frames_internal.h"
#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/query/leaks.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

// One training step of a two-block model: a matmul in attention (model.py:22, called from the
// block at :188, called from the model at :300), a relu in the MLP (:40 from :190 from :300), the
// loss in the loop, the matmul's backward (MmBackward0, made by model.py:22), an optimizer step.
//
// event  0 alloc A 100 (forward)   1 alloc B 200 (forward)   2 alloc E 50 (other: the loss)
//        3,4 free B                5 alloc C 1000 (backward)  6,7 free E
//        8 alloc D 10 (optimizer)  9,10 free C               11..14 free A and D
Snapshot Steps(int steps) {
  MiniTrace t;
  const F train{"train", "/home/u/proj/train.py", 10};
  const F model{"forward", "/home/u/proj/model.py", 300};
  StackId attn =
      t.Stack({{"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"},
               {"torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, "
                "at::Tensor const&, at::Tensor const&)",
                "VariableType_2.cpp"},
               {"forward", "/home/u/proj/model.py", 22},
               {"forward", "/home/u/proj/model.py", 188},
               model,
               train});
  StackId mlp = t.Stack({{"at::_ops::relu::call(at::Tensor const&)"},
                         {"forward", "/home/u/proj/model.py", 40},
                         {"forward", "/home/u/proj/model.py", 190},
                         model,
                         train});
  StackId loss = t.Stack({{"at::_ops::cross_entropy_loss::call(at::Tensor const&)"},
                          {"train", "/home/u/proj/train.py", 11}});
  StackId backward = t.Stack({{"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"},
                              {"torch::autograd::generated::MmBackward0::apply(std::vector<at::"
                               "Tensor>&&)"},
                              {"torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::"
                               "autograd::GraphTask>&)"}});
  StackId optim = t.Stack({{"step", "/usr/lib/python3.10/site-packages/torch/optim/adam.py", 95},
                           {"train", "/home/u/proj/train.py", 12}});
  for (int k = 0; k < steps; ++k) {
    // Later steps free the previous step's activation and optimizer temporary first.
    if (k > 0) {
      t.Free(0x1000, 100);
      t.Free(0x5000, 10);
    }
    t.Alloc(0x1000, 100, attn);
    t.Alloc(0x2000, 200, mlp);
    t.Alloc(0x3000, 50, loss);
    t.Free(0x2000, 200);
    t.Alloc(0x4000, 1000, backward);
    t.Free(0x3000, 50);
    t.Alloc(0x5000, 10, optim);
    t.Free(0x4000, 1000);
  }
  // The trace ends with nothing live, as the snapshot's (empty) final state says.
  t.Free(0x1000, 100);
  t.Free(0x5000, 10);
  return t.Finish();
}
Snapshot OneStep() { return Steps(1); }

GroupReport GroupAt(const Snapshot& snap, Moment moment, GroupOptions o) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  auto rep = GroupLive(snap, *tl, moment, o);
  REQUIRE(rep.ok());
  return *rep;
}

const Moment kAfterBackward{Moment::Kind::kEvent, 5};

TEST_SUITE("modules-phases") {
  TEST_CASE("the module tree nests forward calls and puts backward memory under its forward") {
    Snapshot snap = OneStep();
    GroupOptions o;
    o.by = GroupBy::kModule;
    GroupReport rep = GroupAt(snap, kAfterBackward, o);
    // Live after event 5: A 100, E 50, C 1000.
    CHECK(rep.total_bytes == 1150);
    REQUIRE(rep.rows.size() == 4);
    CHECK(rep.rows[0].key == "model.py:300 forward");
    CHECK(rep.rows[0].site == "model.py:300 forward");
    CHECK(rep.rows[0].depth == 0);
    CHECK(rep.rows[0].bytes == 1100);
    CHECK(rep.rows[0].self_bytes == 0);
    CHECK(rep.rows[1].key == "model.py:300 forward;model.py:188 forward");
    CHECK(rep.rows[1].site == "model.py:188 forward");
    CHECK(rep.rows[1].depth == 1);
    CHECK(rep.rows[1].bytes == 1100);
    // The matmul's output (activation) and its MmBackward0 output (made by model.py:22's mm).
    CHECK(rep.rows[2].key == "model.py:300 forward;model.py:188 forward;model.py:22 forward");
    CHECK(rep.rows[2].depth == 2);
    CHECK(rep.rows[2].bytes == 1100);
    CHECK(rep.rows[2].self_bytes == 1100);
    CHECK(rep.rows[2].count == 2);
    CHECK(rep.rows[2].category_bytes[static_cast<size_t>(Category::kActivation)] == 100);
    CHECK(rep.rows[3].key == "[no module: other]");
    CHECK(rep.rows[3].depth == 0);
    CHECK(rep.rows[3].bytes == 50);
    CHECK(rep.rows[3].self_bytes == 50);
    // The roots add up to the total.
    int64_t roots = 0;
    for (const GroupRow& r : rep.rows) roots += r.depth == 0 ? r.bytes : 0;
    CHECK(roots == rep.total_bytes);
  }

  TEST_CASE("module metadata in record(model=)'s form parses into name, type and phase") {
    std::optional<ModuleMetadata> m =
        ParseModuleMetadata("model.layers.3.attn (Attention) forward");
    REQUIRE(m.has_value());
    CHECK(m->name == "model.layers.3.attn");
    CHECK(m->type == "Attention");
    CHECK(m->phase == "forward");
    m = ParseModuleMetadata("model (my.pkg.Model) backward");
    REQUIRE(m.has_value());
    CHECK(m->type == "my.pkg.Model");
    // Anything else a program sets is not module metadata.
    for (const char* other :
         {"step 1", "{step: 1, phase: bwd}", "model (Model)", "model.layers. (ModuleList) forward",
          ".a (A) forward", "a..b (A) forward", "a b (A) forward", "model (Model) Forward",
          "model () forward", "model (Mo del) forward", ""}) {
      CAPTURE(other);
      CHECK_FALSE(ParseModuleMetadata(other).has_value());
    }
  }

  TEST_CASE("recorded module metadata puts a block under its module path, typed where named") {
    MiniTrace t;
    const StackId fwd =
        t.Stack({{"forward", "/home/u/proj/model.py", 22}, {"train", "/home/u/proj/train.py", 10}});
    const StackId optim =
        t.Stack({{"step", "/usr/lib/python3/site-packages/torch/optim/adam.py", 95},
                 {"train", "/home/u/proj/train.py", 12}});
    t.Metadata(t.Alloc(0x1000, 100, fwd), "model.layers.0.attn (Attention) forward");
    t.Metadata(t.Alloc(0x2000, 200, fwd), "model.layers.0 (Block) forward");
    // The engine's allocation has no stack: the metadata still places it.
    t.Metadata(t.Alloc(0x3000, 400, StackId()), "model.layers.0.attn (Attention) backward");
    t.Metadata(t.Alloc(0x4000, 800, optim), "step 1");  // not module metadata: the frames decide
    Snapshot snap = t.Finish();
    GroupOptions o;
    o.by = GroupBy::kModule;
    GroupReport rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 3}, o);
    REQUIRE(rep.rows.size() == 5);
    CHECK(rep.rows[0].key == "[no module: optimizer]");
    CHECK(rep.rows[0].bytes == 800);
    CHECK(rep.rows[1].key == "model");  // no entry names the root: no type
    CHECK(rep.rows[1].bytes == 700);
    CHECK(rep.rows[2].key == "model;model.layers");
    CHECK(rep.rows[3].key == "model;model.layers;model.layers.0 (Block)");
    CHECK(rep.rows[3].site == "model.layers.0 (Block)");
    CHECK(rep.rows[3].depth == 2);
    CHECK(rep.rows[3].bytes == 700);
    CHECK(rep.rows[3].self_bytes == 200);
    CHECK(rep.rows[4].site == "model.layers.0.attn (Attention)");
    CHECK(rep.rows[4].depth == 3);
    CHECK(rep.rows[4].bytes == 500);  // its forward's and its backward's
    CHECK(rep.rows[4].count == 2);

    o.depth = 2;
    rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 3}, o);
    REQUIRE(rep.rows.size() == 3);
    CHECK(rep.rows[2].key == "model;model.layers");
    CHECK(rep.rows[2].self_bytes == 700);
  }

  TEST_CASE("backward allocations pair with their operator's forward calls in reverse order") {
    // Two layers call mm from model.py:101 and :102; their chains share no outer frame, so the
    // forward lines alone would leave backward memory outside every module.
    MiniTrace t;
    const F train{"train", "/home/u/proj/train.py", 10};
    auto layer = [&](int64_t line) {
      return t.Stack({{"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"},
                      {"torch::autograd::VariableType::(anonymous namespace)::mm(c10::"
                       "DispatchKeySet, at::Tensor const&, at::Tensor const&)",
                       "VariableType_2.cpp"},
                      {"forward", "/home/u/proj/model.py", line},
                      train});
    };
    const StackId a = layer(101), b = layer(102);
    const StackId mm_backward =
        t.Stack({{"at::_ops::mm::call(at::Tensor const&, at::Tensor const&)"},
                 {"torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"},
                 {"torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::"
                  "GraphTask>&)"}});
    const StackId accumulate =
        t.Stack({{"torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"},
                 {"torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::"
                  "GraphTask>&)"}});
    t.Alloc(0x1000, 10, a);
    t.Alloc(0x2000, 20, b);
    t.Alloc(0x3000, 300, mm_backward);  // B's node runs first: two gradients
    t.Alloc(0x4000, 400, mm_backward);
    t.Alloc(0x5000, 500, mm_backward);  // then A's
    t.Alloc(0x6000, 600, mm_backward);
    t.Alloc(0x7000, 600, accumulate);  // A copy of A's weight gradient (the same size)
    Snapshot snap = t.Finish();
    GroupOptions o;
    o.by = GroupBy::kModule;
    GroupReport rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 6}, o);
    REQUIRE(rep.rows.size() == 2);
    CHECK(rep.rows[0].key == "model.py:101 forward");
    CHECK(rep.rows[0].bytes == 10 + 500 + 600 + 600);
    CHECK(rep.rows[0].count == 4);
    CHECK(rep.rows[1].key == "model.py:102 forward");
    CHECK(rep.rows[1].bytes == 20 + 300 + 400);
  }

  TEST_CASE("--depth folds the module tree and --top keeps each node's largest children") {
    Snapshot snap = OneStep();
    GroupOptions o;
    o.by = GroupBy::kModule;
    o.depth = 1;
    GroupReport rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 1}, o);  // A and B live
    REQUIRE(rep.rows.size() == 1);
    CHECK(rep.rows[0].key == "model.py:300 forward");
    CHECK(rep.rows[0].bytes == 300);
    CHECK(rep.rows[0].self_bytes == 300);

    o.depth = 0;
    rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 1}, o);
    REQUIRE(rep.rows.size() == 5);
    CHECK(rep.rows[1].site == "model.py:190 forward");  // 200 before 100
    CHECK(rep.rows[3].site == "model.py:188 forward");
    std::vector<GroupRow> rows = rep.rows;
    CollapseTreeTail(rows, 1);
    REQUIRE(rows.size() == 4);
    CHECK(rows[0].bytes == 300);
    CHECK(rows[1].site == "model.py:190 forward");
    CHECK(rows[2].site == "model.py:40 forward");
    CHECK(rows[3].site == "[1 others]");
    CHECK(rows[3].depth == 1);
    CHECK(rows[3].bytes == 100);
  }

  TEST_CASE("grouping by phase splits live memory into forward, backward, optimizer and other") {
    Snapshot snap = OneStep();
    GroupOptions o;
    o.by = GroupBy::kPhase;
    GroupReport rep = GroupAt(snap, Moment{Moment::Kind::kEvent, 8}, o);
    REQUIRE(rep.rows.size() == 3);  // A forward 100, C backward 1000, D optimizer 10
    CHECK(rep.rows[0].key == "backward");
    CHECK(rep.rows[0].bytes == 1000);
    CHECK(rep.rows[1].key == "forward");
    CHECK(rep.rows[1].bytes == 100);
    CHECK(rep.rows[2].key == "optimizer");
    CHECK(rep.rows[2].bytes == 10);
  }

  TEST_CASE("each phase's peak is the most live memory while the program is in that phase") {
    Snapshot snap = OneStep();
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    std::vector<PhasePeak> peaks = PhasePeaks(snap, tl->devices[0]);
    REQUIRE(peaks.size() == 4);
    CHECK(peaks[0].phase == StepPhase::kForward);
    CHECK(peaks[0].live_bytes == 300);
    CHECK(peaks[0].event.index() == 1);
    CHECK(peaks[1].phase == StepPhase::kBackward);
    CHECK(peaks[1].live_bytes == 1150);
    CHECK(peaks[1].event.index() == 5);
    CHECK(peaks[2].phase == StepPhase::kOptimizer);
    CHECK(peaks[2].live_bytes == 1110);
    CHECK(peaks[2].event.index() == 8);
    CHECK(peaks[3].phase == StepPhase::kOther);
    CHECK(peaks[3].live_bytes == 350);
    CHECK(peaks[3].event.index() == 2);
    CHECK(peaks[3].time_us == 2);

    SummaryOptions so;
    so.phase_peaks = true;
    SummaryReport summary = Summarize(snap, &*tl, so);
    REQUIRE(summary.devices.size() == 1);
    CHECK(summary.devices[0].phase_peaks.size() == 4);
    so.phase_peaks = false;
    CHECK(Summarize(snap, &*tl, so).devices[0].phase_peaks.empty());
  }

  TEST_CASE("steps end where the optimizer step ends, and one step is never cut into layers") {
    Snapshot three = Steps(3);
    auto tl = ReconstructTimeline(three);
    REQUIRE(tl.ok());
    StepInfo info;
    REQUIRE(StepsByPhases(three, tl->devices[0], info));
    CHECK(info.method == "training steps");
    // Step 1 is events 0..10; later steps begin by freeing the previous step's blocks (4 events,
    // still the optimizer's run: frees do not end a run), so each step ends where the next
    // forward pass begins: 15, 30, and the trace's end (after the last step's frees).
    REQUIRE(info.ranges.size() == 3);
    CHECK(info.ranges[0].first_event() == 0);
    CHECK(info.ranges[0].end_event() == 15);
    CHECK(info.ranges[1].first_event() == 15);
    CHECK(info.ranges[1].end_event() == 30);
    CHECK(info.ranges[2].end_event() == 45);
    CHECK(info.finding == StepsFinding::kNone);
    auto steps = DetectSteps(three, *tl, StepOptions{});
    REQUIRE(steps.ok());
    CHECK(steps->method == "training steps");
    CHECK(steps->ranges == info.ranges);
    std::string method;
    std::vector<StepPeak> peaks = StepPeaks(three, tl->devices[0], &method);
    REQUIRE(peaks.size() == 3);
    CHECK(method == "training steps");
    CHECK(peaks[0].live_bytes == 1150);
    CHECK(peaks[1].live_bytes == 1150);

    Snapshot one = OneStep();
    auto tl1 = ReconstructTimeline(one);
    REQUIRE(tl1.ok());
    StepInfo single;
    REQUIRE(StepsByPhases(one, tl1->devices[0], single));
    CHECK(single.ranges.size() == 1);
    CHECK(single.finding == StepsFinding::kOneTrainingStep);
    CHECK(query::StepsNote(single) == "the trace holds one training step");
    CHECK(StepPeaks(one, tl1->devices[0], nullptr).empty());
  }

  TEST_CASE("a notebook cell is named as a cell and IPython's machinery is never a caller") {
    MiniTrace t;
    const std::string site = "/opt/conda/lib/python3.10/site-packages/";
    const F cell{"<module>", "/tmp/ipykernel_4821/3105878423.py", 21};
    const F run_code{"run_code", site + "IPython/core/interactiveshell.py", 3577};
    const F runpy{"_run_module_as_main", "/opt/conda/lib/python3.10/runpy.py", 196};
    StackId linear = t.Stack({{"at::_ops::linear::call(at::Tensor const&)"},
                              {"forward", site + "torch/nn/modules/linear.py", 116},
                              {"_call_impl", site + "torch/nn/modules/module.py", 1527},
                              cell,
                              run_code,
                              {"run_ast_nodes", site + "IPython/core/interactiveshell.py", 3517},
                              {"start", site + "ipykernel/kernelapp.py", 736},
                              runpy});
    StackId helper = t.Stack({{"at::_ops::mm::call(at::Tensor const&)"},
                              {"helper", "/home/u/proj/utils.py", 5},
                              {"<module>", "/tmp/ipykernel_4821/3105878423.py", 22},
                              run_code,
                              runpy});
    t.Alloc(0x1000, 10, linear);
    t.Alloc(0x2000, 10, helper);
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    const SiteInfo& a = attr.Site(linear);
    CHECK(a.BaseLabel() == "linear \u2190 cell 3105878423.py:21 <module>");
    CHECK(a.callers.empty());
    const SiteInfo& b = attr.Site(helper);
    // The user's own files are shown relative to their folder, not to "/" shared with the cell's.
    CHECK(b.owner == "utils.py:5 helper");
    REQUIRE(b.callers.size() == 1);
    CHECK(b.callers[0] == "cell 3105878423.py:22 <module>");

    CHECK(NotebookCellName("<ipython-input-21-3105878423>") == "cell [21]");
    CHECK(NotebookCellName("/home/u/proj/train.py").empty());
    CHECK(IsPythonMachineryPath(site + "IPython/core/interactiveshell.py"));
    CHECK(IsPythonMachineryPath("/usr/lib/python3.11/threading.py"));
    CHECK_FALSE(IsPythonMachineryPath(site + "transformers/models/llama/modeling_llama.py"));
    CHECK_FALSE(IsPythonMachineryPath("/home/u/proj/threading.py"));
  }

  TEST_CASE("a model library's layer owns its site and the user's notebook cell is its caller") {
    MiniTrace t;
    const std::string site = "/opt/conda/lib/python3.10/site-packages/";
    const std::string llama = site + "transformers/models/llama/modeling_llama.py";
    const F call{"_call_impl", site + "torch/nn/modules/module.py", 1527};
    const F cell{"<module>", "/tmp/ipykernel_4821/3105878423.py", 21};
    const F run_code{"run_code", site + "IPython/core/interactiveshell.py", 3577};
    const std::vector<F> outer = {call,
                                  {"forward", llama, 330},
                                  call,
                                  {"__call__", site + "transformers/modeling_layers.py", 93},
                                  {"forward", llama, 405},
                                  {"wrapper", site + "transformers/utils/generic.py", 1083},
                                  call,
                                  {"forward", site + "peft/peft_model.py", 1850},
                                  call,
                                  cell,
                                  run_code};
    auto stack = [&](std::vector<F> inner) {
      inner.insert(inner.end(), outer.begin(), outer.end());
      return t.Stack(inner);
    };
    StackId q = stack({{"at::_ops::linear::call(at::Tensor const&)"},
                       {"forward", site + "torch/nn/modules/linear.py", 116},
                       call,
                       {"forward", llama, 615}});
    StackId q2 = stack({{"at::_ops::linear::call(at::Tensor const&)"},
                        {"forward", site + "torch/nn/modules/linear.py", 116},
                        call,
                        {"forward", llama, 615},
                        call,
                        {"forward", llama, 700}});
    StackId lora = stack({{"at::_ops::matmul::call(at::Tensor const&)"},
                          {"forward", site + "bitsandbytes/nn/modules.py", 474},
                          call,
                          {"forward", site + "peft/tuners/lora/bnb.py", 230}});
    StackId hook = stack({{"at::_ops::add::call(at::Tensor const&)"},
                          {"new_forward", site + "accelerate/hooks.py", 170}});
    StackId to = t.Stack({{"at::_ops::to::call(at::Tensor const&)"},
                          {"to", site + "transformers/modeling_utils.py", 4346},
                          {"train", "/home/u/proj/train.py", 9}});
    StackId user = t.Stack({{"at::_ops::mm::call(at::Tensor const&)"},
                            {"attn", "/home/u/proj/my_attn.py", 7},
                            {"forward", llama, 300},
                            {"train", "/home/u/proj/train.py", 10}});
    for (StackId s : {q, q2, lora, hook, to, user}) t.Alloc(0x1000 + 0x100 * s.v, 16, s);
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    const std::string llama_short = "transformers/models/llama/modeling_llama.py";
    // The innermost model frame owns the site; the model's outer modules and wrappers are not
    // callers, IPython's machinery neither: the cell is the only one.
    const SiteInfo& a = attr.Site(q);
    CHECK(a.BaseLabel() ==
          "linear \u2190 " + llama_short + ":615 forward \u2190 cell 3105878423.py:21 <module>");
    CHECK(a.callers == std::vector<std::string>{"cell 3105878423.py:21 <module>"});
    CHECK(a.phase == Phase::kForward);
    CHECK(a.model_owned);
    // The one-line label (JSON `site`, oom's lines) names the user's frame too.
    CHECK(DistinctLabels({&a})[0] ==
          "linear \u2190 " + llama_short + ":615 forward \u2190 cell 3105878423.py:21 <module>");
    // Two sites whose stacks differ only in the model's outer frames stay two sites.
    const SiteInfo& a2 = attr.Site(q2);
    CHECK(a2.key != a.key);
    CHECK(DistinctLabels({&a, &a2})[0] != DistinctLabels({&a, &a2})[1]);
    // bitsandbytes' 4-bit layer under peft's LoRA layer: the innermost is the layer that ran.
    CHECK(attr.Site(lora).owner == "bitsandbytes/nn/modules.py:474 forward");
    CHECK(attr.Site(lora).what == "matmul");
    // accelerate's hook is no layer: the Llama layer around it owns the site.
    CHECK(attr.Site(hook).owner == llama_short + ":330 forward");
    CHECK(attr.Site(hook).callers == std::vector<std::string>{"cell 3105878423.py:21 <module>"});
    // transformers' own `to` is its base class, not a layer: the user's line keeps the site.
    CHECK(attr.Site(to).BaseLabel() == "to \u2190 train.py:9 train");
    // A user frame inside a model layer (a custom attention) still owns its site.
    CHECK(attr.Site(user).BaseLabel() == "mm \u2190 my_attn.py:7 attn");

    CHECK(IsModelLibraryPath(site + "peft/tuners/lora/bnb.py"));
    CHECK(IsModelLibraryPath(site + "diffusers/models/attention_processor.py"));
    CHECK_FALSE(IsModelLibraryPath(site + "accelerate/hooks.py"));
    CHECK_FALSE(IsModelLibraryPath(site + "torch/nn/modules/linear.py"));
    CHECK_FALSE(IsModelLibraryPath("/home/u/proj/lib/transformers/models/bert/modeling_bert.py"));
  }

  TEST_CASE("a trace that runs no model has no phase peaks") {
    MiniTrace t;
    StackId s = t.Stack({{"main", "/home/u/x.py", 3}});
    t.Alloc(0x1000, 10, s);
    Snapshot snap = t.Finish();
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    CHECK(PhasePeaks(snap, tl->devices[0]).empty());
  }
}

}  // namespace
}  // namespace memsnap::analysis
