// How a table shows a site over several lines (docs/attribution.md, "Distinct labels"): the row
// holds the operator, the user's frame and the nearest caller when it tells rows apart; the other
// callers follow in stack order, each once, the one that tells the row apart marked. And how rows
// without frames are named (NoStackRow).
#include <sstream>
#include <string>
#include <vector>

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/report/site_render.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::MiniTrace;

// Three einsums of one function: two called from transformer.py:76 by run() at different lines,
// one from transformer.py:77.
SiteInfo Einsum(std::string key, std::vector<std::string> callers) {
  SiteInfo s;
  s.kind = SiteKind::kPython;
  // Moved in, not assigned from literals: GCC 12 reports a false -Wrestrict (an error in CI)
  // on a short literal assigned to a default-constructed member string.
  s.key = std::move(key);
  s.what = std::string("einsum");
  s.owner = std::string("transformer.py:22 forward");
  s.callers = std::move(callers);
  return s;
}

struct ThreeEinsums {
  SiteInfo a = Einsum("a", {"transformer.py:76 forward", "transformer.py:249 forward",
                            "transformer.py:292 forward", "benchmark.py:222 run"});
  SiteInfo b = Einsum("b", {"transformer.py:76 forward", "transformer.py:249 forward",
                            "transformer.py:292 forward", "benchmark.py:224 run"});
  SiteInfo c = Einsum("c", {"transformer.py:77 forward", "transformer.py:249 forward",
                            "transformer.py:292 forward", "benchmark.py:224 run"});
};

TEST_SUITE("attribution") {
  TEST_CASE("a deep caller that tells rows apart stays out of the row and is marked below it") {
    ThreeEinsums t;
    std::vector<SiteLabel> labels = DistinctSiteLabels({&t.a, &t.b, &t.c});
    const std::string row =
        "einsum \u2190 transformer.py:22 forward \u2190 transformer.py:76 forward";
    CHECK(labels[0].head == row);
    CHECK(labels[1].head == row);
    CHECK(labels[2].head ==
          "einsum \u2190 transformer.py:22 forward \u2190 transformer.py:77 forward");
    // One line (JSON, CSV): in stack order, with the frames left out marked.
    CHECK(labels[0].text == row + " \u2190 \u2026 \u2190 benchmark.py:222 run");
    CHECK(labels[2].text == labels[2].head);
    CHECK(labels[0].deep == std::vector<size_t>{3});
    CHECK(labels[2].deep.empty());

    size_t more = 0;
    std::vector<CallerLine> lines = CallerLines(t.a, labels[0], 1, &more);
    REQUIRE(lines.size() == 3);  // through the deep caller, though 1 was asked for
    CHECK(lines[0].text == "transformer.py:249 forward");
    CHECK(lines[1].text == "transformer.py:292 forward");
    CHECK(lines[2].text == "benchmark.py:222 run");
    CHECK((!lines[0].tells && !lines[1].tells && lines[2].tells));
    CHECK(more == 0);
    lines = CallerLines(t.c, labels[2], 1, &more);
    REQUIRE(lines.size() == 1);
    CHECK(lines[0].text == "transformer.py:249 forward");
    CHECK(more == 2);
  }

  TEST_CASE("callers under a row use the label's arrow, each once, in stack order") {
    ThreeEinsums t;
    std::vector<SiteLabel> labels = DistinctSiteLabels({&t.a, &t.b, &t.c});
    std::ostringstream out;
    CHECK(report::RenderCallerLines(t.a, labels[0], 2, "  ", true, out));
    CHECK(out.str() ==
          "  \u2190 transformer.py:249 forward\n"
          "  \u2190 transformer.py:292 forward\n"
          "  \u2190 benchmark.py:222 run  [differs]\n");
    std::ostringstream other;
    CHECK_FALSE(report::RenderCallerLines(t.c, labels[2], 1, "  ", true, other));
    CHECK(other.str() ==
          "  \u2190 transformer.py:249 forward\n"
          "  \u2190 \u2026 2 more frames\n");
  }

  TEST_CASE("rows without frames say whether the block is older than the recording") {
    MiniTrace t;
    StackId user = t.Stack({F{"forward", "/home/me/model.py", 10}});
    t.Alloc(0x1000, 1 << 20, user);
    t.Alloc(0x200000, 1 << 20, StackId());  // recorded, no frames (the engine's thread)
    t.Ghost(0x400000, 1 << 20);             // live, never in the trace, no frames of its own
    Snapshot snap = t.Finish();
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kEnd, 0}, GroupOptions{});
    REQUIRE(rep.ok());
    std::vector<std::string> sites;
    for (const GroupRow& r : rep->rows) sites.push_back(r.site);
    std::sort(sites.begin(), sites.end());
    std::string all;
    for (const std::string& site : sites) all += site + "; ";
    INFO(all);
    CHECK(sites == std::vector<std::string>{std::string(kBeforeRecordingRow),
                                            std::string(kTracedNoStackRow), "model.py:10 forward"});
  }

  TEST_CASE("a block without frames in a file without a trace is only 'no stack recorded'") {
    MiniTrace t;
    t.Ghost(0x400000, 1 << 20);
    Snapshot snap = t.Finish();
    auto tl = ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    auto rep = GroupLive(snap, *tl, Moment{Moment::Kind::kEnd, 0}, GroupOptions{});
    REQUIRE(rep.ok());
    REQUIRE(rep->rows.size() == 1);
    CHECK(rep->rows[0].site == kNoStackRow);
  }
}

}  // namespace
}  // namespace memsnap::analysis
