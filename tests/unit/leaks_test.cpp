#include "memsnap/analysis/sites/leaks.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <optional>
#include <random>
#include <string>

#include "analysis/sites/leaks_internal.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/leaks_render.h"
#include "test_util.h"
#include "timeline_points.h"

namespace memsnap {
namespace {

using analysis::LeakReport;
using analysis::LeakSite;
using analysis::Verdict;
using testing::kMiB;

// The generated fixtures (testdata/leaks_fixtures.py), written once per test run.
const std::string& FixtureDir() {
  static const std::string dir = [] {
    std::string d = testing::TempDir() + "/leaks";
    std::filesystem::create_directories(d);
    const std::string testdata =
        std::filesystem::path(testing::TestdataPath("leaks_fixtures.py")).parent_path().string();
    testing::RunPython("import sys\nsys.path.insert(0, '" + testdata +
                       "')\nimport leaks_fixtures\nleaks_fixtures.write_all('" + d + "')\n");
    return d;
  }();
  return dir;
}

Snapshot Load(const std::string& name) {
  auto snap = parse::ReadSnapshot(FixtureDir() + "/" + name);
  REQUIRE_MESSAGE(snap.ok(), std::string(snap.status().message()));
  return std::move(*snap);
}

LeakReport Series(const std::string& scenario, const analysis::LeakOptions& options = {}) {
  std::vector<analysis::SeriesPoint> points;
  for (int k = 1; k <= 6; ++k) {
    auto p =
        analysis::SeriesPointOf(Load(scenario + "_step" + std::to_string(k) + ".pickle"), options);
    REQUIRE(p.ok());
    points.push_back(std::move(*p));
  }
  return analysis::AnalyzeSeries(std::move(points), options);
}

LeakReport Trace(const std::string& scenario, const analysis::StepOptions& steps = {},
                 const analysis::LeakOptions& options = {}) {
  auto r = analysis::AnalyzeTraceLeaks(Load(scenario + "_trace.pickle"), options, steps);
  REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
  return std::move(*r);
}

const LeakSite* FindSite(const LeakReport& r, std::string_view frame) {
  for (const LeakSite& s : r.sites) {
    if (!s.frames.empty() && s.frames[0].find(frame) != std::string::npos) return &s;
  }
  return nullptr;
}

std::vector<int64_t> MiBs(std::initializer_list<int64_t> v) {
  std::vector<int64_t> out;
  for (int64_t x : v) out.push_back(x * kMiB);
  return out;
}

TEST_SUITE("leaks") {
  TEST_CASE("verdicts classify growth, plateaus, pauses, swings and shrinkage") {
    using analysis::ClassifySeries;
    CHECK(ClassifySeries({1, 2, 3, 4}) == Verdict::kGrowing);
    CHECK(ClassifySeries({1, 2}) == Verdict::kGrowing);
    CHECK(ClassifySeries({1, 2, 3, 3, 3}) == Verdict::kGrowingThenFlat);
    CHECK(ClassifySeries({1, 1, 2, 2, 3}) == Verdict::kGrowingWithPauses);
    CHECK(ClassifySeries({1, 3, 2, 4}) == Verdict::kFluctuating);
    CHECK(ClassifySeries({4, 3, 3, 1}) == Verdict::kShrinking);
    CHECK(ClassifySeries({5, 5, 5}) == Verdict::kSteady);
    CHECK(ClassifySeries({100, 101, 100, 102}, 8) == Verdict::kSteady);
  }

  TEST_CASE("a series' verdict from its changes alone is the verdict of the whole series") {
    // Single-trace mode classifies the sites that cannot be reported from their changes (issue 54).
    std::mt19937 rng(54);
    for (int round = 0; round < 2000; ++round) {
      const size_t n = 1 + rng() % 12;
      std::vector<int64_t> values(n);
      std::vector<std::pair<size_t, int64_t>> deltas;
      for (size_t i = 0; i < n; ++i) {
        // Mostly flat, some ups and downs, small ones within the tolerance.
        const int64_t r = static_cast<int64_t>(rng() % 9) - 4;
        const int64_t d = r == 0 || r == 1 ? 0 : r;
        values[i] = (i == 0 ? 100 : values[i - 1]) + (i == 0 ? 0 : d);
        if (i > 0 && d != 0) deltas.emplace_back(i, d);
      }
      for (int64_t tolerance : {0, 1, 2}) {
        CAPTURE(round);
        CHECK(analysis::internal::ClassifyDeltas(deltas, n, tolerance) ==
              analysis::ClassifySeries(values, tolerance));
      }
    }
  }

  TEST_CASE("series mode reports the list that keeps growing with its full stack") {
    LeakReport r = Series("leak_list");
    CHECK(r.mode == "series");
    REQUIRE(r.num_leaks == 1);
    const LeakSite& s = r.sites[0];
    CHECK(s.leak);
    CHECK(s.verdict == Verdict::kGrowing);
    CHECK(s.frames[0] == "train.py:10:loss_fn");
    CHECK(s.frames.size() == 3);
    CHECK(s.bytes == MiBs({4, 8, 12, 16, 20, 24}));
    CHECK(s.counts == std::vector<int64_t>{1, 2, 3, 4, 5, 6});
    CHECK(s.bytes_per_step == 4 * kMiB);
    CHECK(r.leak_bytes_per_step == 4 * kMiB);
    CHECK(r.total_verdict == Verdict::kGrowing);
    CHECK(!r.full_at_step.has_value());  // no OOM entry, no --device-memory
    // Parameters are steady; the transient activations are gone at every dump.
    CHECK(r.verdict_counts[static_cast<int>(Verdict::kSteady)] == 1);
  }

  TEST_CASE("series mode reports the cache that holds activations") {
    LeakReport r = Series("leak_cache");
    REQUIRE(r.num_leaks == 1);
    CHECK(r.sites[0].frames[0] == "model.py:18:cache_activation");
    CHECK(r.sites[0].bytes_per_step == 16 * kMiB);
  }

  TEST_CASE("series mode follows the cache across an edit that moved train.py's lines") {
    std::vector<analysis::SeriesPoint> points, exact_points;
    analysis::LeakOptions exact;
    exact.pair_moved = false;
    for (int run = 1; run <= 3; ++run) {
      Snapshot snap = Load("edited_run" + std::to_string(run) + ".pickle");
      auto p = analysis::SeriesPointOf(snap, {});
      auto e = analysis::SeriesPointOf(snap, exact);
      REQUIRE(p.ok());
      REQUIRE(e.ok());
      points.push_back(std::move(*p));
      exact_points.push_back(std::move(*e));
    }
    LeakReport r = analysis::AnalyzeSeries(std::move(points), {});
    REQUIRE(r.num_leaks == 1);
    const LeakSite& s = r.sites[0];
    CHECK(s.frames[0] == "model.py:18:cache_activation");
    CHECK(s.bytes == MiBs({16, 32, 48}));
    CHECK(s.info.callers == std::vector<std::string>{"model.py:15 forward",
                                                     "train.py:20\u219222 train_step",
                                                     "train.py:50\u219252 <module>"});
    CHECK(r.sites_moved == 2);  // the cache and the parameters (train.py:50 -> :52)
    CHECK(r.sites_total == 2);
    // --exact-lines: the old split rows, a leak that starts from nothing and a vanished twin.
    LeakReport split = analysis::AnalyzeSeries(std::move(exact_points), exact);
    REQUIRE(split.num_leaks == 1);
    CHECK(split.sites[0].bytes == MiBs({0, 32, 48}));
    const LeakSite* gone = nullptr;
    for (const LeakSite& site : split.sites) {
      if (site.bytes == MiBs({16, 0, 0})) gone = &site;
    }
    CHECK(gone != nullptr);
    CHECK(split.sites_total == 4);
    CHECK(split.sites_moved == 0);
  }

  TEST_CASE("series mode stays quiet on a steady loop and on a warm-up") {
    LeakReport steady = Series("steady");
    CHECK(steady.num_leaks == 0);
    CHECK(steady.total_verdict == Verdict::kSteady);
    CHECK(steady.sites.empty());  // nothing changed by 1 MiB or more
    LeakReport warm = Series("warmup");
    CHECK(warm.num_leaks == 0);
    const LeakSite* lru = FindSite(warm, "cache.py:8:remember");
    REQUIRE(lru != nullptr);
    CHECK(lru->verdict == Verdict::kGrowingThenFlat);
    CHECK(lru->bytes == MiBs({2, 4, 6, 6, 6, 6}));
    CHECK(FindSite(warm, "optim.py") == nullptr);  // created in step 1: steady over the dumps
  }

  TEST_CASE("--min-growth above the leak's growth silences it") {
    analysis::LeakOptions o;
    o.min_growth = 64 * kMiB;
    CHECK(Series("leak_list", o).num_leaks == 0);
  }

  TEST_CASE("two snapshots are not enough to call a leak") {
    std::vector<analysis::SeriesPoint> points;
    for (int k : {1, 6}) {
      points.push_back(
          *analysis::SeriesPointOf(Load("leak_list_step" + std::to_string(k) + ".pickle"), {}));
    }
    LeakReport r = analysis::AnalyzeSeries(std::move(points), {});
    CHECK(r.num_leaks == 0);
    CHECK(r.too_few_steps == 1);
    CHECK(report::LeaksNote(r).find("only 1 step") != std::string::npos);
    REQUIRE(!r.sites.empty());
    CHECK(r.sites[0].verdict == Verdict::kGrowing);
  }

  TEST_CASE("a series given out of time order says so, and in time order it does not") {
    std::vector<analysis::SeriesPoint> points;
    for (int k : {6, 1, 2}) {
      points.push_back(
          *analysis::SeriesPointOf(Load("leak_list_step" + std::to_string(k) + ".pickle"), {}));
    }
    const std::vector<analysis::SeriesPoint> given = points;
    LeakReport r = analysis::AnalyzeSeries(points, {});
    CHECK(r.out_of_order_point == 1);
    CHECK(report::LeaksNote(r).find("snapshot 1's trace ends") != std::string::npos);
    CHECK(report::LeaksNote(r).find("--sort time") != std::string::npos);
    std::swap(points[0], points[1]);  // 1, 6, 2: still out of order, at snapshot 2
    r = analysis::AnalyzeSeries(points, {});
    CHECK(report::LeaksNote(r).find("snapshot 2's trace ends") != std::string::npos);
    points = {given[1], given[2], given[0]};  // 1, 2, 6
    r = analysis::AnalyzeSeries(points, {});
    CHECK(report::LeaksNote(r).find("time order") == std::string::npos);
  }

  TEST_CASE("--device-memory projects the step at which the device is full") {
    analysis::LeakOptions o;
    o.device_memory = 1024 * kMiB;
    LeakReport r = Series("leak_list", o);
    // Live at the last dump: 512 MiB params + 24 MiB losses; 4 MiB more per step.
    CHECK(r.live_bytes.back() == 536 * kMiB);
    CHECK(r.device_memory_source == analysis::LeakMemorySource::kFlag);
    REQUIRE(r.full_at_step.has_value());
    CHECK(*r.full_at_step == 5 + (1024 - 536) / 4);
    CHECK(r.sites[0].full_at_step == r.full_at_step);
  }

  TEST_CASE("an OOM entry gives the device memory: reserved at the OOM plus device_free") {
    const std::string dir = testing::TempDir() + "/leaks_oom";
    std::filesystem::create_directories(dir);
    const std::string testdata =
        std::filesystem::path(testing::TestdataPath("leaks_fixtures.py")).parent_path().string();
    testing::RunPython("import sys\nsys.path.insert(0, '" + testdata +
                       "')\nimport leaks_fixtures\nleaks_fixtures.write_trace('" + dir +
                       "/t.pickle', 'leak_list', oom=True)\n");
    auto snap = parse::ReadSnapshot(dir + "/t.pickle");
    REQUIRE(snap.ok());
    auto r = analysis::AnalyzeTraceLeaks(*snap, {}, {});
    REQUIRE(r.ok());
    // 8 GiB segment + (2 GiB - live at the OOM).
    CHECK(r->device_memory == (8 + 2) * 1024 * kMiB - r->live_bytes.back());
    CHECK(r->device_memory_source == analysis::LeakMemorySource::kOomEntry);
    CHECK(r->full_at_step.has_value());
  }

  TEST_CASE("single-trace mode finds the step by periodicity and reports what each step keeps") {
    LeakReport r = Trace("leak_list");
    REQUIRE(r.steps.has_value());
    CHECK(r.steps->method == "periodicity");
    CHECK(r.steps->ranges.size() >= 10);
    CHECK(r.steps->score > 0.8);
    REQUIRE(r.num_leaks == 1);
    const LeakSite& s = r.sites[0];
    CHECK(s.frames[0] == "train.py:10:loss_fn");
    CHECK(s.bytes_per_step == 4 * kMiB);
    for (int64_t kept : s.retained) CHECK(kept == 4 * kMiB);
  }

  TEST_CASE("single-trace mode steps by annotation and by equal slices") {
    analysis::StepOptions by_annotation;
    by_annotation.annotation = "train_step";
    LeakReport a = Trace("leak_cache", by_annotation);
    CHECK(a.steps->method == "annotation train_step");
    CHECK(a.steps->ranges.size() == 12);
    REQUIRE(a.num_leaks == 1);
    CHECK(a.sites[0].frames[0] == "model.py:18:cache_activation");
    CHECK(a.sites[0].bytes_per_step == 16 * kMiB);
    analysis::StepOptions slices;
    slices.steps = 4;
    LeakReport s = Trace("leak_cache", slices);
    CHECK(s.steps->ranges.size() == 4);
    CHECK(s.steps->ranges.front().from.is_start());
    CHECK(s.num_leaks == 1);
  }

  TEST_CASE("single-trace mode stays quiet on a steady loop and on a warm-up") {
    for (const char* scenario : {"steady", "warmup"}) {
      CAPTURE(scenario);
      LeakReport r = Trace(scenario);
      CHECK(r.steps->ranges.size() >= 10);
      CHECK(r.num_leaks == 0);
      analysis::StepOptions by_annotation;
      by_annotation.annotation = "train_step";
      CHECK(Trace(scenario, by_annotation).num_leaks == 0);
    }
  }

  TEST_CASE("single-trace mode names unknown annotations and refuses files without a trace") {
    analysis::StepOptions o;
    o.annotation = "nope";
    auto r = analysis::AnalyzeTraceLeaks(Load("steady_trace.pickle"), {}, o);
    REQUIRE(!r.ok());
    CHECK(std::string(r.status().message()) ==
          "--step-annotation nope: no annotation START with that name (names in the file: "
          "train_step)");
    Snapshot empty;
    CHECK(!analysis::AnalyzeTraceLeaks(empty, {}, {}).ok());
  }

  TEST_CASE("leaks runs on every corpus file with a trace" * doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      auto snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      if (snap->events.empty()) continue;
      CAPTURE(path);
      auto r = analysis::AnalyzeTraceLeaks(*snap, {}, {});
      REQUIRE_MESSAGE(r.ok(), std::string(r.status().message()));
      const analysis::StepInfo& st = *r->steps;
      for (size_t k = 0; k < st.ranges.size(); ++k) {
        CHECK(st.ranges[k].from < st.ranges[k].to);
        if (k > 0) CHECK(st.ranges[k - 1].to <= st.ranges[k].from);
      }
      CHECK(r->labels.size() == (st.ranges.size() >= 2 ? st.ranges.size() : 0));
      if (r->labels.empty()) continue;
      // Sites add up to the device's live curve at every step end (less what the trace cannot
      // explain, which the timeline puts into its start value).
      auto tl = analysis::ReconstructTimeline(*snap);
      REQUIRE(tl.ok());
      const analysis::DeviceTimeline* dt = tl->Find(st.device);
      REQUIRE(dt != nullptr);
      for (size_t k = 0; k < st.ranges.size(); ++k) {
        int64_t sum = 0;
        for (uint32_t i : analysis::LiveBlocksAt(*dt, st.ranges[k].to))
          sum += dt->blocks[i].requested_size;
        CAPTURE(dt->start_requested);
        CAPTURE(dt->unreconciled_requested_bytes);
        CHECK(r->live_bytes[k] == sum);
        CHECK(r->live_bytes[k] ==
              testing::LiveAt(*dt, st.ranges[k].to.index()) - dt->unreconciled_requested_bytes);
      }
    }
  }

