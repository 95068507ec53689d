// Backward sites name the forward lines that made their kind of autograd node (docs/attribution.md,
// rule L2), on testdata/backward_forward.json: forward stacks that show an operator's autograd
// kernel (VariableType) under the user's line, and the engine's stacks that run the nodes.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/parse/reader.h"
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

using testing::kMalloc;

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
                   "DivBackward0 (div) for one of 2 forward lines: model.py:31 attn, :32 attn"));
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

  TEST_CASE(
      "more than three forward lines are counted and the rest left out, lines of one file by "
      "their numbers") {
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
    // One file's lines after the first show only their numbers, as compilers list them.
    CHECK(attr.Site(node).BaseLabel() ==
          "AddBackward0 for one of 4 forward lines: model.py:7 forward, :12 forward, :40 forward, "
          "\u2026");
  }
}

// Per node base ("Div"), the owners of the file's stacks that show an operator's autograd kernel
// inside their innermost Python frame and no autograd node, in the forward or other phase (the
// optimizer, init and data phases run without grad).
std::map<std::string, std::set<std::string>> KernelOwners(const Snapshot& snap, Attribution& attr) {
  std::map<std::string, std::set<std::string>> out;
  for (uint32_t i = 1; i < snap.stacks.size(); ++i) {
    const StackId id(i);
    std::string op;
    bool python = false, node = false;
    for (FrameId f : snap.stacks.Get(id)) {
      std::string_view name = snap.strings.Get(snap.frames.Get(f).name);
      if (!NodeName(name).empty()) node = true;
      if (attr.ClassOf(f) == FrameClass::kPython) python = true;
      if (!python && op.empty()) op = AutogradWrapperOp(name);
    }
    if (node || !python || op.empty()) continue;
    const SiteInfo& site = attr.Site(id);
    if (site.kind != SiteKind::kPython) continue;
    if (site.phase != Phase::kForward && site.phase != Phase::kOther) continue;
    out[NodeBaseOfOp(op)].insert(site.owner);
  }
  return out;
}

TEST_SUITE("attribution-corpus") {
  TEST_CASE(
      "on every corpus file, a backward site's forward lines called an operator of its node's "
      "name in a phase that runs with grad" *
      doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;
    int with_lines = 0;
    for (const std::string& path : files) {
      INFO(path);
      auto snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      Attribution attr(*snap, nullptr);
      auto with_grad = KernelOwners(*snap, attr);
      for (uint32_t i = 1; i < snap->stacks.size(); ++i) {
        const SiteInfo& site = attr.Site(StackId(i));
        if (site.kind != SiteKind::kBackward) continue;
        INFO(site.BaseLabel());
        const std::string base = NodeBase(site.node);
        std::set<std::string> lines(site.forward_lines.begin(), site.forward_lines.end());
        CHECK(lines.size() == site.forward_lines.size());
        CHECK(lines == with_grad[base]);
        with_lines += !lines.empty();
      }
    }
    if (!testing::CorpusBounded()) CHECK(with_lines > 100);
  }

  TEST_CASE("Wedsonlin's softmax division is named by its two forward lines, not the optimizer's" *
            doctest::test_suite("corpus")) {
    std::optional<std::string> dir = testing::CorpusDir();
    if (!dir) return;
    auto snap = parse::ReadSnapshot(
        *dir + "/Wedsonlin_a2__results_medium_1024_training_memory_snapshot__83e7cb0c.pickle");
    REQUIRE(snap.ok());
    Attribution attr(*snap, nullptr);
    std::set<std::string> div, view;
    for (uint32_t i = 1; i < snap->stacks.size(); ++i) {
      const SiteInfo& site = attr.Site(StackId(i));
      if (site.node == "DivBackward0") div.insert(site.BaseLabel());
      if (site.node == "ViewBackward0") view.insert(site.BaseLabel());
    }
    // Checked against the raw frames: the two lines whose forward stacks hold
    // VariableType::div_Tensor; optimizer.py:80 step divides too, without grad.
    const std::string lines =
        " for one of 2 forward lines: cs336-basics/cs336_basics/model.py:427 "
        "scaled_dot_product_attention, cs336-basics/cs336_basics/nn_utils.py:7 softmax";
    INFO(absl::StrJoin(div, " | "));
    CHECK(div == std::set<std::string>{"DivBackward0" + lines, "DivBackward0 (div)" + lines,
                                       "DivBackward0 (mul)" + lines, "DivBackward0 (neg)" + lines});
    CHECK(view == std::set<std::string>{"ViewBackward0 (reshape)"});
  }
}

}  // namespace
}  // namespace memsnap::analysis
