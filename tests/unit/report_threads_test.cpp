// The report's analysis runs its phases on two threads (docs/report.md, "Size and speed"): the
// allocator states and then the sites on a worker, the level of detail and the bands on the
// caller's. scripts/tsan.sh runs this file under ThreadSanitizer.
#include <doctest/doctest.h>

#include <string>

#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/report/html_report.h"
#include "test_util.h"

namespace memsnap {
namespace {

TEST_SUITE("report") {
  TEST_CASE("the report's analysis on two threads gives the same page every time") {
    // A trace with its allocator states, one that ran out of memory (the explanation runs beside
    // the bands' wait), and a training run with phases and kinds of memory.
    for (const char* name : {"frag_trace.json", "oom_demand.json", "attribution_training.json"}) {
      INFO(name);
      const Snapshot snap = testing::LoadFixture(name);
      std::string first;
      for (int run = 0; run < 3; ++run) {
        absl::StatusOr<analysis::ReportAnalysis> a = analysis::AnalyzeForReport(snap, {});
        REQUIRE_MESSAGE(a.ok(), a.status().message());
        CHECK(!a->devices.empty());
        const std::string page = report::BuildReportData(snap, *a).dump();
        if (run == 0) {
          first = page;
        } else {
          CHECK(page == first);
        }
      }
    }
  }
}

}  // namespace
}  // namespace memsnap
