#include "memsnap/analysis/compose/ranks.h"

#include <doctest/doctest.h>

#include <optional>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/check_render.h"
#include "memsnap/report/frag_render.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/summary_render.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace memsnap {
namespace {

using analysis::RankMetric;
using analysis::RankTable;

RankTable OneMetric(std::vector<double> values, bool is_ratio) {
  RankTable t;
  for (size_t i = 0; i < values.size(); ++i) t.files.push_back("rank" + std::to_string(i));
  t.metrics.push_back(
      RankMetric{"m", "m", is_ratio ? Unit::kRatio : Unit::kBytes, true, std::move(values), -1});
  return t;
}

TEST_SUITE("ranks") {
  TEST_CASE("a byte metric calls out the ranks beyond the spread of the others, the highest so") {
    // Sorted 100 100 105 120 200: the lower median is 105; the distances 0 5 5 15 95 have the
    // median 5, so a rank stands out beyond 3 x 1.4826 x 5 = 22.2 B: 200, not 120 (15 above).
    RankTable t = analysis::CompareMetrics(OneMetric({100, 100, 200, 105, 120}, false));
    CHECK(t.metrics[0].median == 105);
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank2");
    CHECK(t.outliers[0].value == 200);
    CHECK(report::OutlierReason(t.outliers[0]) ==
          "highest m: 200 B (median 105 B), 90.5% above it");
  }

  TEST_CASE("two ranks 27% above the median of eight are called out, one 0.2% above it is not") {
    const double mib = 1 << 20;
    RankTable t =
        analysis::CompareMetrics(OneMetric({1000 * mib, 1000 * mib, 1270 * mib, 1000 * mib,
                                            1002 * mib, 1000 * mib, 1270 * mib, 1000 * mib},
                                           false));
    CHECK(t.metrics[0].median == 1000 * mib);
    REQUIRE(t.outliers.size() == 2);
    CHECK(t.outliers[0].file == "rank2");
    CHECK(t.outliers[0].kind == analysis::OutlierKind::kHighestAbove);
    CHECK(t.outliers[1].file == "rank6");
    CHECK(t.outliers[1].kind == analysis::OutlierKind::kAboveMedian);
    CHECK(report::OutlierReason(t.outliers[1]) == "m 1.2 GiB is 27.0% above the median 1000.0 MiB");
  }

  TEST_CASE("ranks that spread widely are called out only beyond their spread") {
    // Median 100, median distance 10: 135 is 35% above the median but within 3 x 1.4826 x 10.
    RankTable t = analysis::CompareMetrics(OneMetric({100, 85, 115, 90, 110, 95, 105, 135}, false));
    CHECK(t.outliers.empty());
    // Far beyond the spread, it is.
    t = analysis::CompareMetrics(OneMetric({100, 85, 115, 90, 110, 95, 105, 250}, false));
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank7");
  }

  TEST_CASE("a rank far below the median is called out where the metric asks for it") {
    RankTable t = OneMetric({100, 100, 27, 100}, false);
    t = analysis::CompareMetrics(t);
    CHECK(t.outliers.empty());  // call_out_below is off: less is only better
    t = OneMetric({100, 100, 27, 100}, false);
    t.metrics[0].call_out_below = true;
    t = analysis::CompareMetrics(std::move(t));
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank2");
    CHECK(t.outliers[0].kind == analysis::OutlierKind::kBelowMedian);
    CHECK(report::OutlierReason(t.outliers[0]) == "m 27 B is 73.0% below the median 100 B");
  }

  TEST_CASE(
      "an outlier rank is explained by the kinds and sites that differ from the median rank") {
    RankTable t = analysis::CompareRanks(
        {{"a", 100, 100, -1, ""}, {"b", 100, 100, -1, ""}, {"c", 100, 160, -1, ""}});
    REQUIRE(t.outliers.size() == 1);
    auto profile = [](int64_t act, int64_t grad, int64_t extra) {
      analysis::RankProfile p;
      p.known = true;
      p.by_category[static_cast<int>(analysis::Category::kActivation)] = act + extra;
      p.by_category[static_cast<int>(analysis::Category::kGradient)] = grad;
      p.sites = {{"k1", "linear", analysis::Category::kActivation, act},
                 {"k2", "MmBackward0 (mm)", analysis::Category::kGradient, grad}};
      if (extra > 0) p.sites.push_back({"k3", "cat", analysis::Category::kActivation, extra});
      return p;
    };
    analysis::ExplainOutliers(t, {profile(60, 40, 0), profile(60, 40, 0), profile(60, 40, 60)});
    CHECK(t.explained);
    REQUIRE(t.differences.size() == 1);
    const analysis::RankDifference& d = t.differences[0];
    CHECK(d.file == "c");
    CHECK(d.median_file == "a");
    CHECK(d.metric == "allocated_bytes");
    REQUIRE(d.kinds.size() == 1);
    CHECK(d.kinds[0].category == analysis::Category::kActivation);
    CHECK(d.kinds[0].delta_bytes == 60);
    REQUIRE(d.sites.size() == 1);
    CHECK(d.sites[0].site == "cat");
    CHECK(d.sites[0].delta_bytes() == 60);
  }

  TEST_CASE("a ratio metric deviates by percentage points, not by a fraction of the median") {
    // Median 0.30: 0.38 is 26.7% above it but only 8 points, so only 0.45 (15 points) deviates.
    RankTable t = analysis::CompareMetrics(OneMetric({0.30, 0.30, 0.38, 0.45}, true));
    CHECK(t.metrics[0].median == doctest::Approx(0.30));
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank3");
    CHECK(t.outliers[0].unit == Unit::kRatio);
    CHECK(report::OutlierReason(t.outliers[0]) ==
          "highest m: 45.0% (median 30.0%), 15.0 points above it");
  }

  TEST_CASE("a ratio above zero stands out when every other rank is at zero") {
    RankTable t = analysis::CompareMetrics(OneMetric({0, 0, 0.2}, true));
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank2");
  }

  TEST_CASE("ranks that all hold the same figure have no outlier") {
    RankTable t = analysis::CompareMetrics(OneMetric({64, 64, 64}, false));
    CHECK(t.metrics[0].median == 64);
    CHECK(t.outliers.empty());
  }

  TEST_CASE("unknown values are left out of the median and the outliers") {
    RankTable t = analysis::CompareMetrics(OneMetric({-1, 10, 30, -1}, false));
    CHECK(t.metrics[0].median == 10);
    REQUIRE(t.outliers.size() == 1);
    CHECK(t.outliers[0].file == "rank2");
    RankTable none = analysis::CompareMetrics(OneMetric({-1, -1}, false));
    CHECK(none.metrics[0].median == -1);
    CHECK(none.outliers.empty());
  }

  TEST_CASE("a metric without call_out gets a median but no outliers") {
    RankTable t = OneMetric({1, 1, 100}, false);
    t.metrics[0].call_out = false;
    t = analysis::CompareMetrics(std::move(t));
    CHECK(t.metrics[0].median == 1);
    CHECK(t.outliers.empty());
  }

  TEST_CASE("CompareRanks calls out the peak before reserved and allocated bytes") {
    RankTable r = analysis::CompareRanks({{"a", 100, 50, 10, ""}, {"b", 300, 50, 90, ""}});
    REQUIRE(r.outliers.size() == 2);
    CHECK(r.outliers[0].metric == "peak_bytes");
    CHECK(r.outliers[1].metric == "reserved_bytes");
  }

  TEST_CASE("CompareRanks names the highest peak, reserved and allocated ranks") {
    RankTable r = analysis::CompareRanks(
        {{"a", 100, 50, -1, "x"}, {"b", 300, 50, -1, "x"}, {"c", 100, 50, -1, "y"}});
    REQUIRE(r.metrics.size() == 3);
    CHECK(r.metrics[0].name == "reserved_bytes");
    CHECK(r.metrics[0].median == 100);
    CHECK(r.metrics[1].median == 50);
    CHECK(r.metrics[2].median == -1);  // no rank knows its peak
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].values == std::vector<std::string>{"x", "x", "y"});
    REQUIRE(r.outliers.size() == 2);
    CHECK(r.outliers[0].file == "b");
    CHECK(r.outliers[0].metric == "reserved_bytes");
    CHECK(r.outliers[1].file == "c");
    CHECK(r.outliers[1].metric == "top_site");
    CHECK(report::OutlierReason(r.outliers[1]) == "top site differs: y (most ranks: x)");
  }

  TEST_CASE("frag ranks call out fragmentation first, then free and stranded bytes") {
    auto rank = [](std::string file, int64_t free, int64_t stranded, double frag) {
      analysis::FragRank r;
      r.file = std::move(file);
      r.totals.reserved_bytes = 1000;
      r.totals.free_bytes = free;
      r.totals.stranded_bytes = stranded;
      r.totals.largest_free_bytes = free / 2;
      r.external_fragmentation = frag;
      analysis::FragAnswer a;
      a.verdict = analysis::FragVerdict::kSmall;
      a.stranded_bytes = stranded;
      a.stranded_share = static_cast<double>(stranded) / 1000.0;
      a.at_peak = true;
      r.answer = a;
      return r;
    };
    RankTable t = report::FragRanksTable(
        {rank("r0", 100, 0, 0.1), rank("r1", 100, 0, 0.1), rank("r2", 400, 300, 0.5)});
    REQUIRE(t.metrics.size() == 6);
    CHECK(t.metrics[0].name == "reserved_bytes");
    CHECK(t.metrics[5].name == "external_fragmentation");
    CHECK(t.metrics[5].median == doctest::Approx(0.1));
    REQUIRE(t.outliers.size() == 3);
    CHECK(t.outliers[0].metric == "external_fragmentation");
    CHECK(t.outliers[1].metric == "free_bytes");
    CHECK(t.outliers[2].metric == "stranded_bytes");
    for (const auto& o : t.outliers) CHECK(o.file == "r2");
    // No warnings, no notes column: only each rank's verdict, as frag FILE gives it.
    REQUIRE(t.notes.size() == 1);
    CHECK(t.notes[0].name == "verdict");
    REQUIRE(t.notes[0].values.size() == 3);
    CHECK(t.notes[0].values[2] == "small: 300 B (30.0%) at the peak");
  }

  TEST_CASE("frag ranks with reconstruction warnings count them in a notes column") {
    analysis::FragRank quiet, noisy;
    quiet.file = "quiet";
    noisy.file = "noisy";
    noisy.warnings = 2;
    RankTable t = report::FragRanksTable({quiet, noisy});
    REQUIRE(t.notes.size() == 2);  // the verdicts, then the notes
    CHECK(t.notes[1].name == "notes");
    REQUIRE(t.notes[1].values.size() == 2);
    CHECK(t.notes[1].values[0].empty());
    CHECK(t.notes[1].values[1] ==
          "2 reconstruction warning(s): run frag on the file alone to see them");
  }

  TEST_CASE("check over ranks fails when one rank fails and names its failed checks") {
    auto rank = [](std::string file, int64_t reserved, bool pass) {
      analysis::CheckRank r;
      r.metrics.path = file;
      r.metrics.reserved_bytes = reserved;
      r.report.path = file;
      analysis::CheckResult c;
      c.metric = analysis::CheckMetric::kReserved;
      c.limit = 1024;
      c.value = static_cast<double>(reserved);
      c.passed = pass;
      r.report.checks = {c, c};
      r.report.checks[0].metric = analysis::CheckMetric::kStranded;
      r.report.checks[0].is_ratio = true;
      r.report.checks[0].limit = 0.3;
      r.report.checks[0].passed = true;
      return r;
    };
    analysis::CheckRanksReport r = analysis::CompareCheckRanks(
        {rank("r0", 1000, true), rank("r1", 2000, false), rank("r2", 1000, true)}, "");
    CHECK_FALSE(r.passed());
    CHECK(r.failed_ranks() == 1);
    CHECK(r.failures() == 1);
    CHECK(r.checks() == 6);
    // The verdicts are words: the renderer writes them from the typed checks.
    const nlohmann::ordered_json rows = report::CheckRanksToJson(r)["ranks"]["ranks"];
    REQUIRE(rows.size() == 3);
    CHECK(rows[0]["verdict"] == "PASS");
    CHECK(rows[1]["verdict"] == "FAIL reserved <= 1.0 KiB");
    CHECK(r.table.metrics[0].values[1] == -1);  // no peak without a trace
    CHECK(r.table.metrics[1].median == 1000);
    analysis::CheckRanksReport ok = analysis::CompareCheckRanks({rank("r0", 1000, true)}, "");
    CHECK(ok.passed());
    // A baseline rank with no new rank fails the gate, whatever the ranks read say.
    ok.missing.push_back({"base/r1", "no input of the same name"});
    CHECK_FALSE(ok.passed());
    CHECK(report::CheckRanksToJson(ok)["missing"][0]["path"] == "base/r1");
  }

  TEST_CASE("frag over the corpus gives every file the figures frag gives it alone" *
            doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    REQUIRE(files.size() >= 2);
    std::vector<std::string> args = {"frag", "--json"};
    args.insert(args.end(), files.begin(), files.end());
    testing::RunResult all = testing::RunMemsnap(args);
    REQUIRE(all.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(all.out);
    const nlohmann::json& ranks = j["ranks"]["ranks"];
    REQUIRE(ranks.size() == files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      CAPTURE(files[i]);
      CHECK(ranks[i]["file"] == files[i]);  // input order kept
      testing::RunResult one = testing::RunMemsnap({"frag", "--json", files[i]});
      REQUIRE(one.exit_code == 0);
      nlohmann::json alone = nlohmann::json::parse(one.out);
      for (const char* key : {"reserved_bytes", "allocated_bytes", "free_bytes", "stranded_bytes",
                              "largest_free_bytes", "external_fragmentation"}) {
        CAPTURE(key);
        CHECK(ranks[i][key] == alone[key]);
      }
    }
    // Every outlier is above its metric's median.
    for (const auto& o : j["ranks"]["outliers"]) {
      CHECK(o["value"].get<double>() > o["median"].get<double>());
    }
  }

  TEST_CASE(
      "summary and top over the corpus give every file the figures rebuilt from its model alone" *
      doctest::test_suite("corpus")) {
    // Over several files each timeline is built during its read (cli::AnalyzeEachWithTimeline);
    // here every figure is rebuilt after the read, by the analyses' own timeline passes.
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    REQUIRE(files.size() >= 2);
    for (std::string threads : {"1", "3"}) {
      CAPTURE(threads);
      std::vector<std::string> args = {"--threads", threads, "summary", "--json"};
      args.insert(args.end(), files.begin(), files.end());
      testing::RunResult summary = testing::RunMemsnap(args);
      REQUIRE(summary.exit_code == 0);
      args = {"--threads", threads, "top", "--json"};
      args.insert(args.end(), files.begin(), files.end());
      testing::RunResult top = testing::RunMemsnap(args);
      REQUIRE(top.exit_code == 0);
      const nlohmann::json summaries = nlohmann::json::parse(summary.out)["files"];
      const nlohmann::json ranks = nlohmann::json::parse(top.out)["ranks"]["ranks"];
      REQUIRE(summaries.size() == files.size());
      REQUIRE(ranks.size() == files.size());
      for (size_t i = 0; i < files.size(); ++i) {
        CAPTURE(files[i]);
        absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(files[i]);
        REQUIRE_MESSAGE(snap.ok(), snap.status().message());
        const nlohmann::json alone =
            nlohmann::json::parse(report::SummaryToJson(analysis::Summarize(*snap)).dump());
        CHECK(summaries[i] == alone);
        absl::StatusOr<analysis::RankFigures> f = analysis::TopRankFigures(
            *snap, analysis::Moment{analysis::Moment::Kind::kPeak, 0}, "peak", {}, std::nullopt);
        REQUIRE(f.ok());
        if (f->peak_bytes < 0) {
          CHECK(ranks[i]["peak_bytes"].is_null());  // no trace
        } else {
          CHECK(ranks[i]["peak_bytes"] == f->peak_bytes);
        }
        CHECK(ranks[i]["top_site"] == f->top_site);
      }
    }
  }

  TEST_CASE("check over the corpus against itself as a baseline directory passes every file" *
            doctest::test_suite("corpus")) {
    std::optional<std::string> dir = testing::CorpusDir();
    if (!dir) return;  // skipped: the corpus is absent
    testing::RunResult r = testing::RunMemsnap({"check", "--json", "--baseline", *dir, *dir});
    REQUIRE(r.exit_code == 0);
    nlohmann::json j = nlohmann::json::parse(r.out);
    CHECK(j["passed"] == true);
    CHECK(j["files"].size() == testing::CorpusFiles().size());
    for (const auto& f : j["files"]) CHECK(f["checks"].size() >= 2);  // reserved, allocated
  }
}

}  // namespace
}  // namespace memsnap
