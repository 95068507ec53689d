// Which repeats are steps (docs/leaks.md, "Finding the step"): the layers of one forward pass never
// are, with or without autocast's casts; the repeated calls of a generation loop are.
#include <cstdint>
#include <string>

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/query/leaks.h"

namespace memsnap::analysis::steps_repeats_test {
namespace {

using testing::F;
using testing::MiniTrace;

const F kLoop{"generate", "/home/u/proj/generate.py", 30};
const F kModel{"forward", "/home/u/proj/model.py", 20};  // the model's loop over its layers

// A stack inside a layer's forward, called from the model's loop (the same for every layer).
StackId LayerStack(MiniTrace& t, const std::string& op, int line) {
  return t.Stack({{"at::_ops::" + op + "::call(at::Tensor const&)"},
                  {"forward", "/home/u/proj/layer.py", line},
                  kModel,
                  kLoop});
}

// One forward pass of `layers` identical layers: each allocates its output (and under autocast a
// cast copy of its weight first, freed after), a temporary freed at once, and frees the previous
// layer's output.
Snapshot ForwardPass(int layers, bool autocast) {
  MiniTrace t;
  const StackId mm = LayerStack(t, "mm", 11);
  const StackId relu = LayerStack(t, "relu", 12);
  const StackId cast = t.Stack({{"at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, "
                                 "c10::DeviceType)"},
                                {"at::_ops::_to_copy::call(at::Tensor const&)"},
                                {"forward", "/home/u/proj/layer.py", 11},
                                kModel,
                                kLoop});
  uint64_t prev = 0;
  for (int k = 0; k < layers; ++k) {
    const uint64_t out = 0x100000 + static_cast<uint64_t>(k % 2) * 0x10000;
    if (autocast) t.Alloc(0x300000, 2000, cast);
    t.Alloc(out, autocast ? 4000 : 8000, mm);
    if (autocast) t.Free(0x300000, 2000);
    t.Alloc(0x200000, 4000, relu);
    t.Free(0x200000, 4000);
    if (prev != 0) t.Free(prev, autocast ? 4000 : 8000);
    prev = out;
  }
  t.Free(prev, autocast ? 4000 : 8000);
  return t.Finish();
}

StepInfo Detect(const Snapshot& snap) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  auto steps = DetectSteps(snap, *tl, StepOptions{});
  REQUIRE(steps.ok());
  return *steps;
}

TEST_CASE("the layers of one forward pass are never steps, with or without autocast's casts") {
  for (bool autocast : {false, true}) {
    CAPTURE(autocast);
    const Snapshot snap = ForwardPass(12, autocast);
    const StepInfo steps = Detect(snap);
    CHECK(steps.ranges.empty());
    CHECK(steps.finding == StepsFinding::kOneForwardPass);
    CHECK(steps.finding_calls == 1);
    CHECK(steps.finding_events > 0);
    CHECK(query::StepsNote(steps).starts_with(
        "no repeated training step: the trace holds one forward pass"));
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    CHECK(HoldsOneForwardPass(snap, tl->devices[0]));
  }
}

TEST_CASE("the repeated calls of a generation loop are steps, one call each") {
  MiniTrace t;
  const StackId embed = LayerStack(t, "embedding", 5);
  const StackId mm = LayerStack(t, "mm", 11);
  const StackId sample = t.Stack({{"at::_ops::multinomial::call(at::Tensor const&)"},
                                  {"generate", "/home/u/proj/generate.py", 31}});
  for (int k = 0; k < 12; ++k) {
    // One call of the model (two different layers), then the loop samples a token and keeps it.
    t.Alloc(0x100000, 1000, embed);
    t.Alloc(0x200000, 3000, mm);
    t.Free(0x100000, 1000);
    t.Free(0x200000, 3000);
    t.Alloc(0x400000 + static_cast<uint64_t>(k) * 0x100, 8, sample);
  }
  const Snapshot snap = t.Finish();
  const StepInfo steps = Detect(snap);
  CHECK(steps.method == "periodicity");
  CHECK(steps.ranges.size() >= 10);
  CHECK(steps.finding == StepsFinding::kNone);
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  CHECK_FALSE(HoldsOneForwardPass(snap, tl->devices[0]));
}

}  // namespace
}  // namespace memsnap::analysis::steps_repeats_test
