// Categories of memory: every rule of docs/attribution.md ("Categories") on a training loop with
// known answers (testdata/attribution_training.json) and on small traces made for one rule each.
#include <map>
#include <set>

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/blocks.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/group.h"
#include "test_util.h"
#include "timeline_points.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

// Every lifetime of `snap` (`blocks --all`), each with its site and its category decided in
// `categories`.
BlocksReport AllBlocks(const Snapshot& snap, const CategoryNames& categories = CategoryNames()) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  BlockQuery q;
  q.all = true;
  q.categories = categories;
  auto rep = SelectBlocks(snap, *tl, q);
  REQUIRE(rep.ok());
  return *std::move(rep);
}

struct Expect {
  std::string site;
  std::string category;
  std::string rule;
};

TEST_SUITE("attribution-categories") {
  TEST_CASE(
      "arithmetic inside torch.optim's Adam, for-loop or foreach, is temporary, and its "
      "decorators name no site") {
    // testdata/optimizer_fixture.py: two steps of Adam, `_single_tensor_adam` then
    // `_multi_tensor_adam` with `_foreach_*` operators, with C++ frames and with Python's only.
    for (const bool python_only : {false, true}) {
      CAPTURE(python_only);
      const std::string json =
          testing::RunPython("sys.path.insert(0, '" MEMSNAP_SOURCE_DIR
                             "/testdata')\n"
                             "import optimizer_fixture\n"
                             "optimizer_fixture.write('/dev/stdout', python_only=" +
                             std::string(python_only ? "True" : "False") + ")\n");
      Snapshot snap = testing::ParseOrFail(json, "optimizer.json");
      auto tl = ReconstructTimeline(snap);
      REQUIRE(tl.ok());
      BlockQuery q;
      q.all = true;
      auto rep = SelectBlocks(snap, *tl, q);
      REQUIRE(rep.ok());
      int arithmetic = 0, state = 0;
      for (const BlockRow& r : rep->rows) {
        if (r.stack < 0) continue;
        bool update = false, init = false;
        for (const std::string& f : rep->stacks[static_cast<size_t>(r.stack)]) {
          update |= f.find("_single_tensor_adam") != std::string::npos ||
                    f.find("_multi_tensor_adam") != std::string::npos;
          init |= f.find("_init_group") != std::string::npos;
        }
        CAPTURE(r.site);
        // torch.optim's decorators (optimizer.py `_use_grad`, `maybe_fallback`) are plumbing.
        CHECK(r.site.find("_use_grad") == std::string::npos);
        CHECK(r.site.find("maybe_fallback") == std::string::npos);
        if (update) {
          ++arithmetic;
          CHECK(CategoryNames().Name(r.category.category) == "temporary");
          CHECK(CategoryRuleName(r.category.rule) == "optimizer_freed");
        }
        if (init) {
          ++state;
          CHECK(CategoryNames().Name(r.category.category) == "optimizer_state");
        }
      }
      CHECK(arithmetic == 6);  // sqrt, div; _foreach_mul, _sqrt, _div, _add
      CHECK(state == 2);       // exp_avg, exp_avg_sq
    }
  }

  TEST_CASE("every lifetime of the training loop fixture has the category it was made with") {
    Snapshot snap = testing::LoadFixture("attribution_training.json");
    const BlocksReport rep = AllBlocks(snap);
    // In order of first appearance (testdata/attribution_fixture.py says what each one is).
    const std::string to = "to \u2190 ", arrow = " \u2190 ";
    const Expect step[] = {
        {to + "train.py:20 train", "input", "data_kept"},
        {"linear" + arrow + "model/net.py:15 forward", "activation", "saved_for_backward"},
        {"relu" + arrow + "model/net.py:16 forward", "temporary", "forward_freed"},
        {"einsum" + arrow + "model/net.py:30 attn" + arrow + "model/net.py:17 forward",
         "activation", "saved_for_backward"},
        {"einsum" + arrow + "model/net.py:30 attn" + arrow + "model/net.py:18 forward",
         "activation", "saved_for_backward"},
        {"cross_entropy_loss" + arrow + "train.py:22 train", "activation", "saved_for_backward"},
        {"backward" + arrow + "train.py:23 train", "temporary", "backward_freed"},
        {"ReluBackward0 (threshold_backward)", "temporary", "backward_freed"},
        {"MmBackward0 (mm)", "gradient", "backward_kept"},
        {"AccumulateGrad", "gradient", "accumulate_grad"},
        {"sum (autograd engine)", "gradient", "backward_kept"},
    };
    std::vector<Expect> expected = {
        {"[allocated before recording started]", "parameter", "pre_trace_persistent"},
        {"[allocated before the trace, freed by zero_grad: last step's gradients]", "gradient",
         "freed_by_zero_grad"},
        {to + "train.py:12 <module>", "parameter", "init_kept"}};
    expected.insert(expected.end(), std::begin(step), std::end(step));
    expected.push_back({"step" + arrow + "train.py:25 train", "optimizer_state", "optimizer_kept"});
    expected.push_back({"step" + arrow + "train.py:25 train", "optimizer_state", "optimizer_kept"});
    expected.push_back({"sqrt" + arrow + "train.py:25 train", "temporary", "optimizer_freed"});
    expected.insert(expected.end(), std::begin(step), std::end(step));
    expected.push_back({"sqrt" + arrow + "train.py:25 train", "temporary", "optimizer_freed"});
    REQUIRE(rep.rows.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      const BlockRow& r = rep.rows[i];
      INFO("row " << i << ": " << r.site);
      CHECK(r.site == expected[i].site);
      CHECK(rep.categories.Name(r.category.category) == expected[i].category);
      CHECK(CategoryRuleName(r.category.rule) == expected[i].rule);
    }
  }

  TEST_CASE("grouping by category adds up to the live bytes, and categories add up over time") {
    Snapshot snap = testing::LoadFixture("attribution_training.json");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    GroupOptions o;
    o.by = GroupBy::kCategory;
    auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kPeak, 0}, o);
    REQUIRE(rep.ok());
    std::map<std::string, int64_t> by;
    int64_t sum = 0;
    for (const GroupRow& r : rep->rows) {
      by[r.key] = r.bytes;
      sum += r.bytes;
    }
    CHECK(sum == rep->total_bytes);
    CHECK(sum == tl->devices[0].peak_requested);
    CHECK(by["parameter"] == 6 << 20);        // W0 4 MiB + P1 2 MiB
    CHECK(by["optimizer_state"] == 4 << 20);  // exp_avg + exp_avg_sq
    auto context = GroupContext::Create(snap, GroupOptions{});
    REQUIRE(context.ok());
    const DeviceTimeline& dt = tl->devices[0];
    CategoryCurve curve = BuildCategoryCurve(**context, dt);
    std::vector<TimelinePoint> events;
    for (int64_t e = -1; e < static_cast<int64_t>(dt.num_events); ++e)
      events.push_back(testing::Point(e));
    std::vector<CategoryBytes> at = SampleCategoryCurve(curve, events);
    for (size_t i = 0; i < events.size(); ++i) {
      int64_t total = 0;
      for (int64_t b : at[i]) total += b;
      CHECK(total == testing::LiveAt(dt, events[i].index()));
    }
  }

  // Small traces, one rule each.
  const F kForward{"forward", "/home/a/model.py", 10};
  const F kOther{"train", "/home/a/train.py", 5};
  const F kMakeGrads{"_make_grads", "/v/lib/python3.11/site-packages/torch/autograd/__init__.py",
                     88};
  const F kEngine{"torch::autograd::Engine::evaluate_function(...)"};
  const F kMm{"torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"};
  const F kAdam{"step", "/v/lib/python3.11/site-packages/torch/optim/adam.py", 220};
  const F kInit{"__init__", "/v/lib/python3.11/site-packages/torch/nn/modules/linear.py", 99};

  TEST_CASE("a block from before the trace is named by what its free shows it was") {
    MiniTrace t;
    const StackId zero_grad = t.Stack(
        {{"zero_grad", "/v/lib/python3.11/site-packages/torch/optim/optimizer.py", 900}, kOther});
    const StackId backward = t.Stack({kMm, kEngine});
    const StackId optimizer = t.Stack({kAdam, kOther});
    const StackId other = t.Stack({kOther});
    t.Alloc(0x9000, 8, t.Stack({kForward, kOther}));
    t.Free(0x1000, 16, zero_grad);
    t.Free(0x2000, 32, backward);
    t.Free(0x3000, 64, optimizer);
    t.Free(0x4000, 128, other);
    Snapshot snap = t.Finish();
    const BlocksReport rep = AllBlocks(snap);
    std::map<int64_t, std::pair<std::string, std::string>> by_size;
    for (const BlockRow& r : rep.rows) {
      by_size[r.lifetime.requested_size] = {r.site,
                                            std::string(rep.categories.Name(r.category.category))};
    }
    CHECK(by_size[16] ==
          std::make_pair(std::string(kPreWindowZeroGradRow), std::string("gradient")));
    CHECK(by_size[32] ==
          std::make_pair(std::string(kPreWindowBackwardRow), std::string("activation")));
    CHECK(by_size[64] ==
          std::make_pair(std::string(kPreWindowOptimizerRow), std::string("optimizer_state")));
    // A free that says nothing keeps the plain row.
    CHECK(by_size[128].first == std::string(kPreWindowRow));
    // `top` names them the same way.
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    GroupOptions o;
    auto top = GroupLive(snap, *tl, Moment{Moment::Kind::kEvent, 0}, o);
    REQUIRE(top.ok());
    std::set<std::string> labels;
    for (const GroupRow& r : top->rows) labels.insert(r.site);
    CHECK(labels.count(std::string(kPreWindowZeroGradRow)) == 1);
    CHECK(labels.count(std::string(kPreWindowOptimizerRow)) == 1);
  }

  std::vector<CategoryVerdict> Verdicts(const Snapshot& snap) {
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    Attribution attr(snap, nullptr);
    LifetimeCategorizer c(attr, tl->devices[0]);
    std::vector<CategoryVerdict> out;
    for (const BlockLifetime& lt : tl->devices[0].blocks) out.push_back(c.Categorize(lt));
    return out;
  }

  TEST_CASE(
      "without a backward, forward memory alive after its pass is an activation, the rest "
      "temporary") {
    MiniTrace t;
    StackId f = t.Stack({kForward}), x = t.Stack({kOther});
    t.Alloc(0x1000, 100, f);  // kept past the forward pass
    t.Alloc(0x2000, 100, f);
    t.Free(0x2000, 100);      // freed inside it
    t.Alloc(0x3000, 100, x);  // the training loop's own code ends the pass
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    REQUIRE(v.size() == 3);
    CHECK(v[0].rule == CategoryRule::kForwardKept);
    CHECK(v[0].category == Category::kActivation);
    CHECK(v[1].rule == CategoryRule::kForwardFreed);
    CHECK(v[1].category == Category::kTemporary);
  }

  TEST_CASE("an out-of-memory error ends the forward pass it interrupts") {
    MiniTrace t;
    StackId f = t.Stack({kForward});
    t.Alloc(0x1000, 100, f);
    t.Event(Action::kOom, 0, 1 << 30);
    t.Free(0x1000, 100);  // the exception unwinds and frees it
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    CHECK(v[0].rule == CategoryRule::kForwardKept);
    MiniTrace u;  // the same without the OOM: freed inside the pass
    StackId g = u.Stack({kForward});
    u.Alloc(0x1000, 100, g);
    u.Free(0x1000, 100);
    CHECK(Verdicts(u.Finish())[0].rule == CategoryRule::kForwardFreed);
  }

  TEST_CASE("memory made before a forward pass and alive when it starts is an input") {
    MiniTrace t;
    StackId f = t.Stack({kForward}), x = t.Stack({kOther});
    t.Alloc(0x1000, 100, x);  // the batch
    t.Alloc(0x2000, 100, x);  // a temporary of the loop, freed before the forward
    t.Free(0x2000, 100);
    t.Alloc(0x3000, 100, f);
    t.Free(0x1000, 100);
    t.Alloc(0x4000, 100, x);  // made after the last forward, alive at the end: no evidence
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    CHECK(v[0].rule == CategoryRule::kBeforeForward);
    CHECK(v[0].category == Category::kInput);
    CHECK(v[1].rule == CategoryRule::kOtherFreed);
    CHECK(v[3].rule == CategoryRule::kNoEvidence);
    CHECK(v[3].category == Category::kUnknown);
  }

  TEST_CASE("allocations without a stack inside a backward pass are the autograd engine's") {
    // Recorded with Python frames only: the engine's thread has none.
    MiniTrace t;
    StackId f = t.Stack({kForward}), seed = t.Stack({kMakeGrads, kOther});
    t.Alloc(0x1000, 100, f);
    t.Alloc(0x2000, 100, seed);
    t.Alloc(0x3000, 100, StackId::Invalid());  // a backward temporary
    t.Free(0x3000, 100);
    t.Alloc(0x4000, 100, StackId::Invalid());  // a gradient, alive after backward
    t.Free(0x2000, 100);
    t.Alloc(0x5000, 100, f);  // the next forward pass
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    CHECK(v[2].rule == CategoryRule::kBackwardFreed);
    CHECK(v[3].rule == CategoryRule::kBackwardKept);
    CHECK(v[3].category == Category::kGradient);
    MiniTrace u;  // outside backward: no evidence
    u.Alloc(0x1000, 100, u.Stack({kForward}));
    u.Alloc(0x2000, 100, StackId::Invalid());
    CHECK(Verdicts(u.Finish())[1].rule == CategoryRule::kNoEvidence);
  }

  TEST_CASE("memory older than the trace is named by who frees it, or by its own stack") {
    MiniTrace t;
    StackId engine = t.Stack({kMm, kEngine}), adam = t.Stack({kAdam, kOther}),
            loop = t.Stack({kOther});
    StackId init = t.Stack({kInit, kOther});
    t.Ghost(0x100000, 100, init);  // recorded by the block: made by a module's __init__
    t.Ghost(0x200000, 100);        // no stack, and the trace runs no model: unknown
    t.Free(0x1000, 100, engine);   // a saved tensor released by the engine
    t.Free(0x2000, 100, adam);     // old optimizer state replaced by a step
    t.Free(0x3000, 100, loop);     // freed by the loop's code: no evidence
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    std::map<CategoryRule, Category> seen;
    for (const CategoryVerdict& c : v) seen[c.rule] = c.category;
    CHECK(seen[CategoryRule::kFreedByBackward] == Category::kActivation);
    CHECK(seen[CategoryRule::kFreedByOptimizer] == Category::kOptimizerState);
    CHECK(seen[CategoryRule::kStackPhase] == Category::kParameter);
    CHECK(seen.count(CategoryRule::kNoEvidence) == 1);
    CHECK(seen.count(CategoryRule::kPreTracePersistent) == 0);
  }

  TEST_CASE("a user category is decided before the built-in rules, the first given winning") {
    Snapshot snap = testing::LoadFixture("attribution_training.json");
    UserCategories list;
    auto never = ParseUserCategory("never=no/such/frame");
    auto init = ParseUserCategory("first_init=optim/adam\\.py:95:_init_group");
    auto adam = ParseUserCategory("adam=optim/adam\\.py");
    REQUIRE(never.ok());
    REQUIRE(init.ok());
    REQUIRE(adam.ok());
    REQUIRE(AddUserCategory(list, std::move(*never)).ok());
    REQUIRE(AddUserCategory(list, std::move(*init)).ok());
    REQUIRE(AddUserCategory(list, std::move(*adam)).ok());
    const CategoryNames names(std::move(list));
    CHECK(names.size() == kNumCategories + 3);
    CHECK(names.Name(UserCategoryAt(2)) == "adam");
    auto parsed = names.Parse("first_init");
    REQUIRE(parsed.ok());
    CHECK(*parsed == UserCategoryAt(1));
    const BlocksReport rep = AllBlocks(snap, names);
    std::map<std::string, int> counts;
    for (const BlockRow& r : rep.rows) {
      const std::string name(rep.categories.Name(r.category.category));
      ++counts[name];
      if (name == "adam" || name == "first_init") {
        CHECK(CategoryRuleName(r.category.rule) == "user_category");
      }
      // The step's state and its temporaries both run adam.py; the free of last step's
      // gradients (zero_grad, in optimizer.py) is older than the trace and keeps its rule.
      if (r.site == "[allocated before the trace]") CHECK(name == "gradient");
    }
    CHECK(counts["never"] == 0);
    CHECK(counts["first_init"] == 1);  // exp_avg, line 95; exp_avg_sq (96) is adam
    CHECK(counts["adam"] > 0);
    CHECK(counts["optimizer_state"] == 0);
  }

  TEST_CASE("user categories are checked when given, and a vocabulary holds at most 16") {
    CHECK(!ParseUserCategory("noequals").ok());
    CHECK(!ParseUserCategory("=x").ok());
    CHECK(!ParseUserCategory("a b=x").ok());
    CHECK(!ParseUserCategory("gradient=x").ok());
    CHECK(!ParseUserCategory("kv=").ok());
    auto bad = ParseUserCategory("kv=cache[");
    REQUIRE(!bad.ok());
    CHECK(bad.status().message().find("invalid regex 'cache['") != std::string_view::npos);
    UserCategories list;
    for (int i = 0; i < kMaxUserCategories; ++i) {
      std::string text = "c";
      text += std::to_string(i);
      text += "=x";
      auto c = ParseUserCategory(text);
      REQUIRE(c.ok());
      REQUIRE(AddUserCategory(list, std::move(*c)).ok());
    }
    auto again = ParseUserCategory("c0=y");
    REQUIRE(again.ok());
    CHECK(!AddUserCategory(list, std::move(*again)).ok());
    auto extra = ParseUserCategory("extra=y");
    REQUIRE(extra.ok());
    CHECK(!AddUserCategory(list, std::move(*extra)).ok());
    const CategoryNames names(std::move(list));
    CHECK(names.size() == kMaxCategories);
    CHECK(names.Name(UserCategoryAt(kMaxUserCategories - 1)) == "c15");
    // A vocabulary is a value: the built-ins alone know nothing of another one's categories.
    CHECK(CategoryNames().size() == kNumCategories);
    CHECK(CategoryNames().Name(UserCategoryAt(0)) == "unknown");
    CHECK(!CategoryNames().Parse("c0").ok());
  }

  TEST_CASE(
      "state made in an optimizer's constructor or a comprehension in its file is its state") {
    // class MyAdam: def __init__(self, params): self.m = [torch.zeros_like(p) for p in params]
    const F ctor{"__init__", "/home/a/my_optimizers.py", 12};
    const F comp{"<listcomp>", "/home/a/my_optimizers.py", 13};
    MiniTrace t;
    StackId state = t.Stack({comp, ctor, kOther}), direct = t.Stack({ctor, kOther});
    StackId f = t.Stack({kForward});
    t.Alloc(0x1000, 100, state);
    t.Alloc(0x2000, 100, direct);
    t.Alloc(0x3000, 100, direct);  // scratch of the constructor, freed in it
    t.Free(0x3000, 100);
    t.Alloc(0x4000, 100, f);
    std::vector<CategoryVerdict> v = Verdicts(t.Finish());
    CHECK(v[0].category == Category::kOptimizerState);
    CHECK(v[0].rule == CategoryRule::kOptimizerKept);
    CHECK(v[1].category == Category::kOptimizerState);
    CHECK(v[2].category == Category::kTemporary);
    CHECK(v[2].rule == CategoryRule::kOptimizerFreed);
    // A module's constructor (a file that is no optimizer's) stays init: a parameter.
    MiniTrace u;
    u.Alloc(0x1000, 100, u.Stack({{"__init__", "/home/a/model.py", 7}, kOther}));
    u.Alloc(0x2000, 100, u.Stack({kForward}));
    CHECK(Verdicts(u.Finish())[0].category == Category::kParameter);
  }
}

}  // namespace
}  // namespace memsnap::analysis
