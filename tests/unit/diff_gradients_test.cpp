// diff matches the gradients of the same parameters made by other autograd nodes, and folds the
// rows that cancel within one kind (include/memsnap/analysis/sites/diff.h,
// MatchGradientsByParameter and FoldCancellingRows).
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "memsnap/analysis/sites/diff.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::kMiB;

// A row present on one side only (`after` says which), of one category.
SiteDelta Row(const std::string& key, bool after, int64_t bytes, Category c,
              std::vector<std::string> forward_lines = {}) {
  SiteDelta s;
  s.key = key;
  s.site = key;
  s.info.key = key;
  s.info.owner = key;
  s.info.phase = Phase::kBackward;
  s.info.kind = SiteKind::kBackward;
  s.info.forward_lines = std::move(forward_lines);
  s.presence = after ? Presence::kOnlyAfter : Presence::kOnlyBefore;
  (after ? s.after_bytes : s.before_bytes) = bytes;
  (after ? s.after_count : s.before_count) = 1;
  (after ? s.after_categories : s.before_categories)[static_cast<int>(c)] = bytes;
  return s;
}

TEST_CASE("gradients of the same forward lines made by another node are one row") {
  std::vector<SiteDelta> rows = {
      Row("mm", false, 32 * kMiB, Category::kGradient, {"net.py:15 forward", "net.py:16 forward"}),
      Row("tocopy", true, 32 * kMiB, Category::kGradient,
          {"net.py:15 forward", "net.py:16 forward", "net.py:17 forward"}),
      Row("other", true, 4 * kMiB, Category::kGradient, {"net.py:40 forward"}),
  };
  MatchGradientsByParameter(rows);
  REQUIRE(rows.size() == 2);
  const SiteDelta& m = rows[1];  // filed under after's key, "tocopy"
  CHECK(m.key == "tocopy");
  CHECK(m.by_parameter);
  CHECK(m.presence == Presence::kBoth);
  CHECK(m.delta_bytes() == 0);
  CHECK(m.before_keys == std::vector<std::string>{"mm"});
  CHECK(m.after_keys == std::vector<std::string>{"tocopy"});
  CHECK(m.info.owner == "mm \u2192 tocopy");
  CHECK(m.info.forward_lines == std::vector<std::string>{"net.py:15 forward", "net.py:16 forward"});
  CHECK(rows[0].key == "other");  // its lines meet no row of the other side
  CHECK(!rows[0].by_parameter);
}

// A row present in both files: `before` and `after` bytes.
SiteDelta Both(const std::string& key, int64_t before, int64_t after,
               std::vector<std::string> forward_lines) {
  SiteDelta s = Row(key, true, after, Category::kGradient, std::move(forward_lines));
  s.presence = Presence::kBoth;
  s.before_bytes = before;
  s.before_count = 1;
  s.before_categories[static_cast<int>(Category::kGradient)] = before;
  return s;
}

TEST_CASE("a node of both files whose gradients another node took over joins that node's row") {
  const std::vector<std::string> lines = {"net.py:15 forward", "net.py:16 forward"};
  std::vector<SiteDelta> rows = {
      Both("bmm", 32 * kMiB, 1 * kMiB, lines),
      Row("tocopy", true, 32 * kMiB, Category::kGradient, lines),
  };
  MatchGradientsByParameter(rows);
  REQUIRE(rows.size() == 1);
  const SiteDelta& m = rows[0];
  CHECK(m.by_parameter);
  CHECK(m.presence == Presence::kBoth);
  CHECK(m.before_bytes == 32 * kMiB);
  CHECK(m.after_bytes == 33 * kMiB);
  CHECK(m.before_keys == std::vector<std::string>{"bmm"});
  CHECK(m.after_keys == std::vector<std::string>{"bmm", "tocopy"});
  CHECK(m.info.owner == "bmm \u2192 bmm, tocopy");
  CHECK(m.info.forward_lines == lines);
}