  // Series of real files picked by name, each name matching exactly one file; nullopt when the
  // corpus is absent (the test case is then skipped).
  std::optional<LeakReport> CorpusSeries(std::initializer_list<const char*> names) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return std::nullopt;
    std::vector<analysis::SeriesPoint> points;
    for (const char* name : names) {
      CAPTURE(name);
      int matched = 0;
      for (const std::string& path : files) {
        if (path.find(name) == std::string::npos) continue;
        ++matched;
        auto snap = parse::ReadSnapshot(path);
        REQUIRE_MESSAGE(snap.ok(), snap.status().message());
        auto p = analysis::SeriesPointOf(*snap, {});
        REQUIRE(p.ok());
        points.push_back(std::move(*p));
      }
      REQUIRE(matched == 1);
    }
    return analysis::AnalyzeSeries(std::move(points), {});
  }

  TEST_CASE("real series: repeated runs of one configuration raise no alarm" *
            doctest::test_suite("corpus")) {
    std::optional<LeakReport> fwd =
        CorpusSeries({"memory_ctx128_forward__03016ee6", "ctx128_forward__91995574",
                      "ctx128_forward___a97ea92b"});
    if (!fwd) return;  // skipped: the corpus is absent
    CHECK(fwd->num_leaks == 0);
    CHECK(fwd->total_verdict == Verdict::kSteady);
    LeakReport step = *CorpusSeries({"ctx128_fullstep__86060152", "ctx128_fullstep___332e0bb4",
                                     "memory_ctx128_fullstep__b1a7c70c"});
    CHECK(step.num_leaks == 0);
    CHECK(step.total_verdict == Verdict::kSteady);
    // Every site of the full step is steady across both edits, Adam's two states included: they
    // move from benchmark.py:232 to :234, and the later file's :232 is the loss (from :230).
    CHECK(step.sites_total == 9);
    CHECK(step.verdict_counts[static_cast<int>(Verdict::kSteady)] == 9);
  }

