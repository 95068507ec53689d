// leaks, series mode, pairs a site whose lines moved between two consecutive snapshots with itself
// (an edit of the script between runs), so its history is one row: include/memsnap/analysis/
// leaks.h (AnalyzeSeries) and moved_sites.h (the rule diff uses too).
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "attribution_builders.h"
#include "doctest/doctest.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/parse/reader.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::F;
using testing::kMiB;
using testing::MiniTrace;

using testing::Op;
using testing::Py;

// A forward pass: linear at model.py:LINE, called from train.py:5.
std::vector<F> Linear(int64_t line, const std::string& fn = "forward") {
  return {Op("linear"), Py("model.py", line, fn), Py("train.py", 5, "train")};
}

/// A snapshot whose end state holds one live allocation of `mib` MiB per (stack, mib).
Snapshot Live(const std::vector<std::pair<std::vector<F>, int64_t>>& allocations) {
  MiniTrace t;
  uint64_t addr = 0x10000000;
  for (const auto& [frames, mib] : allocations) {
    t.Ghost(addr, mib * kMiB, t.Stack(frames));
    addr += 0x10000000;
  }
  return t.Finish();
}

template <class... S>
std::vector<Snapshot> Snaps(S&&... snaps) {
  std::vector<Snapshot> out;
  (out.push_back(std::forward<S>(snaps)), ...);
  return out;
}

LeakReport Series(const std::vector<Snapshot>& snaps, LeakOptions options = {}) {
  options.min_growth = 0;  // list every site that changed
  std::vector<SeriesPoint> points;
  for (const Snapshot& s : snaps) {
    auto p = SeriesPointOf(s, options);
    REQUIRE(p.ok());
    points.push_back(std::move(*p));
  }
  return AnalyzeSeries(std::move(points), options);
}

std::vector<int64_t> MiBs(std::initializer_list<int64_t> v) {
  std::vector<int64_t> out;
  for (int64_t x : v) out.push_back(x * kMiB);
  return out;
}

const LeakSite* Find(const LeakReport& r, std::string_view label) {
  for (const LeakSite& s : r.sites) {
    if (s.site == label) return &s;
  }
  return nullptr;
}

std::vector<std::string> Labels(const LeakReport& r) {
  std::vector<std::string> out;
  for (const LeakSite& s : r.sites) out.push_back(s.site);
  return out;
}

TEST_SUITE("leaks") {
  TEST_CASE("a site whose line moved between snapshots is one growing row that shows the move") {
    const std::vector<F> embed = Linear(40, "embed");
    LeakReport r =
        Series(Snaps(Live({{Linear(118), 1}, {embed, 8}}), Live({{Linear(120), 2}, {embed, 8}}),
                     Live({{Linear(120), 3}, {embed, 8}})));
    const LeakSite* s = Find(r, "linear \u2190 model.py:118\u2192120 forward");
    REQUIRE(s != nullptr);
    CHECK(s->bytes == MiBs({1, 2, 3}));
    CHECK(s->verdict == Verdict::kGrowing);
    CHECK(s->leak);
    CHECK(s->key.find("model.py:120:forward") != std::string::npos);
    REQUIRE(s->earlier_keys.size() == 1);
    CHECK(s->earlier_keys[0].find("model.py:118:forward") != std::string::npos);
    CHECK(s->moved == std::vector<std::string>{"model.py:118\u2192120"});
    CHECK(r.num_leaks == 1);
    CHECK(r.sites_total == 2);  // the moved linear and the embedding
    CHECK(r.sites_moved == 1);
    REQUIRE(r.moves.size() == 1);
    CHECK(r.moves[0].from == 0);
    CHECK(r.moves[0].sites == 1);
    CHECK(r.moves[0].moves == std::vector<std::string>{"model.py:118\u2192120"});
  }

  TEST_CASE("--exact-lines (pair_moved off) splits the moved site into a gone row and a new one") {
    LeakOptions exact;
    exact.pair_moved = false;
    LeakReport r = Series(
        Snaps(Live({{Linear(118), 1}}), Live({{Linear(120), 2}}), Live({{Linear(120), 3}})), exact);
    CHECK(Labels(r) == std::vector<std::string>{"linear \u2190 model.py:120 forward",
                                                "linear \u2190 model.py:118 forward"});
    CHECK(r.sites[0].bytes == MiBs({0, 2, 3}));
    CHECK(r.sites[1].bytes == MiBs({1, 0, 0}));
    CHECK(r.sites[1].verdict == Verdict::kShrinking);
    CHECK(r.sites_moved == 0);
    CHECK(r.moves.empty());
  }

  TEST_CASE("a line that moves again is still one row, labelled from its first line to its last") {
    LeakReport r =
        Series(Snaps(Live({{Linear(118), 1}}), Live({{Linear(120), 2}}), Live({{Linear(125), 3}})));
    REQUIRE(r.sites.size() == 1);
    const LeakSite& s = r.sites[0];
    CHECK(s.site == "linear \u2190 model.py:118\u2192125 forward");
    CHECK(s.bytes == MiBs({1, 2, 3}));
    CHECK(s.earlier_keys.size() == 2);
    CHECK(s.moved == std::vector<std::string>{"model.py:118\u2192125"});
    REQUIRE(r.moves.size() == 2);
    CHECK(r.moves[0].moves == std::vector<std::string>{"model.py:118\u2192120"});
    CHECK(r.moves[1].from == 1);
    CHECK(r.moves[1].moves == std::vector<std::string>{"model.py:120\u2192125"});
  }

  TEST_CASE("two moved candidates of one function stay apart: leaks does not guess") {
    LeakReport r = Series(Snaps(Live({{Linear(118), 1}, {Linear(125), 1}}),
                                Live({{Linear(120), 2}, {Linear(127), 2}}),
                                Live({{Linear(120), 3}, {Linear(127), 3}})));
    CHECK(r.sites_total == 4);
    CHECK(r.sites_moved == 0);
  }

  TEST_CASE("a key the series met before keeps its site, and no site takes two rows of a point") {
    // 118 moved to 120, then a new call came back at 118 beside it.
    std::vector<Snapshot> snaps;
    snaps.push_back(Live({{Linear(118), 1}}));
    snaps.push_back(Live({{Linear(120), 2}}));
    snaps.push_back(Live({{Linear(120), 3}, {Linear(118), 5}}));
    LeakReport r = Series(snaps);
    CHECK(r.sites_total == 2);
    for (size_t i = 0; i < 3; ++i) {
      int64_t bytes = 0;
      for (const LeakSite& s : r.sites) {
        CHECK(s.counts[i] <= 1);
        bytes += s.bytes[i];
      }
      CHECK(bytes == r.live_bytes[i]);
    }
  }

  TEST_CASE("a site whose line moved back is one row that shows no move") {
    LeakReport r =
        Series(Snaps(Live({{Linear(118), 1}}), Live({{Linear(120), 2}}), Live({{Linear(118), 3}})));
    REQUIRE(r.sites.size() == 1);
    CHECK(r.sites[0].site == "linear \u2190 model.py:118 forward");
    CHECK(r.sites[0].bytes == MiBs({1, 2, 3}));
    CHECK(r.sites[0].moved.empty());
    CHECK(r.sites[0].earlier_keys.size() == 1);
    CHECK(r.moves.size() == 1);  // back at a key the series met before: matched by key
  }

  TEST_CASE("only site rows pair: --by stack keeps a moved stack apart") {
    LeakOptions by_stack;
    by_stack.group.by = GroupBy::kStack;
    LeakReport r =
        Series(Snaps(Live({{Linear(118), 1}}), Live({{Linear(120), 2}}), Live({{Linear(120), 3}})),
               by_stack);
    CHECK(r.sites_total == 2);
    CHECK(r.sites_moved == 0);
  }
}

