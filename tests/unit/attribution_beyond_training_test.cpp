// The kinds of memory beyond the plain training loop (docs/attribution.md, "Rules"): a generation's
// KV cache, autocast's cached weight casts and the state the program's own objects keep, each on a
// run made for it (testdata/beyond_training_fixture.py), with the memory that must keep its old
// kind beside it.
#include <string>
#include <vector>

#include "doctest/doctest.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/blocks.h"
#include "test_util.h"

namespace memsnap::analysis::beyond_training_test {
namespace {

// Every lifetime of one run of the fixture, with its site, category and rule.
struct BeyondRow {
  std::string site;
  std::string frames;  // the allocation's stack (the free's, for one older than the trace)
  int64_t bytes = 0;
  std::string category;
  std::string rule;
};

std::vector<BeyondRow> BeyondTrainingRun(const std::string& run) {
  const std::string json = testing::RunPython("sys.path.insert(0, '" MEMSNAP_SOURCE_DIR
                                              "/testdata')\n"
                                              "import beyond_training_fixture\n"
                                              "beyond_training_fixture.write('/dev/stdout', '" +
                                              run + "')\n");
  Snapshot snap = testing::ParseOrFail(json, run + ".json");
  auto tl = ReconstructTimeline(snap);
  REQUIRE(tl.ok());
  BlockQuery q;
  q.all = true;
  auto rep = SelectBlocks(snap, *tl, q);
  REQUIRE(rep.ok());
  std::vector<BeyondRow> rows;
  for (const BlockRow& r : rep->rows) {
    std::string frames;
    if (r.stack >= 0) {
      for (const std::string& f : rep->stacks[static_cast<size_t>(r.stack)]) frames += f + "\n";
    }
    rows.push_back({r.site, frames, r.lifetime.requested_size,
                    std::string(CategoryNames().Name(r.category.category)),
                    std::string(CategoryRuleName(r.category.rule))});
  }
  return rows;
}

// The rows whose site or stack has `part`.
std::vector<BeyondRow> RowsOf(const std::vector<BeyondRow>& rows, const std::string& part) {
  std::vector<BeyondRow> out;
  for (const BeyondRow& r : rows) {
    if (r.site.find(part) != std::string::npos || r.frames.find(part) != std::string::npos) {
      out.push_back(r);
    }
  }
  return out;
}

constexpr int64_t kMiBytes = int64_t{1} << 20;

TEST_SUITE("attribution-beyond-training") {
  TEST_CASE("the keys and values DynamicCache.update concatenates are the KV cache") {
    const auto rows = BeyondTrainingRun("generation");
    const auto cache = RowsOf(rows, "cache_utils.py");
    // Three steps, keys and values each; the previous step's pair is freed by the next update,
    // and the first update frees the pair from before the trace (its row says so).
    REQUIRE(cache.size() == 8);
    int before = 0;
    for (const BeyondRow& r : cache) before += r.site == kPreWindowKvCacheRow ? 1 : 0;
    CHECK(before == 2);
    for (const BeyondRow& r : cache) {
      CAPTURE(r.site);
      CHECK(r.category == "kv_cache");
      CHECK(r.rule == "kv_cache_frame");
    }
  }

  TEST_CASE("the rest of a generation's forward pass keeps its kind beside the KV cache") {
    const auto rows = BeyondTrainingRun("generation");
    for (const BeyondRow& r : RowsOf(rows, "linear")) {
      CAPTURE(r.site);
      CHECK(r.category != "kv_cache");
      // q_proj dies in its forward pass; lm_head's logits outlive it into _sample.
      CHECK((r.rule == "forward_freed" || r.rule == "forward_kept"));
    }
    for (const BeyondRow& r : RowsOf(rows, "argmax")) {  // the next token, in _sample
      CAPTURE(r.site);
      CHECK(r.category != "kv_cache");
    }
    const auto weights = RowsOf(rows, "[allocated before recording started]");
    REQUIRE(weights.size() == 1);
    CHECK(weights[0].category == "parameter");
  }

  TEST_CASE("a weight's cast autocast keeps for backward is autocast's cache, by its size") {
    const auto rows = BeyondTrainingRun("autocast");
    int weights = 0;
    for (const BeyondRow& r : RowsOf(rows, "_to_copy")) {
      if (r.bytes != 4 * kMiBytes) continue;
      CAPTURE(r.site);
      if (r.site.find("net.py:17") != std::string::npos) continue;  // the uncached cast
      ++weights;
      CHECK(r.category == "autocast_cache");
      CHECK(r.rule == "autocast_weight_size");
    }
    CHECK(weights == 2);  // fc1's and fc2's weights
  }

  TEST_CASE("a cast freed when autocast's cache is cleared is autocast's cache") {
    const auto rows = BeyondTrainingRun("autocast");
    int cleared = 0;
    for (const BeyondRow& r : rows) {
      if (r.rule != "autocast_cleared") continue;
      ++cleared;
      CHECK(r.category == "autocast_cache");
      CHECK(r.bytes == 1 * kMiBytes);  // the bias's cast
    }
    CHECK(cleared == 1);
  }

  TEST_CASE("an activation's cast saved for backward stays an activation") {
    // LayerNorm's fp32 output cast to bf16 for fc1: cached_cast made it, but no parameter is
    // twice its size and autocast's clearing does not free it.
    const auto rows = BeyondTrainingRun("autocast");
    int casts = 0;
    for (const BeyondRow& r : RowsOf(rows, "_to_copy")) {
      if (r.bytes != 1536 * 1024) continue;
      ++casts;
      CHECK(r.category == "activation");
      CHECK(r.rule == "saved_for_backward");
    }
    CHECK(casts == 1);
  }

  TEST_CASE("a cast of a parameter's half size that dies with its operator stays a temporary") {
    const auto rows = BeyondTrainingRun("autocast");
    const auto uncached = RowsOf(rows, "net.py:17");
    REQUIRE(uncached.size() == 1);
    CHECK(uncached[0].category == "temporary");
    CHECK(uncached[0].rule == "forward_freed");
  }

  TEST_CASE("casts of a weight's half size that outnumber the weights are not called its cache") {
    // fc2's input cast is as large as a weight's cast: three casts of 4 MiB, two weights of 8 MiB.
    const auto rows = BeyondTrainingRun("autocast_collision");
    int casts = 0;
    for (const BeyondRow& r : RowsOf(rows, "_to_copy")) {
      if (r.bytes != 4 * kMiBytes) continue;
      ++casts;
      CAPTURE(r.site);
      CHECK(r.category == "activation");
      CHECK(r.rule == "saved_for_backward");
    }
    CHECK(casts == 3);
    // The bias's cast is still told by its free.
    int cleared = 0;
    for (const BeyondRow& r : rows) cleared += r.rule == "autocast_cleared" ? 1 : 0;
    CHECK(cleared == 1);
  }

  TEST_CASE("buffers an object's own __init__ makes per parameter are state") {
    const auto rows = BeyondTrainingRun("state");
    const auto estimator = RowsOf(rows, "estimators.py");
    REQUIRE(estimator.size() == 2);  // the comprehension's zeros_like, and a clone
    for (const BeyondRow& r : estimator) {
      CAPTURE(r.site);
      CHECK(r.category == "state");
      CHECK(r.rule == "init_state");
    }
  }

  TEST_CASE("an nn.Module's __init__ parameter stays a parameter") {
    const auto rows = BeyondTrainingRun("state");
    const auto model = RowsOf(rows, "net.py:");
    int init = 0;
    for (const BeyondRow& r : model) {
      if (r.rule != "init_kept") continue;
      ++init;
      CAPTURE(r.site);
      CHECK(r.category == "parameter");
    }
    CHECK(init == 2);  // nn.Linear's weight, and a buffer torch.zeros made in the model's __init__
  }
}

}  // namespace
}  // namespace memsnap::analysis::beyond_training_test
