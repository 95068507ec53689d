// Known-answer tests of `check`: the figures it measures, thresholds and baseline tolerances, its
// errors, the growing sites of a known leak, and the JUnit/Markdown outputs.
#include "memsnap/analysis/compose/check.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/check_render.h"
#include "test_util.h"

namespace memsnap::analysis {
namespace {

using testing::LoadFixture;

using testing::kMiB;

CheckReport Run(const CheckMetrics& cur, const CheckMetrics* base, const CheckOptions& o) {
  auto r = RunChecks(cur, base, o);
  REQUIRE_MESSAGE(r.ok(), r.status().message());
  return *r;
}

TEST_SUITE("check") {
  TEST_CASE("check measures peak, reserved, allocated and frag's stranded share of a fixture") {
    Snapshot snap = LoadFixture("check_new.json");
    CheckMetrics m = MeasureForCheck(snap);
    REQUIRE(m.peak_bytes.has_value());
    CHECK(*m.peak_bytes == 18 * kMiB);
    CHECK(m.reserved_bytes == 40 * kMiB);
    CHECK(m.allocated_bytes == 18 * kMiB);
    // --max-frag gates on the figure of frag's verdict, not on a figure of its own.
    absl::StatusOr<FragReport> frag = AnalyzeFragmentation(snap);
    REQUIRE(frag.ok());
    REQUIRE(frag->costs.size() == 1);
    const FragFigures& at = frag->costs[0].figures;
    REQUIRE(at.reserved_bytes > 0);
    CHECK(m.stranded_share == doctest::Approx(static_cast<double>(at.stranded_bytes) /
                                              static_cast<double>(at.reserved_bytes)));
    CheckMetrics no_trace = MeasureForCheck(LoadFixture("frag_basic.json"));
    CHECK(!no_trace.peak_bytes.has_value());
  }

  TEST_CASE("check thresholds pass at the limit and fail one byte above") {
    CheckMetrics m;
    m.path = "new.pickle";
    m.peak_bytes = 100;
    m.reserved_bytes = 200;
    m.allocated_bytes = 150;
    m.stranded_share = 0.25;
    CheckOptions o;
    o.max_peak = 100;
    o.max_reserved = 199;
    o.max_allocated = 150;
    o.max_frag = 0.2;
    CheckReport r = Run(m, nullptr, o);
    REQUIRE(r.checks.size() == 4);
    CHECK(r.checks[0].metric == CheckMetric::kPeak);
    CHECK(report::CheckToJson(r)["checks"][0]["name"] == "peak <= 100 B");
    CHECK(r.checks[0].passed);
    CHECK_FALSE(r.checks[0].failure.has_value());
    CHECK(!r.checks[1].passed);
    // A failure is typed: its reason and figures, value over limit by `over`.
    REQUIRE(r.checks[1].failure.has_value());
    CHECK(r.checks[1].failure->reason == CheckReason::kOverLimit);
    CHECK(r.checks[1].failure->value == 200);
    CHECK(r.checks[1].failure->limit == 199);
    CHECK(r.checks[1].failure->over == 1);
    CHECK(r.checks[2].passed);
    CHECK(r.checks[3].metric == CheckMetric::kStranded);
    CHECK(report::CheckToJson(r)["checks"][3]["name"] == "stranded <= 20.0%");
    CHECK(!r.checks[3].passed);
    REQUIRE(r.checks[3].failure.has_value());
    CHECK(r.checks[3].failure->over == doctest::Approx(0.05));
    CHECK(r.failures() == 2);
    CHECK(!r.passed());
  }

  TEST_CASE("check --fits passes when the replay fits and fails with the oom explanation") {
    Snapshot snap = LoadFixture("oom_fragmentation.json");
    CheckOptions o;
    o.fits = 80 * kMiB;
    CheckReport pass = Run(MeasureForCheck(snap, &o), nullptr, o);
    REQUIRE(pass.checks.size() == 1);
    CHECK(pass.checks[0].passed);
    CHECK(pass.checks[0].value == 70 * kMiB);  // the replay's peak reserved
    o.fits = 30 * kMiB;
    CheckReport fail = Run(MeasureForCheck(snap, &o), nullptr, o);
    CHECK_FALSE(fail.passed());
    REQUIRE(fail.checks[0].failure.has_value());
    const CheckFailure& why = *fail.checks[0].failure;
    CHECK(why.reason == CheckReason::kDoesNotFit);
    CHECK(why.event == 4);
    REQUIRE(fail.fits.has_value());
    CHECK(fail.fits->ooms[0].verdict == OomVerdict::kFragmentation);
    // The figures describe the failure the words state: its reason, and a need over the card.
    CHECK(why.verdict == OomVerdict::kFragmentation);
    CHECK(fail.checks[0].value == why.value);
    CHECK(fail.checks[0].limit == 30.0 * kMiB);
    CHECK(why.limit == 30.0 * kMiB);
    CHECK(why.value > 30 * kMiB);
    CHECK(why.over == why.value - why.limit);
    CHECK(report::CheckToJson(fail).dump().find("\"reason\":\"fragmentation\"") !=
          std::string::npos);
    CHECK(report::CheckToJunit(fail).find("answer: fragmentation: at event:4") !=
          std::string::npos);
    // Without a trace the fit is the dumped state placed on the device: its 36 MiB of live
    // blocks do not fit 30 MiB (never a pass on memory that was not replayed), and fit 82 MiB.
    CheckMetrics none = MeasureForCheck(LoadFixture("frag_basic.json"), &o);
    absl::StatusOr<CheckReport> dump_only = RunChecks(none, nullptr, o);
    REQUIRE(dump_only.ok());
    CHECK_FALSE(dump_only->passed());
    REQUIRE(dump_only->checks[0].failure.has_value());
    CHECK(dump_only->checks[0].failure->value >= 36 * kMiB);
    o.fits = 82 * kMiB;
    CheckMetrics roomy = MeasureForCheck(LoadFixture("frag_basic.json"), &o);
    absl::StatusOr<CheckReport> fits = RunChecks(roomy, nullptr, o);
    REQUIRE(fits.ok());
    CHECK(fits->passed());
  }

  TEST_CASE("a failed byte check states the exact bytes and how far over the limit they are") {
    CheckMetrics m;
    m.path = "x";
    m.reserved_bytes = 3865470566;
    CheckOptions o;
    o.max_reserved = 3852887654;
    CheckReport r = Run(m, nullptr, o);
    std::ostringstream text;
    report::RenderCheckText(r, text);
    CHECK(text.str().find(
              "reserved 3,865,470,566 B exceeds 3,852,887,654 B by +12.0 MiB, 0.3% over") !=
          std::string::npos);
  }

  TEST_CASE("check baseline allows exactly the tolerance") {
    CheckMetrics base, cur;
    base.path = "base.pickle";
    base.peak_bytes = 1000;
    base.reserved_bytes = 1000;
    base.allocated_bytes = 1000;
    cur = base;
    cur.path = "new.pickle";
    cur.peak_bytes = 1050;
    cur.reserved_bytes = 1051;
    cur.allocated_bytes = 900;
    CheckOptions o;
    o.tolerance = 0.05;
    CheckReport r = Run(cur, &base, o);
    REQUIRE(r.checks.size() == 3);
    CHECK(report::CheckToJson(r)["checks"][0]["name"] == "peak vs baseline (+5.0%)");
    CHECK(r.checks[0].tolerance == 0.05);
    CHECK(r.checks[0].passed);
    CHECK(r.checks[0].limit == 1050);
    CHECK(!r.checks[1].passed);
    REQUIRE(r.checks[1].failure.has_value());
    CHECK(r.checks[1].failure->reason == CheckReason::kOverBaseline);
    CHECK(r.checks[1].failure->baseline == 1000);
    CHECK(r.checks[1].failure->over == 1);
    CHECK(r.checks[2].passed);
    CHECK(r.baseline_path == "base.pickle");
  }

  TEST_CASE("check skips the peak comparison with a note when a file has no trace") {
    CheckMetrics base, cur;
    base.path = "base.pickle";
    cur.path = "new.pickle";
    cur.peak_bytes = 5;
    CheckReport r = Run(cur, &base, CheckOptions{});
    CHECK(r.checks.size() == 2);
    CHECK(r.peak_uncompared_file == "base.pickle");
    CHECK(report::CheckNotes(r) ==
          std::vector<std::string>{"peak not compared: base.pickle has no trace"});
  }

  TEST_CASE("check refuses to run without any check and --max-peak without a trace") {
    CheckMetrics m;
    m.path = "new.pickle";
    auto none = RunChecks(m, nullptr, CheckOptions{});
    REQUIRE(!none.ok());
    CHECK(std::string(none.status().message()) ==
          "nothing to check: give --max-peak, --max-reserved, --max-allocated, --max-frag, --fits "
          "and/or --baseline");
    CheckOptions o;
    o.max_peak = 1;
    auto peak = RunChecks(m, nullptr, o);
    REQUIRE(!peak.ok());
    CHECK(std::string(peak.status().message()) ==
          "new.pickle: --max-peak needs a trace (device_traces) and this file has none");
  }

  TEST_CASE("a rank without its baseline fails a check naming the file looked for") {
    CheckMetrics m;
    m.path = "ranks/rank5.pickle";
    m.reserved_bytes = 10;
    // Without a threshold the missing baseline is the one check, and it fails.
    auto alone = RunChecksWithoutBaseline(m, "base/rank5.pickle", CheckOptions{});
    REQUIRE(alone.ok());
    REQUIRE(alone->checks.size() == 1);
    CHECK_FALSE(alone->passed());
    CHECK(alone->failures() == 1);
    CHECK(alone->checks[0].metric == CheckMetric::kBaselineFile);
    REQUIRE(alone->checks[0].failure);
    CHECK(alone->checks[0].failure->reason == CheckReason::kNoBaseline);
    CHECK(alone->checks[0].failure->baseline_file == "base/rank5.pickle");
    // The thresholds are still checked, and their errors still returned.
    CheckOptions o;
    o.max_reserved = 100;
    auto with = RunChecksWithoutBaseline(m, "base/rank5.pickle", o);
    REQUIRE(with.ok());
    CHECK(with->checks.size() == 2);
    CHECK(with->failures() == 1);
    o.max_peak = 1;
    CHECK_FALSE(RunChecksWithoutBaseline(m, "base/rank5.pickle", o).ok());  // no trace
    const nlohmann::ordered_json j = report::CheckToJson(*alone);
    CHECK(j["passed"] == false);
    CHECK(j["checks"][0]["metric"] == "baseline_file");
    CHECK(j["checks"][0]["baseline_file"] == "base/rank5.pickle");
    CHECK(j["checks"][0]["value"].is_null());
  }

  TEST_CASE("check names the leaking site as the top growing site, and its kind of memory") {
    Snapshot base = LoadFixture("check_base.json");
    Snapshot cur = LoadFixture("check_new.json");
    for (bool at_peak : {false, true}) {
      CAPTURE(at_peak);
      auto grown = TopGrowingSites(base, cur, 5, at_peak, false, CategoryNames());
      REQUIRE_MESSAGE(grown.ok(), grown.status().message());
      REQUIRE(grown->sites.size() == 1);
      const SiteDelta& site = grown->sites.front();
      CHECK(site.frames.front() == "train.py:42:cache_activations");
      CHECK(site.delta_bytes() == 10 * kMiB);
      // At the end that site is the only change, so its own kind grew by as much and no other
      // kind changed; at the peaks other sites shrink too.
      if (at_peak) continue;
      const auto kind = static_cast<size_t>(site.category());
      for (size_t c = 0; c < grown->kinds.before.size(); ++c) {
        CAPTURE(c);
        CHECK(grown->kinds.after[c] - grown->kinds.before[c] == (c == kind ? 10 * kMiB : 0));
      }
    }
    auto none = TopGrowingSites(cur, base, 5, false, false, CategoryNames());
    REQUIRE(none.ok());
    CHECK(none->sites.empty());
  }

  TEST_CASE("check writes JUnit XML that an XML parser reads, with escaped names") {
    CheckMetrics base, cur;
    base.path = "base<&>.pickle";
    base.reserved_bytes = 10;
    base.allocated_bytes = 10;
    cur = base;
    cur.path = "new \"x\".pickle";
    cur.reserved_bytes = 20;
    CheckOptions o;
    o.max_reserved = 100;
    CheckReport r = Run(cur, &base, o);
    std::string path = testing::TempDir() + "/junit.xml";
    std::ofstream(path) << report::CheckToJunit(r);
    std::string out = testing::RunPython(
        "import xml.etree.ElementTree as ET\n"
        "root = ET.parse('" +
        path +
        "').getroot()\n"
        "suite = root.find('testsuite')\n"
        "print(root.get('tests'), root.get('failures'), suite.get('name'))\n"
        "for case in suite.findall('testcase'):\n"
        "    f = case.find('failure')\n"
        "    print(case.get('name'), '|', f.get('message') if f is not None else 'ok')\n");
    CHECK(out ==
          "3 1 memsnap check new \"x\".pickle\n"
          "reserved <= 100 B | ok\n"
          "reserved vs baseline (+0.0%) | reserved 20 B exceeds 10 B by +10 B, 100.0% over "
          "(baseline 10 B, +10 B)\n"
          "allocated vs baseline (+0.0%) | ok\n");
    std::string md = report::CheckToMarkdown(r);
    CHECK(md.find("| reserved vs baseline (+0.0%) | 20 B | 10 B | 10 B | **FAIL** (+10 B, 100.0% "
                  "over) |") != std::string::npos);
  }

  TEST_CASE("every corpus file passes a check against itself with zero tolerance" *
            doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      auto snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      CheckMetrics m = MeasureForCheck(*snap);
      CheckReport r = Run(m, &m, CheckOptions{});
      INFO(path);
      CHECK(r.passed());
      CHECK(m.reserved_bytes >= m.allocated_bytes);
      CHECK(m.stranded_share >= 0.0);
      CHECK(m.stranded_share <= 1.0);
    }
  }
}

}  // namespace
}  // namespace memsnap::analysis
