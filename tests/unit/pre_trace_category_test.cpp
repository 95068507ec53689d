// Memory from before the trace split by what the trace shows of it (docs/attribution.md, "Blocks
// from before the trace"): the rules pre_trace_gradient and pre_trace_optimizer_state on
// testdata/pre_trace_fixture.py's known answers.
#include <map>
#include <string>

#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/blocks.h"
#include "memsnap/analysis/sites/group.h"
#include "test_util.h"

namespace memsnap::analysis::pre_trace_test {
namespace {

// testdata/pre_trace_fixture.py's trace of one kind.
Snapshot PreTraceFixture(const std::string& kind) {
  const std::string json = testing::RunPython("sys.path.insert(0, '" MEMSNAP_SOURCE_DIR
                                              "/testdata')\n"
                                              "import pre_trace_fixture\n"
                                              "pre_trace_fixture.write('/dev/stdout', kind='" +
                                              kind + "')\n");
  return testing::ParseOrFail(json, kind + ".json");
}

// Every lifetime's (rule, site) of the blocks live at the end, with their count and bytes.
struct RuleTotals {
  int64_t count = 0;
  int64_t bytes = 0;
  std::string site;
};
std::map<std::string, RuleTotals> ByRule(const Snapshot& snap, bool all = false) {
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  BlockQuery q;
  q.all = all;
  q.at.kind = Moment::Kind::kEnd;
  auto rep = SelectBlocks(snap, *tl, q);
  REQUIRE(rep.ok());
  std::map<std::string, RuleTotals> out;
  for (const BlockRow& r : rep->rows) {
    RuleTotals& t = out[std::string(CategoryRuleName(r.category.rule))];
    ++t.count;
    t.bytes += r.lifetime.requested_size;
    if (t.site.empty()) t.site = r.site;
    if (r.site.starts_with("[")) CHECK(t.site == r.site);  // one bracketed row per rule
  }
  return out;
}

using testing::kMiB;

TEST_SUITE("attribution-pre-trace") {
  TEST_CASE(
      "an AdamW step that reads gradients the trace never made finds them among the blocks from "
      "before it, as many bytes as the parameters it updates") {
    const Snapshot snap = PreTraceFixture("first_step");
    auto rules = ByRule(snap);
    CHECK(rules["pre_trace_gradient"].count == 7);
    CHECK(rules["pre_trace_gradient"].bytes == 13 * kMiB);
    CHECK(rules["pre_trace_gradient"].site ==
          "[allocated before recording started: gradients the optimizer step reads]");
    // The weights and the mask, which has no gradient (the step made no state of its size for
    // it: three blocks of 512 KiB, two gradients).
    CHECK(rules["pre_trace_persistent"].count == 8);
    CHECK(rules["pre_trace_persistent"].bytes == 13 * kMiB + kMiB / 2);
    CHECK(rules["pre_trace_persistent"].site == "[allocated before recording started]");
    // exp_avg and exp_avg_sq, made by the step, and the denominator the update holds at the
    // dump (alive at the end of a run that lasts to the end: optimizer_kept says state too).
    CHECK(rules["optimizer_kept"].count == 15);
    CHECK(rules["pre_trace_optimizer_state"].count == 0);
  }

  TEST_CASE("a trace whose backward makes the gradients leaves the blocks before it parameters") {
    const Snapshot snap = PreTraceFixture("backward");
    auto rules = ByRule(snap);
    CHECK(rules["pre_trace_persistent"].count == 8);
    CHECK(rules["pre_trace_persistent"].bytes == 13 * kMiB + kMiB / 2);
    CHECK(rules.count("pre_trace_gradient") == 0);
    CHECK(rules.count("pre_trace_optimizer_state") == 0);
    CHECK(rules["accumulate_grad"].count == 7);
  }

  TEST_CASE(
      "a step that makes no state of its own finds Adam's two states per parameter among the "
      "blocks from before the trace, and last step's gradients freed without zero_grad stay "
      "unknown") {
    const Snapshot snap = PreTraceFixture("later_step");
    auto rules = ByRule(snap, /*all=*/true);
    CHECK(rules["pre_trace_optimizer_state"].count == 14);
    CHECK(rules["pre_trace_optimizer_state"].bytes == 26 * kMiB);
    CHECK(rules["pre_trace_optimizer_state"].site ==
          "[allocated before recording started: optimizer state from an earlier step]");
    CHECK(rules["pre_trace_persistent"].count == 8);
    CHECK(rules.count("pre_trace_gradient") == 0);  // the backward made this step's
    // Freed by `p.grad = None` in the loop: nothing in their free says what they were, and the
    // gradients made after it are not read (a slice ending before them could not).
    CHECK(rules["no_evidence"].count == 7);
    CHECK(rules["no_evidence"].site == "[allocated before the trace]");
  }

  TEST_CASE("the split rows of memory before the trace are rows of their own in every grouping") {
    const Snapshot snap = PreTraceFixture("first_step");
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    for (const GroupBy by : {GroupBy::kSite, GroupBy::kStack, GroupBy::kFunction, GroupBy::kFile,
                             GroupBy::kModule, GroupBy::kCategory}) {
      CAPTURE(GroupByName(by));
      GroupOptions o;
      o.by = by;
      auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kEnd, 0}, o);
      REQUIRE(rep.ok());
      int64_t total = 0;
      std::map<std::string, int64_t> bytes;
      for (const GroupRow& r : rep->rows) {
        int64_t sum = 0;
        for (int64_t b : r.category_bytes) sum += b;
        CHECK(sum == r.bytes);  // each row's categories add up
        total += r.bytes;
        bytes[r.site] += r.bytes;
      }
      CHECK(total == rep->total_bytes);
      if (by == GroupBy::kCategory) {
        CHECK(bytes["gradient"] == 13 * kMiB);
        CHECK(bytes["parameter"] == 13 * kMiB + kMiB / 2);
      } else {
        CHECK(bytes["[allocated before recording started: gradients the optimizer step reads]"] ==
              13 * kMiB);
        CHECK(bytes["[allocated before recording started]"] == 13 * kMiB + kMiB / 2);
      }
    }
  }
}

}  // namespace
}  // namespace memsnap::analysis::pre_trace_test
