// Site labels: frame classes, operator and node names, short paths, and the label rules
// (docs/attribution.md, "Labels"), on frames as PyTorch writes them.
#include "memsnap/analysis/attribution/attribution.h"

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/sites/group.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

// Frames as PyTorch 2.x writes them with C++ context.
const F kUnwind{"torch::unwind::unwind()"};
const F kGather{"torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"};
using testing::kMalloc;
const F kEmpty{"at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)"};
const F kEval{"_PyEval_EvalFrameDefault"};
const F kStart{"_start"};

using testing::Op;
using testing::Py;

std::string Label(const std::vector<F>& frames) {
  MiniTrace t;
  StackId s = t.Stack(frames);
  Snapshot snap = t.Finish();
  Attribution attr(snap, nullptr);
  return attr.Site(s).BaseLabel();
}

TEST_SUITE("attribution") {
  TEST_CASE("machinery frames are classified by the part of PyTorch or Python they belong to") {
    CHECK(ClassifyFrame(kUnwind.name, "??") == FrameClass::kUnwinder);
    CHECK(ClassifyFrame(kGather.name, kGather.file) == FrameClass::kUnwinder);
    CHECK(ClassifyFrame(kMalloc.name, kMalloc.file) == FrameClass::kAllocator);
    CHECK(ClassifyFrame("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc("
                        "void**, signed char, unsigned long, CUstream_st*)",
                        "") == FrameClass::kAllocator);
    CHECK(ClassifyFrame(kEmpty.name, "??") == FrameClass::kFactory);
    CHECK(ClassifyFrame("at::(anonymous namespace)::create_out(c10::ArrayRef<long>)",
                        "RegisterCUDA.cpp") == FrameClass::kFactory);
    CHECK(ClassifyFrame("c10::impl::wrap_kernel_functor_unboxed_<...>::call(...)",
                        "RegisterCUDA.cpp") == FrameClass::kDispatcher);
    CHECK(ClassifyFrame("at::_ops::bmm::redispatch(c10::DispatchKeySet, at::Tensor const&)",
                        "??") == FrameClass::kDispatcher);
    CHECK(ClassifyFrame("torch::autograd::VariableType::(anonymous namespace)::bmm(...)",
                        "VariableType_3.cpp") == FrameClass::kDispatcher);
    CHECK(ClassifyFrame("torch::autograd::THPVariable_sqrt(_object*, _object*)",
                        "python_variable_methods.cpp") == FrameClass::kDispatcher);
    CHECK(ClassifyFrame(kEval.name, "??") == FrameClass::kCPython);
    CHECK(ClassifyFrame("method_vectorcall_NOARGS", "??") == FrameClass::kCPython);
    CHECK(ClassifyFrame("run_mod.llvm.9196888086361497952", "??") == FrameClass::kCPython);
    CHECK(ClassifyFrame("__libc_start_main", "??") == FrameClass::kLibc);
    CHECK(ClassifyFrame("execute_native_thread_routine", "thread48.o") == FrameClass::kLibc);
    CHECK(ClassifyFrame("torch::autograd::Engine::evaluate_function(...)", "??") ==
          FrameClass::kEngine);
    CHECK(ClassifyFrame("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", "") ==
          FrameClass::kEngine);
  }

  TEST_CASE("owners of memory are Python frames, autograd nodes, operators and other native code") {
    CHECK(ClassifyFrame("forward", "/home/a/model.py") == FrameClass::kPython);
    CHECK(ClassifyFrame("<module>", "<frozen runpy>") == FrameClass::kPython);
    CHECK(ClassifyFrame(
              "torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)", "??") ==
          FrameClass::kNode);
    CHECK(ClassifyFrame("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)",
                        "??") == FrameClass::kNode);
    CHECK(ClassifyFrame("at::_ops::bmm::call(at::Tensor const&, at::Tensor const&)", "??") ==
          FrameClass::kOp);
    CHECK(ClassifyFrame("at::native::zeros_like(at::Tensor const&)", "??") == FrameClass::kNative);
    CHECK(ClassifyFrame("torch::autograd::generated::BmmBackward0_apply_functional(...)",
                        "Functions.cpp") == FrameClass::kNative);
  }

  TEST_CASE("operator names lose their overload and node names come from the apply frame") {
    CHECK(OpName("at::_ops::div_Tensor::call(at::Tensor const&, at::Tensor const&)") == "div");
    CHECK(OpName("at::_ops::sum_dim_IntList::call(at::Tensor const&)") == "sum");
    CHECK(OpName("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)") == "empty");
    CHECK(OpName("at::_ops::to_dtype_layout::call(at::Tensor const&)") == "to");
    CHECK(OpName("at::_ops::clamp_min::call(at::Tensor const&)") == "clamp_min");
    CHECK(OpName("at::_ops::zeros_like::call(at::Tensor const&)") == "zeros_like");
    CHECK(OpName("at::_ops::bmm::redispatch(c10::DispatchKeySet)") == "");
    CHECK(NodeName("torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)") ==
          "BmmBackward0");
    CHECK(NodeName("torch::autograd::CopySlices::apply(std::vector<at::Tensor>&&)") ==
          "CopySlices");
    CHECK(NodeName("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)") == "");
    CHECK(ShortNativeName("at::native::zeros_like(at::Tensor const&, std::optional<bool>)") ==
          "zeros_like");
    CHECK(ShortNativeName("void torch::autograd::AccumulateGrad::accumulateGrad<std::function<void "
                          "(at::Tensor&&)> >(at::Tensor const&)") ==
          "AccumulateGrad::accumulateGrad");
  }

  TEST_CASE(
      "paths are shown relative to site-packages, the standard library or the user's directory") {
    CHECK(ShortPath("/root/.venv/lib/python3.12/site-packages/torch/functional.py", "") ==
          "torch/functional.py");
    CHECK(ShortPath("D:\\Dev\\a2\\.venv\\Lib\\site-packages\\einops\\einops.py", "") ==
          "einops/einops.py");
    CHECK(ShortPath("/usr/lib/python3.11/threading.py", "") == "threading.py");
    CHECK(ShortPath("/home/a/proj/model/net.py", "/home/a/proj/") == "model/net.py");
    CHECK(ShortPath("D:\\Dev\\a2\\cs336_basics\\model.py", "D:/Dev/a2/") ==
          "cs336_basics/model.py");
    CHECK(ShortPath("/home/a/proj/scripts/../cs336/profile.py", "/home/a/proj/") ==
          "cs336/profile.py");
    CHECK(NormalPath("/home/a/proj/scripts/./../cs336/profile.py") ==
          "/home/a/proj/cs336/profile.py");
    CHECK(NormalPath("../up/x.py") == "../up/x.py");
    CHECK(IsLibraryPath("/x/lib/python3.13/site-packages/torch/optim/optimizer.py"));
    CHECK(IsLibraryPath("/usr/lib/python3.11/threading.py"));
    CHECK(!IsLibraryPath("/home/a/proj/train.py"));
    CHECK(!IsLibraryPath("/tmp/ipykernel_136836/2091124272.py"));
  }

  TEST_CASE("a frame's path is shown, keyed and folded without its 'dir/..' detours") {
    MiniTrace t;
    StackId s = t.Stack({{"memory_profile", "/home/a/proj/scripts/../cs336/profile.py", 142}});
    t.Event(Action::kAlloc, 0x1000, 512, s);
    Snapshot snap = t.Finish();
    FrameId f = snap.stacks.Get(s)[0];
    CHECK(DisplayFrameText(snap, f) == "/home/a/proj/cs336/profile.py:142:memory_profile");
    CHECK(FrameKeyText(snap, f, false) == "/home/a/proj/cs336/profile.py:142:memory_profile");
    CHECK(FrameKeyText(snap, f, true) == "/home/a/proj/cs336/profile.py:memory_profile");
    // Filters keep matching the path as recorded.
    CHECK(snap.FrameText(f) == "/home/a/proj/scripts/../cs336/profile.py:142:memory_profile");
  }

  TEST_CASE(
      "a Python site is named by the user's frame and the operator it called, not by the "
      "allocator") {
    std::vector<F> stack = {
        kUnwind,
        kGather,
        kMalloc,
        kEmpty,
        Op("empty_like"),
        Op("zeros_like"),
        F{"torch::autograd::THPVariable_zeros_like(_object*)", "python_torch_functions_0.cpp"},
        Py("/home/a/cs336_basics/optimizers.py", 82, "step"),
        kEval,
        kStart,
        Py("/home/a/lib/python3.13/site-packages/torch/optim/optimizer.py", 493, "wrapper"),
        Py("/home/a/systems/benchmark.py", 234, "run")};
    CHECK(Label(stack) == "zeros_like \u2190 cs336_basics/optimizers.py:82 step");
  }

  TEST_CASE("labels stay right in a snapshot with many Python files") {
    // The first label computes the user's common directory from every file, which grows the
    // per-file cache while the first frame's entry is in use (a crash on real snapshots once).
    MiniTrace t;
    std::vector<StackId> stacks;
    for (int i = 0; i < 2000; ++i) {
      std::string file = "/home/a/proj/pkg" + std::to_string(i) + "/mod.py";
      stacks.push_back(t.Stack({kMalloc, kEmpty, Op("zeros"), Py(file, i + 1, "f"), kEval}));
    }
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    for (int i = 0; i < 2000; ++i) {
      REQUIRE(attr.Site(stacks[i]).BaseLabel() ==
              "zeros \u2190 pkg" + std::to_string(i) + "/mod.py:" + std::to_string(i + 1) + " f");
    }
  }

  TEST_CASE("a library call is named by its operator and the user's line that made it") {
    const std::string site = "/v/lib/python3.11/site-packages/";
    CHECK(Label({kMalloc, Op("mm"), Op("linear"),
                 Py(site + "torch/nn/modules/linear.py", 116, "forward"),
                 Py(site + "torch/nn/modules/module.py", 1750, "_call_impl"),
                 Py("/home/a/model.py", 60, "update")}) == "linear \u2190 model.py:60 update");
    // Without C++ frames, the library function the user called names it ("einsum", "to").
    CHECK(Label({Py(site + "torch/functional.py", 373, "einsum"),
                 Py(site + "einops/einops.py", 939, "einsum"),
                 Py("/home/a/model.py", 39, "forward")}) == "einsum \u2190 model.py:39 forward");
    CHECK(Label({Py(site + "torch/nn/modules/module.py", 1355, "convert"),
                 Py(site + "torch/nn/modules/module.py", 955, "_apply"),
                 Py(site + "torch/nn/modules/module.py", 1369, "to"),
                 Py("/home/a/trainers.py", 121, "__init__")}) ==
          "to \u2190 trainers.py:121 __init__");
    // Only generic names inside: the innermost library frame.
    CHECK(Label({Py(site + "torch/nn/modules/linear.py", 116, "forward"),
                 Py(site + "torch/nn/modules/module.py", 1520, "_call_impl"),
                 Py("/home/a/lora.py", 430, "forward")}) ==
          "torch/nn/modules/linear.py:116 forward \u2190 lora.py:430 forward");
  }

  TEST_CASE("library frames inside the user's frame do not make another site") {
    // Module._apply recursed to different depths for different submodules: one `.to()` site.
    const std::string m = "/v/lib/python3.11/site-packages/torch/nn/modules/module.py";
    MiniTrace t;
    StackId shallow = t.Stack({Py(m, 1355, "convert"), Py(m, 955, "_apply"), Py(m, 1369, "to"),
                               Py("/home/a/trainers.py", 121, "__init__")});
    StackId deep = t.Stack({Py(m, 1355, "convert"), Py(m, 955, "_apply"), Py(m, 928, "_apply"),
                            Py(m, 928, "_apply"), Py(m, 1369, "to"),
                            Py("/home/a/trainers.py", 121, "__init__")});
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    CHECK(attr.Site(shallow).key == attr.Site(deep).key);
  }

  TEST_CASE("backward memory is named after its autograd node and operator") {
    std::vector<F> tail = {F{"torch::autograd::Node::operator()(std::vector<at::Tensor>&&)", ""},
                           F{"torch::autograd::Engine::evaluate_function(...)"},
                           F{"torch::autograd::Engine::thread_main(...)"},
                           F{"execute_native_thread_routine", "thread48.o"}, F{"clone"}};
    std::vector<F> bmm = {
        kUnwind, kMalloc, kEmpty, Op("bmm"),
        F{"torch::autograd::generated::BmmBackward0::apply(std::vector<at::Tensor>&&)"}};
    bmm.insert(bmm.end(), tail.begin(), tail.end());
    CHECK(Label(bmm) == "BmmBackward0 (bmm)");
    std::vector<F> div = {
        kMalloc, Op("neg"),
        F{"torch::autograd::generated::details::div_tensor_other_backward(...)", "Functions.cpp"},
        F{"torch::autograd::generated::DivBackward0::apply(std::vector<at::Tensor>&&)"}};
    div.insert(div.end(), tail.begin(), tail.end());
    CHECK(Label(div) == "DivBackward0 (neg)");
    std::vector<F> acc = {kMalloc, Op("new_empty_strided"),
                          F{"torch::autograd::utils::clone_obey_contract(at::Tensor const&)", ""},
                          F{"torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)"}};
    acc.insert(acc.end(), tail.begin(), tail.end());
    CHECK(Label(acc) == "AccumulateGrad");
    std::vector<F> engine = {kMalloc, Op("sum_dim_IntList")};
    engine.insert(engine.end(), tail.begin(), tail.end());
    CHECK(Label(engine) == "sum (autograd engine)");
  }

  TEST_CASE("stacks without an owner are named for what they are") {
    CHECK(Label({kUnwind, kGather, kMalloc, kEmpty}) == std::string(kMachineryOnlyRow));
    CHECK(Label({kMalloc, Op("mm"), F{"my_extension::fused_attention(at::Tensor)"}}) == "mm");
    CHECK(Label({kMalloc, F{"ncclAllReduce"}}) == "ncclAllReduce");
    MiniTrace t;
    Snapshot snap = t.Finish();
    Attribution attr(snap, nullptr);
    CHECK(attr.Site(StackId()).BaseLabel() == std::string(kNoStackRow));
  }

  TEST_CASE("two sites with the same label are told apart by the nearest caller that differs") {
    SiteInfo a, b, c;
    a.key = "a";
    b.key = "b";
    c.key = "c";
    a.owner = b.owner = c.owner = "model.py:30 attn";
    a.what = b.what = c.what = "einsum";
    a.callers = {"model.py:17 forward", "train.py:5 train"};
    b.callers = {"model.py:18 forward", "train.py:5 train"};
    c.callers = {"model.py:17 forward", "eval.py:9 evaluate"};
    std::vector<std::string> labels = DistinctLabels({&a, &b, &c});
    CHECK(labels[0] ==
          "einsum \u2190 model.py:30 attn \u2190 model.py:17 forward \u2190 train.py:5 train");
    CHECK(labels[1] == "einsum \u2190 model.py:30 attn \u2190 model.py:18 forward");
    CHECK(labels[2] ==
          "einsum \u2190 model.py:30 attn \u2190 model.py:17 forward \u2190 eval.py:9 evaluate");
  }

  TEST_CASE(
      "stacks of one site are told apart by the library frame inside the owner that differs") {
    SiteInfo a, b;
    a.key = "a";
    b.key = "b";
    a.owner = b.owner = "train.py:25 train";
    a.what = b.what = "step";
    a.inner = {"torch/optim/optimizer.py:487 wrapper", "torch/optim/adam.py:95 _init_group"};
    b.inner = {"torch/optim/optimizer.py:487 wrapper", "torch/optim/adam.py:96 _init_group"};
    std::vector<std::string> labels = DistinctLabels({&a, &b});
    CHECK(labels[0] == "step \u2190 train.py:25 train [via torch/optim/adam.py:95 _init_group]");
    CHECK(labels[1] == "step \u2190 train.py:25 train [via torch/optim/adam.py:96 _init_group]");
  }

  TEST_CASE("labels that callers cannot tell apart get the operator, then a number") {
    SiteInfo a, b, c, d;
    a.kind = b.kind = c.kind = d.kind = SiteKind::kPython;
    a.owner = b.owner = c.owner = d.owner = "optimizers.py:100 step";
    a.key = "a";
    a.op = "sqrt";
    b.key = "b";
    b.op = "div";
    c.key = "c";
    c.op = "div";
    d.key = "a";  // the same site as `a`: the same label
    d.op = "sqrt";
    std::vector<std::string> labels = DistinctLabels({&a, &b, &c, &d});
    CHECK(labels[0] == "sqrt \u2190 optimizers.py:100 step");
    CHECK(labels[1] == "div \u2190 optimizers.py:100 step");
    CHECK(labels[2] == "div \u2190 optimizers.py:100 step #2");
    CHECK(labels[3] == labels[0]);
  }

  TEST_CASE("a frame hidden by --hide never names a site") {
    MiniTrace t;
    StackId s = t.Stack({kMalloc, Op("relu"), Py("/home/a/model.py", 16, "forward"),
                         Py("/home/a/train.py", 21, "train")});
    Snapshot snap = t.Finish();
    FilterOptions o;
    o.hide = "model\\.py";
    auto filter = FrameFilter::Create(snap, o);
    REQUIRE(filter.ok());
    Attribution attr(snap, &*filter);
    CHECK(attr.Site(s).BaseLabel() == "relu \u2190 train.py:21 train");
  }

  TEST_CASE("the fixture's sites are labelled distinctly in top") {
    Snapshot snap = testing::LoadFixture("attribution_training.json");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kPeak, 0}, GroupOptions{});
    REQUIRE(rep.ok());
    std::vector<std::string> labels;
    for (const GroupRow& r : rep->rows) labels.push_back(r.site);
    std::vector<std::string> expected = {
        "step \u2190 train.py:25 train",
        "[allocated before recording started]",
        "ReluBackward0 (threshold_backward)",
        "linear \u2190 model/net.py:15 forward",
        "to \u2190 train.py:12 <module>",
        "einsum \u2190 model/net.py:30 attn \u2190 model/net.py:17 forward",
        "einsum \u2190 model/net.py:30 attn \u2190 model/net.py:18 forward",
        "to \u2190 train.py:20 train",
        "cross_entropy_loss \u2190 train.py:22 train",
        "backward \u2190 train.py:23 train"};
    CHECK(labels == expected);
  }
}

}  // namespace
}  // namespace memsnap::analysis
