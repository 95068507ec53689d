// diff pairs a site whose lines moved (an edit above it) with itself: one row showing both lines,
// never a guess between two candidates (include/memsnap/analysis/sites/diff.h, MatchSites).
#include <string>
#include <vector>

#include "attribution_builders.h"
#include "diff_rows.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/sites/diff.h"
#include "memsnap/report/diff_render.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

using testing::Op;
using testing::Py;

/// One live allocation per stack (1 MiB, 2 MiB, ...), never freed: the end state holds them all.
Snapshot Live(const std::vector<std::vector<F>>& stacks) {
  MiniTrace t;
  uint64_t addr = 0x10000000;
  int64_t size = 1 << 20;
  for (const std::vector<F>& frames : stacks) {
    t.Ghost(addr, size, t.Stack(frames));
    addr += 0x1000000;
    size += 1 << 20;
  }
  return t.Finish();
}

DiffReport Diff(const Snapshot& before, const Snapshot& after, DiffOptions o = {}) {
  auto rep = DiffSnapshots(before, after, o);
  REQUIRE(rep.ok());
  return *rep;
}

using testing::FindSiteDelta;

// A forward pass: linear at model.py:LINE, called from train.py:TRAIN_LINE.
std::vector<F> Linear(int64_t line, int64_t train_line = 5, const std::string& fn = "forward") {
  return {Op("linear"), Py("model.py", line, fn), Py("train.py", train_line, "train")};
}