  TEST_CASE("real series: context lengths and forward vs full step run, and grow as expected" *
            doctest::test_suite("corpus")) {
    std::optional<LeakReport> ctx = CorpusSeries({"medium_128_inference", "medium_256_inference",
                                                  "medium_512_inference", "medium_1024_inference"});
    if (!ctx) return;  // skipped: the corpus is absent
    CHECK(ctx->labels.size() == 4);
    LeakReport kk = *CorpusSeries({"files_memory_ctx128_forward__91995574",
                                   "ctx256_forward___019e70b3", "ctx512_forward___b9620ccc"});
    // A longer context legitimately needs more memory: those sites grow in every step.
    CHECK(kk.total_verdict == Verdict::kGrowing);
    CHECK(kk.num_leaks > 0);
    LeakReport fs = *CorpusSeries(
        {"files_memory_ctx128_forward__91995574", "files_memory_ctx128_fullstep__86060152"});
    CHECK(fs.labels.size() == 2);
    CHECK(fs.num_leaks == 0);  // one step is never enough to call a leak
  }

  TEST_CASE("a corpus snapshot repeated three times is steady: no false alarm" *
            doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    int repeated = 0;
    for (const std::string& path : files) {
      if (path.find("memory_ctx128_fullstep__b1a7c70c") == std::string::npos &&
          path.find("medium_512_inference") == std::string::npos) {
        continue;
      }
      ++repeated;
      auto snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      std::vector<analysis::SeriesPoint> points;
      for (int i = 0; i < 3; ++i) points.push_back(*analysis::SeriesPointOf(*snap, {}));
      LeakReport r = analysis::AnalyzeSeries(std::move(points), {});
      CHECK(r.num_leaks == 0);
      CHECK(r.total_verdict == Verdict::kSteady);
    }
    CHECK(repeated == 2);
  }
}

}  // namespace
}  // namespace memsnap