TEST_CASE("nodes of both files are joined only through a node that appeared or went") {
  std::vector<SiteDelta> rows = {
      // Unchanged, or changed the same way as the new node: nothing moved to the new node.
      Both("addmm", 8 * kMiB, 8 * kMiB, {"net.py:15 forward"}),
      Both("grew", 4 * kMiB, 6 * kMiB, {"net.py:15 forward"}),
      // Both files, lines meeting each other only: two nodes that each kept their gradients.
      Both("x", 8 * kMiB, 4 * kMiB, {"net.py:40 forward"}),
      Both("y", 4 * kMiB, 8 * kMiB, {"net.py:40 forward"}),
      Row("tocopy", true, 16 * kMiB, Category::kGradient, {"net.py:15 forward"}),
  };
  MatchGradientsByParameter(rows);
  CHECK(rows.size() == 5);
  for (const SiteDelta& r : rows) CHECK(!r.by_parameter);
}

TEST_CASE("gradients whose forward lines differ, or activations, are not matched by parameter") {
  std::vector<SiteDelta> rows = {
      Row("a", false, 8 * kMiB, Category::kGradient, {"net.py:15 forward"}),
      Row("b", true, 8 * kMiB, Category::kGradient, {"net.py:16 forward"}),
      Row("c", false, 8 * kMiB, Category::kActivation, {"net.py:20 forward"}),
      Row("d", true, 8 * kMiB, Category::kActivation, {"net.py:20 forward"}),
  };
  MatchGradientsByParameter(rows);
  CHECK(rows.size() == 4);
}

TEST_CASE("rows of one kind whose bytes gone equal the bytes new are folded, with their count") {
  std::vector<SiteDelta> rows = {
      Row("acc", false, 2 * kMiB, Category::kGradient),
      Row("sum1", true, 1 * kMiB, Category::kGradient),
      Row("sum2", true, 1 * kMiB, Category::kGradient),
      Row("act", true, 1 * kMiB, Category::kActivation),  // another kind: a real change
  };
  std::vector<SiteDelta> folded;
  std::vector<FoldedRows> f = FoldCancellingRows(rows, folded);
  REQUIRE(f.size() == 1);
  CHECK(f[0].category == Category::kGradient);
  CHECK(f[0].rows == 3);
  CHECK(f[0].bytes == 2 * kMiB);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].key == "act");
  REQUIRE(folded.size() == 3);
  for (const SiteDelta& s : folded) CHECK(s.folded);
}

TEST_CASE("when a kind does not cancel as a whole, only rows of exactly opposite size fold") {
  std::vector<SiteDelta> rows = {
      Row("gone8", false, 8 * kMiB, Category::kActivation),
      Row("gone3", false, 3 * kMiB, Category::kActivation),
      Row("new8", true, 8 * kMiB, Category::kActivation),
      Row("new5", true, 5 * kMiB, Category::kActivation),
  };
  std::vector<SiteDelta> folded;
  std::vector<FoldedRows> f = FoldCancellingRows(rows, folded);
  REQUIRE(f.size() == 1);
  CHECK(f[0].rows == 2);
  CHECK(f[0].bytes == 8 * kMiB);
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].key == "gone3");
  CHECK(rows[1].key == "new5");
}

TEST_CASE("rows of the user's lines are never folded, even when their bytes cancel") {
  SiteDelta gone = Row("net.py:17", false, 1 * kMiB, Category::kActivation);
  SiteDelta added = Row("net.py:19", true, 1 * kMiB, Category::kActivation);
  gone.info.kind = added.info.kind = SiteKind::kPython;
  std::vector<SiteDelta> rows = {gone, added};
  std::vector<SiteDelta> folded;
  CHECK(FoldCancellingRows(rows, folded).empty());
  CHECK(rows.size() == 2);
}

TEST_CASE("a site on both sides is never folded, however its change compares") {
  SiteDelta both = Row("both", true, 4 * kMiB, Category::kGradient);
  both.presence = Presence::kBoth;
  both.before_bytes = 8 * kMiB;
  both.before_categories[static_cast<int>(Category::kGradient)] = 8 * kMiB;
  std::vector<SiteDelta> rows = {both, Row("new", true, 4 * kMiB, Category::kGradient)};
  std::vector<SiteDelta> folded;
  CHECK(FoldCancellingRows(rows, folded).empty());
  CHECK(rows.size() == 2);
}

}  // namespace
}  // namespace memsnap::analysis