TEST_SUITE("diff") {
  TEST_CASE("a site whose line moved is one row that shows both lines and the change") {
    Snapshot before = Live({Linear(118), Linear(40, 5, "embed")});
    Snapshot after = Live({Linear(40, 5, "embed"), Linear(120)});  // now 2 MiB, embed 1 MiB
    DiffReport rep = Diff(before, after);
    const SiteDelta* s = FindSiteDelta(rep, "linear \u2190 model.py:118\u2192120 forward");
    REQUIRE(s != nullptr);
    CHECK(s->presence == Presence::kBoth);
    CHECK(s->before_bytes == 1 << 20);
    CHECK(s->after_bytes == 2 << 20);
    CHECK(s->before_key.find("model.py:118:forward") != std::string::npos);
    CHECK(s->key.find("model.py:120:forward") != std::string::npos);
    CHECK(s->moved == std::vector<std::string>{"model.py:118\u2192120"});
    CHECK(rep.sites_moved == 1);
    CHECK(rep.sites_only_before == 0);
    CHECK(rep.sites_only_after == 0);
  }

  TEST_CASE("without pairing, the moved site is one site gone and one new") {
    Snapshot before = Live({Linear(118)});
    Snapshot after = Live({Linear(120)});
    DiffOptions o;
    o.pair_moved = false;
    DiffReport rep = Diff(before, after, o);
    CHECK(rep.sites_only_before == 1);
    CHECK(rep.sites_only_after == 1);
    CHECK(rep.sites_moved == 0);
    CHECK(testing::SiteLabels(rep, false) ==
          std::vector<std::string>{"linear \u2190 model.py:120 forward",
                                   "linear \u2190 model.py:118 forward"});
  }

  TEST_CASE("two candidates on a side stay unpaired: diff does not guess") {
    // Two linears in one forward, both moved down by two lines.
    Snapshot before = Live({Linear(118), Linear(125)});
    Snapshot after = Live({Linear(120), Linear(127)});
    DiffReport rep = Diff(before, after);
    CHECK(rep.sites_moved == 0);
    CHECK(rep.sites_only_before == 2);
    CHECK(rep.sites_only_after == 2);
  }

  TEST_CASE("a site still matched by key is not a candidate, so its moved twin pairs") {
    // Line 125 did not move (the edit was below it); 118 moved to 120.
    Snapshot before = Live({Linear(118), Linear(125)});
    Snapshot after = Live({Linear(120), Linear(125)});
    DiffReport rep = Diff(before, after);
    CHECK(rep.sites_moved == 1);
    CHECK(rep.sites_only_before == 0);
    CHECK(rep.sites_only_after == 0);
  }

  TEST_CASE("sites of another function, operator or caller are never paired") {
    Snapshot before = Live({Linear(118)});
    SUBCASE("another function") {
      DiffReport rep = Diff(before, Live({Linear(120, 5, "decode")}));
      CHECK(rep.sites_moved == 0);
    }
    SUBCASE("another operator") {
      DiffReport rep =
          Diff(before,
               Live({{Op("matmul"), Py("model.py", 120, "forward"), Py("train.py", 5, "train")}}));
      CHECK(rep.sites_moved == 0);
    }
    SUBCASE("another caller") {
      DiffReport rep = Diff(
          before,
          Live({{Op("linear"), Py("model.py", 120, "forward"), Py("train.py", 5, "evaluate")}}));
      CHECK(rep.sites_moved == 0);
    }
  }

  TEST_CASE("a caller whose line moved pairs the site, and the text says which line moved") {
    Snapshot before = Live({Linear(118, 5)});
    Snapshot after = Live({Linear(40, 5, "embed"), Linear(118, 9)});  // linear: 2 MiB now
    DiffReport rep = Diff(before, after);
    const SiteDelta* s = FindSiteDelta(rep, "linear \u2190 model.py:118 forward");
    REQUIRE(s != nullptr);
    CHECK(s->moved == std::vector<std::string>{"train.py:5\u21929"});
    CHECK(s->info.callers == std::vector<std::string>{"train.py:5\u21929 train"});
    std::ostringstream text;
    report::RenderDiffText(rep, 0, text);
    INFO(text.str());
    // The caller line under the row shows the move, so the row needs no [moved: ...] tag.
    CHECK(text.str().find("\u2190 train.py:5\u21929 train\n") != std::string::npos);
    CHECK(text.str().find("[moved:") == std::string::npos);
    CHECK(text.str().find("1 paired across moved lines") != std::string::npos);
  }

  TEST_CASE("sites told apart by an unmoved line pair when only the lines outside them moved") {
    // Two einsums of attn(), called from forward() lines 17 and 18 (unchanged); the script
    // calling forward() moved its call from train.py:5 to :7 (an autocast block wrapped it).
    auto einsum = [](int64_t forward_line, int64_t train_line) {
      return std::vector<F>{Op("einsum"), Py("model.py", 30, "attn"),
                            Py("model.py", forward_line, "forward"),
                            Py("train.py", train_line, "train")};
    };
    DiffReport rep =
        Diff(Live({einsum(17, 5), einsum(18, 5)}), Live({einsum(17, 7), einsum(18, 7)}));
    CHECK(rep.sites_moved == 2);
    CHECK(rep.sites_only_before == 0);
    CHECK(rep.sites_only_after == 0);
    const SiteDelta* s =
        FindSiteDelta(rep, "einsum \u2190 model.py:30 attn \u2190 model.py:18 forward");
    REQUIRE(s != nullptr);
    CHECK(s->before_bytes == 2 << 20);
    CHECK(s->moved == std::vector<std::string>{"train.py:5\u21927"});
    SUBCASE("--exact-lines (pair_moved off) reports them gone and new") {
      DiffOptions o;
      o.pair_moved = false;
      DiffReport exact =
          Diff(Live({einsum(17, 5), einsum(18, 5)}), Live({einsum(17, 7), einsum(18, 7)}), o);
      CHECK(exact.sites_moved == 0);
      CHECK(exact.sites_only_before == 2);
      CHECK(exact.sites_only_after == 2);
    }
  }

  TEST_CASE("sites whose caller moved pair even where another statement took the old line") {
    // Two Adam-state zeros_like of step(), called from train.py:30; two lines added above the loss
    // (train.py:28) move the loss to :30 and the step to :32. The later file's :30 is the loss, not
    // the step: the loss's own pair shows it moved there from :28, so :30 pins nothing.
    auto state = [](int64_t optim_line, int64_t train_line) {
      return std::vector<F>{Op("zeros_like"), Py("optim.py", optim_line, "step"),
                            Py("train.py", train_line, "main")};
    };
    auto loss = [](int64_t train_line) {
      return std::vector<F>{Op("mean"), Py("loss.py", 33, "cross_entropy"),
                            Py("train.py", train_line, "main")};
    };
    Snapshot before = Live({state(82, 30), state(84, 30), loss(28)});
    Snapshot after = Live({state(82, 32), state(84, 32), loss(30)});
    DiffReport rep = Diff(before, after);
    CHECK(rep.sites_moved == 3);
    CHECK(rep.sites_only_before == 0);
    CHECK(rep.sites_only_after == 0);
    const SiteDelta* s = FindSiteDelta(rep, "zeros_like \u2190 optim.py:84 step");
    REQUIRE(s != nullptr);
    CHECK(s->before_bytes == 2 << 20);
    CHECK(s->after_bytes == 2 << 20);
    CHECK(s->moved == std::vector<std::string>{"train.py:30\u219232"});
  }

  TEST_CASE(
      "a line the other file still has, that no pair shows moved, keeps its candidates apart") {
    // One script, two code paths: the forward-only run calls the model at train.py:21, the full
    // step at :27. Line :21 is still in the later file (an embedding einsum still called from it),
    // so the logits einsum of :21 did not move to :27: diff reports one gone and one new.
    auto einsum = [](int64_t inner, int64_t outer, int64_t train_line) {
      return std::vector<F>{Op("einsum"), Py("model.py", inner, "forward"),
                            Py("model.py", outer, "forward"), Py("train.py", train_line, "main")};
    };
    Snapshot before = Live({einsum(22, 298, 21), einsum(57, 295, 21), einsum(22, 188, 21)});
    Snapshot after = Live({einsum(22, 298, 27), einsum(22, 188, 21)});
    DiffReport rep = Diff(before, after);
    CHECK(rep.sites_moved == 0);
    CHECK(rep.sites_only_before == 2);
    CHECK(rep.sites_only_after == 1);
  }

  TEST_CASE("lines that both sides' candidates have keep them apart, whatever other pairs say") {
    // Two concats of forward() lines 509 and 510, called from train.py:117 and then :142. An add of
    // forward(), the only one of each side, pairs 509 with 510: by itself that would say the later
    // 510 is the earlier 509, and swap the concats. Both sides' concats have both lines: they stay.
    auto site = [](const std::string& op, int64_t forward_line, int64_t train_line) {
      return std::vector<F>{Op(op), Py("model.py", forward_line, "forward"),
                            Py("train.py", train_line, "main")};
    };
    Snapshot before = Live({site("cat", 509, 117), site("cat", 510, 117), site("add", 509, 117)});
    Snapshot after = Live({site("cat", 509, 142), site("cat", 510, 142), site("add", 510, 142)});
    DiffReport rep = Diff(before, after);
    CHECK(rep.sites_moved == 3);
    const SiteDelta* s = FindSiteDelta(rep, "cat \u2190 model.py:510 forward");
    REQUIRE(s != nullptr);
    CHECK(s->before_bytes == 2 << 20);
    CHECK(s->after_bytes == 2 << 20);
  }

  TEST_CASE("--ignore-lines matches moved sites by key, with nothing to pair") {
    DiffOptions o;
    o.group.ignore_lines = true;
    DiffReport rep = Diff(Live({Linear(118)}), Live({Linear(120)}), o);
    CHECK(rep.sites_moved == 0);
    CHECK(rep.sites_only_before == 0);
    CHECK(rep.sites_only_after == 0);
  }
}

}  // namespace
}  // namespace memsnap::analysis
