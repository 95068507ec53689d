// Backward sites name the forward lines that made their kind of autograd node (docs/attribution.md,
// rule L2), on testdata/backward_forward.json: forward stacks that show an operator's autograd
// kernel (VariableType) under the user's line, and the engine's stacks that run the nodes.
#include <map>
#include <string>
#include <vector>

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution.h"
#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/group.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

// Every distinct site of the fixture's trace by its BaseLabel, with its key.
std::map<std::string, std::string> KeysByLabel(const Snapshot& snap, FrameFilter* filter) {
  Attribution attr(snap, filter);
  std::map<std::string, std::string> out;
  for (const TraceEvent& e : snap.events) {
    if (e.action != Action::kAlloc) continue;
    const SiteInfo& site = attr.Site(e.stack);
    out[site.BaseLabel()] = site.key;
  }
  return out;
}

bool HasLabel(const std::map<std::string, std::string>& labels, const std::string& label) {
  return labels.count(label) > 0;
}

const F kMalloc{
    "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
    "unsigned long, CUstream_st*)",
    "CUDACachingAllocator.cpp"};

F Wrapper(const std::string& op) {
  return F{"torch::autograd::VariableType::(anonymous namespace)::" + op +
               "(c10::DispatchKeySet, at::Tensor const&)",
           "VariableType_0.cpp"};
}

TEST_SUITE("attribution") {
  TEST_CASE("an operator's autograd kernel and its node are named alike, as PyTorch names nodes") {
    CHECK(AutogradWrapperOp("torch::autograd::VariableType::(anonymous namespace)::div_Tensor("
                            "c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)") ==
          "div_Tensor");
    CHECK(AutogradWrapperOp("torch::autograd::VariableType::_to_copy(c10::DispatchKeySet)") ==
          "_to_copy");
    CHECK(AutogradWrapperOp("at::_ops::div_Tensor::call(at::Tensor const&)") == "");
    CHECK(NodeBaseOfOp("div_Tensor") == "Div");
    CHECK(NodeBaseOfOp("mul__Tensor") == "Mul");  // in place: the same node as mul
    CHECK(NodeBaseOfOp("sum_dim_IntList") == "Sum");
    CHECK(NodeBaseOfOp("pow_Tensor_Scalar") == "Pow");
    CHECK(NodeBaseOfOp("_to_copy") == "ToCopy");
    CHECK(NodeBaseOfOp("linalg_vector_norm") == "LinalgVectorNorm");
    CHECK(NodeBaseOfOp("upsample_nearest2d") == "UpsampleNearest2D");
    CHECK(NodeBaseOfOp("_efficient_attention_forward") == "EfficientAttention");
    CHECK(NodeBase("DivBackward0") == "Div");
    CHECK(NodeBase("UpsampleNearest2DBackward12") == "UpsampleNearest2D");
    CHECK(NodeBase("AccumulateGrad") == "");
    CHECK(NodeBase("CopyBackwards") == "");
    CHECK(NodeBase("Backward0") == "");
  }

  TEST_CASE("a backward site names the forward line that made its kind of node") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    auto labels = KeysByLabel(snap, nullptr);
    CHECK(HasLabel(labels, "MulBackward0 (mul) for model.py:21 forward"));
    CHECK(HasLabel(labels, "ToCopyBackward0 (to) for model.py:22 forward"));
    // The loss, computed in the training loop outside any module call, makes nodes too.
    CHECK(HasLabel(labels, "MeanBackward0 (div) for train.py:16 train"));
  }

  TEST_CASE("several forward lines are all named, in file and line order") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    auto labels = KeysByLabel(snap, nullptr);
    // Not optimizer.py:80 step (the optimizer runs without grad), nor the backward formula's own
    // call of div through the same autograd kernel, nor the engine's run from train.py:17.
    CHECK(HasLabel(labels,
                   "DivBackward0 (div) for one of 2 forward lines: model.py:32 attn, "
                   "nn_utils.py:6 softmax"));
    // The data phase's copy of the batch (train.py:12) made no node.
    CHECK(!HasLabel(labels,
                    "ToCopyBackward0 (to) for one of 2 forward lines: model.py:22 "
                    "forward, train.py:12 train"));
  }

  TEST_CASE("a node without forward evidence in the file keeps its label") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    auto labels = KeysByLabel(snap, nullptr);
    CHECK(HasLabel(labels, "ViewBackward0 (reshape)"));  // views allocate nothing forward
    CHECK(HasLabel(labels, "AccumulateGrad"));
  }

  TEST_CASE("forward lines change a backward site's label, never its key") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    auto labels = KeysByLabel(snap, nullptr);
    CHECK(labels["MulBackward0 (mul) for model.py:21 forward"] == "node|MulBackward0|mul|");
    CHECK(labels["ToCopyBackward0 (to) for model.py:22 forward"] == "node|ToCopyBackward0|to|");
  }

  TEST_CASE("a hidden forward frame does not name a forward line") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    FilterOptions o;
    o.hide = "nn_utils\\.py";
    auto filter = FrameFilter::Create(snap, o);
    REQUIRE(filter.ok());
    auto labels = KeysByLabel(snap, &*filter);
    // softmax's line is hidden: its caller, model.py:31 attn, is the line that called div.
    CHECK(HasLabel(labels,
                   "DivBackward0 (div) for one of 2 forward lines: model.py:31 attn, "
                   "model.py:32 attn"));
  }

  TEST_CASE("in top, the node's own callers follow its forward lines in brackets") {
    Snapshot snap = testing::LoadFixture("backward_forward.json");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kPeak, 0}, GroupOptions{});
    REQUIRE(rep.ok());
    std::vector<std::string> div;
    for (const GroupRow& r : rep->rows) {
      if (r.site.starts_with("DivBackward0")) div.push_back(r.site);
    }
    // Two sites of one node: told apart by the engine's caller, as without forward lines.
    REQUIRE(div.size() == 2);
    CHECK(div[0] ==
          "DivBackward0 (div) for one of 2 forward lines: model.py:32 attn, nn_utils.py:6 softmax");
    CHECK(div[1] ==
          "DivBackward0 (div) [for one of 2 forward lines: model.py:32 attn, nn_utils.py:6 "
          "softmax] \u2190 torch/autograd/__init__.py:266 backward");
  }

  TEST_CASE("more than three forward lines are counted and the rest left out") {
    MiniTrace t;
    std::vector<StackId> forward;
    for (int line : {40, 7, 12, 100}) {
      forward.push_back(t.Stack({kMalloc, Wrapper("add_Tensor"), F{"_PyEval_EvalFrameDefault"},
                                 F{"forward", "/home/a/model.py", line}}));
    }
    StackId node = t.Stack(
        {kMalloc, F{"torch::autograd::generated::AddBackward0::apply(std::vector<at::Tensor>&&)"},
         F{"torch::autograd::Engine::thread_main(...)"}});
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    CHECK(attr.Site(node).BaseLabel() ==
          "AddBackward0 for one of 4 forward lines: model.py:7 forward, model.py:12 forward, "
          "model.py:40 forward, \u2026");
  }
}

}  // namespace
}  // namespace memsnap::analysis