TEST_CASE("the kkaitlyn forward series across a script edit shows each site's real growth" *
          doctest::test_suite("corpus")) {
  std::optional<std::string> dir = testing::CorpusDir();
  if (!dir) return;
  // ctx128, ctx256 and ctx512 forward passes; benchmark.py:222 became :223 after the first run.
  std::vector<SeriesPoint> exact_points, points;
  LeakOptions options, exact;
  exact.pair_moved = false;
  for (const char* name :
       {"kkaitlyn111_a2__memory_files_memory_ctx128_forward__91995574.pickle",
        "kkaitlyn111_a2__memory_files_memory_ctx256_forward___019e70b3.pickle",
        "kkaitlyn111_a2__memory_files_memory_ctx512_forward___b9620ccc.pickle"}) {
    auto snap = parse::ReadSnapshot(*dir + "/" + name);
    REQUIRE_MESSAGE(snap.ok(), std::string(snap.status().message()));
    auto p = SeriesPointOf(*snap, options);
    auto e = SeriesPointOf(*snap, exact);
    REQUIRE(p.ok());
    REQUIRE(e.ok());
    points.push_back(std::move(*p));
    exact_points.push_back(std::move(*e));
  }
  // The softmax's division, an attention-score-sized activation.
  auto softmax_div = [](const LeakReport& r) {
    std::vector<const LeakSite*> out;
    for (const LeakSite& s : r.sites) {
      if (s.site.rfind("div \u2190 assignment1/cs336_basics/transformer.py:142 softmax", 0) == 0)
        out.push_back(&s);
    }
    return out;
  };
  const LeakReport r = AnalyzeSeries(std::move(points), options);
  const LeakReport split = AnalyzeSeries(std::move(exact_points), exact);
  // Without pairing: a false "0 B -> 1.0 GiB -> 4.0 GiB" leak and its vanished twin.
  std::vector<const LeakSite*> before = softmax_div(split);
  REQUIRE(before.size() == 2);
  CHECK(before[0]->bytes.front() == 0);
  // Paired: one row whose growth is the real one, quadratic in the context length.
  std::vector<const LeakSite*> after = softmax_div(r);
  REQUIRE(after.size() == 1);
  const LeakSite& s = *after[0];
  CHECK(s.bytes == std::vector<int64_t>{256 * kMiB, 1024 * kMiB, 4096 * kMiB});
  CHECK(s.leak);
  CHECK(s.info.callers.size() > 0);
  CHECK(std::find(s.moved.begin(), s.moved.end(),
                  "assignment2/cs336-a2-systems/cs336_systems/benchmark.py:222\u2192223") !=
        s.moved.end());
  for (const LeakSite& site : r.sites) {
    INFO(site.site);
    CHECK(site.bytes.front() > 0);  // no site appears from nothing: each ran in all three runs
  }
  CHECK(r.sites_total == 35);
  CHECK(r.sites_moved == 34);
  CHECK(split.sites_total == 69);
}

}  // namespace
}  // namespace memsnap::analysis
