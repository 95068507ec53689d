// diff pairs the eager sites of a line with the torch.compile site that replaced them, on
// testdata/compile_eager.json and compile_compiled.json: one tiny program run eagerly and compiled
// (include/memsnap/analysis/sites/moved_sites.h, PairCompiledSites; docs/attribution.md, "Sites
// torch.compile replaced").
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "diff_rows.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/diff_render.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::kMiB;

DiffReport Diff(const std::string& before, const std::string& after, DiffOptions o = {}) {
  o.auto_moment = true;
  Snapshot b = testing::LoadFixture(before);
  Snapshot a = testing::LoadFixture(after);
  auto rep = DiffSnapshots(b, a, o);
  REQUIRE(rep.ok());
  return *rep;
}

using testing::FindSiteDelta;

bool Has(const std::vector<std::string>& labels, std::string_view label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

TEST_SUITE("diff") {
  TEST_CASE(
      "fused eager operators of a line and the compiled code that replaced them are one row") {
    DiffReport rep = Diff("compile_eager.json", "compile_compiled.json");
    const SiteDelta* s =
        FindSiteDelta(rep, "mul, sigmoid \u2192 torch.compile \u2190 model.py:12 forward");
    REQUIRE(s != nullptr);
    CHECK(s->presence == Presence::kBoth);
    CHECK(s->compile == CompileChange::kCompiled);
    CHECK(s->eager_ops == std::vector<std::string>{"mul", "sigmoid"});
    CHECK(s->before_bytes == 4 * kMiB);  // the two eager outputs, summed
    CHECK(s->after_bytes == 2 * kMiB);   // one fused buffer
    CHECK(s->before_count == 2);
    CHECK(s->after_count == 1);
    CHECK(s->before_keys.size() == 2);
    CHECK(s->after_keys == std::vector<std::string>{s->key});
    CHECK(s->before_key.empty());  // not a move
    CHECK(s->category() == Category::kActivation);
  }

  TEST_CASE("a compiled line whose memory did not change is an unchanged pair, not gone and new") {
    DiffReport rep = Diff("compile_eager.json", "compile_compiled.json");
    const SiteDelta* s =
        FindSiteDelta(rep, "einsum \u2192 torch.compile \u2190 model.py:11 forward");
    REQUIRE(s != nullptr);
    CHECK(s->delta_bytes() == 0);
    CHECK(s->delta_count() == 0);
    CHECK(rep.sites_compiled == 2);
    CHECK(rep.sites_unchanged == 2);  // the einsum pair and train.py's randn
    CHECK(rep.sites_only_before == 2);
    CHECK(rep.sites_only_after == 3);
  }

  TEST_CASE("compiled against eager pairs the same lines the other way round") {
    DiffReport rep = Diff("compile_compiled.json", "compile_eager.json");
    const SiteDelta* s =
        FindSiteDelta(rep, "torch.compile \u2192 mul, sigmoid \u2190 model.py:12 forward");
    REQUIRE(s != nullptr);
    CHECK(s->compile == CompileChange::kEager);
    CHECK(s->before_bytes == 2 * kMiB);
    CHECK(s->after_bytes == 4 * kMiB);
    CHECK(s->before_keys == std::vector<std::string>{s->before_keys[0]});
    CHECK(s->after_keys.size() == 2);
    CHECK(s->key == s->after_keys[0]);
    CHECK(rep.sites_compiled == 2);
  }

  TEST_CASE("a line the compiled run also runs eagerly after a graph break does not pair") {
    // model.py:14: eager `add` before; after, compiled code and an eager `cat` at that line. Which
    // of them replaced `add` is a guess.
    DiffReport rep = Diff("compile_eager.json", "compile_compiled.json");
    std::vector<std::string> labels = testing::SiteLabels(rep, true);
    CHECK(Has(labels, "add \u2190 model.py:14 forward"));
    CHECK(Has(labels, "torch.compile \u2190 model.py:14 forward"));
    CHECK(Has(labels, "cat \u2190 model.py:14 forward"));
  }

  TEST_CASE("compiled code fused into another line does not pair across lines") {
    // Eager softmax at model.py:15; the compiled run allocates at :16 instead.
    DiffReport rep = Diff("compile_eager.json", "compile_compiled.json");
    std::vector<std::string> labels = testing::SiteLabels(rep, true);
    CHECK(Has(labels, "_softmax \u2190 model.py:15 forward"));
    CHECK(Has(labels, "torch.compile \u2190 model.py:16 forward"));
    CHECK(FindSiteDelta(rep, "_softmax \u2190 model.py:15 forward")->presence ==
          Presence::kOnlyBefore);
  }

  TEST_CASE("kinds and totals are the same with and without the pairing") {
    DiffOptions off;
    off.pair_compiled = false;
    DiffReport on = Diff("compile_eager.json", "compile_compiled.json");
    DiffReport no = Diff("compile_eager.json", "compile_compiled.json", off);
    CHECK(on.before_by_category == no.before_by_category);
    CHECK(on.after_by_category == no.after_by_category);
    CHECK(on.live_bytes.before == no.live_bytes.before);
    CHECK(on.live_bytes.after == no.live_bytes.after);
    CHECK(no.sites_compiled == 0);
    CHECK(Has(testing::SiteLabels(no, true), "torch.compile \u2190 model.py:12 forward"));
    CHECK(Has(testing::SiteLabels(no, true), "mul \u2190 model.py:12 forward"));
    // Σ of each side over rows is the same either way.
    auto sum = [](const DiffReport& r, bool after) {
      int64_t t = 0;
      for (const auto* l : {&r.sites, &r.other_sites}) {
        for (const SiteDelta& s : *l) t += after ? s.after_bytes : s.before_bytes;
      }
      return t;
    };
    CHECK(sum(on, false) == sum(no, false));
    CHECK(sum(on, true) == sum(no, true));
  }

  TEST_CASE("the text says which way the line changed and counts unchanged pairs") {
    DiffReport rep = Diff("compile_eager.json", "compile_compiled.json");
    std::ostringstream out;
    report::RenderDiffText(rep, 0, out);
    CHECK(out.str().find("model.py:12 forward [compiled]") != std::string::npos);
    CHECK(out.str().find("2 run eagerly in one file and compiled in the other (1 unchanged)") !=
          std::string::npos);
    DiffReport back = Diff("compile_compiled.json", "compile_eager.json");
    std::ostringstream out2;
    report::RenderDiffText(back, 0, out2);
    CHECK(out2.str().find("model.py:12 forward [eager]") != std::string::npos);
  }
}

TEST_CASE("kkaitlyn's eager and compiled forward passes pair the einsum of one line, unchanged" *
          doctest::test_suite("corpus")) {
  std::optional<std::string> dir = testing::CorpusDir();
  if (!dir) return;
  // The same model run eagerly (memory_files_..._ctx128_forward) and compiled (cs336_systems_...),
  // from two scripts: the compiled stacks record transformer.py:22 <- :77 <- :249 <- :292.
  auto eager = parse::ReadSnapshot(
      *dir + "/kkaitlyn111_a2__memory_files_memory_ctx128_forward__91995574.pickle");
  auto compiled = parse::ReadSnapshot(
      *dir + "/kkaitlyn111_a2__cs336_systems_memory_ctx128_forward__d7d40ad4.pickle");
  REQUIRE_MESSAGE(eager.ok(), std::string(eager.status().message()));
  REQUIRE_MESSAGE(compiled.ok(), std::string(compiled.status().message()));
  DiffOptions o;
  o.auto_moment = true;
  for (bool forward : {true, false}) {
    CAPTURE(forward);
    auto rep = forward ? DiffSnapshots(*eager, *compiled, o) : DiffSnapshots(*compiled, *eager, o);
    REQUIRE(rep.ok());
    const std::string label =
        forward ? "einsum \u2192 torch.compile \u2190 assignment1/cs336_basics/transformer.py:22 "
                  "forward \u2190 assignment1/cs336_basics/transformer.py:77 forward"
                : "torch.compile \u2192 einsum \u2190 assignment1/cs336_basics/transformer.py:22 "
                  "forward \u2190 assignment1/cs336_basics/transformer.py:77 forward";
    const SiteDelta* s = FindSiteDelta(*rep, label);
    REQUIRE(s != nullptr);
    CHECK(s->before_bytes == 640 * kMiB);
    CHECK(s->delta_bytes() == 0);
    CHECK(s->delta_count() == 0);
    CHECK(rep->sites_compiled == 12);
    // The softmax's exp (:138) has no compiled allocation at its line: it stays gone (or new).
    bool exp_alone = false;
    for (const SiteDelta& d : rep->sites) {
      if (d.site.starts_with("exp \u2190 assignment1/cs336_basics/transformer.py:138 softmax")) {
        exp_alone = d.presence != Presence::kBoth;
      }
    }
    CHECK(exp_alone);
  }
}

TEST_SUITE("attribution") {
  TEST_CASE("a compiled site counts the callers torch.compile recorded for its code") {
    Snapshot snap = testing::LoadFixture("compile_compiled.json");
    Attribution attr(snap, nullptr);
    const SiteInfo& s = attr.Site(snap.blocks[0].stack);
    CHECK(s.what == kCompiledWhat);
    CHECK(s.owner == "model.py:11 forward");
    // model.py:11 is the traced frame; model.py:10 is the real frame dynamo entered.
    CHECK(s.traced_callers == 0);
    CHECK(s.callers == std::vector<std::string>{"model.py:10 forward", "train.py:6 train",
                                                "train.py:9 <module>"});
  }
}

}  // namespace
}  // namespace memsnap::analysis
