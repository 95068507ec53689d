#include <doctest/doctest.h>

#include <sstream>

#include "memsnap/analysis/timeline.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/html_report.h"
#include "test_util.h"

namespace memsnap {
namespace {

using analysis::DeviceTimeline;
using report::CurveColumns;
using testing::ParseOrFail;
using testing::PythonPickle;

Snapshot Basic() { return ParseOrFail(PythonPickle("load_json('report_basic.json')")); }

/// rest + Σ sizes of the bands live at each column's sample == live bytes there == live_max.
void CheckBandInvariant(const DeviceTimeline& dt, const CurveColumns& cols,
                        const std::vector<report::Band>& bands, const std::vector<int64_t>& rest) {
  for (size_t c = 0; c < cols.size(); ++c) {
    int64_t e = cols.sample_event[c];
    int64_t sum = rest[c];
    for (const report::Band& b : bands) {
      if (dt.blocks[b.lifetime].LiveAfter(e)) sum += dt.blocks[b.lifetime].requested_size;
    }
    REQUIRE(sum == dt.LiveAt(e));
    REQUIRE(cols.live_max[c] == dt.LiveAt(e));
    REQUIRE(cols.live_min[c] <= cols.live_max[c]);
    REQUIRE(cols.reserved_min[c] <= cols.reserved_max[c]);
  }
}

TEST_SUITE("report") {
  TEST_CASE("downsampling keeps each column's minimum and maximum") {
    Snapshot snap = Basic();
    auto tl = analysis::ReconstructTimeline(snap);
    REQUIRE(tl.ok());
    const DeviceTimeline& dt = tl->devices[0];
    REQUIRE(dt.num_events == 9);
    // Times 1000..1070 in 3 columns of 23.3 us: [1000,1023) [1023,1046) [1046,1070].
    CurveColumns cols = report::DownsampleCurves(snap, dt, 3);
    REQUIRE(cols.size() == 3);
    CHECK(cols.has_time);
    CHECK(cols.t0_us == 1000);
    CHECK(cols.x_hi == 70);
    CHECK(cols.live_min == std::vector<int64_t>{0, 12194304, 16389608});
    CHECK(cols.live_max == std::vector<int64_t>{12194304, 20583912, 20583912});
    CHECK(cols.reserved_min == std::vector<int64_t>{0, 23068672, 23068672});
    CHECK(cols.reserved_max == std::vector<int64_t>{20971520, 23068672, 23068672});
    CHECK(cols.sample_event == std::vector<int64_t>{2, 5, 6});
  }

  TEST_CASE("downsampling never makes more columns than events, and empty columns carry the state") {
    Snapshot snap = Basic();
    auto tl = analysis::ReconstructTimeline(snap);
    const DeviceTimeline& dt = tl->devices[0];
    CHECK(report::DownsampleCurves(snap, dt, 2000).size() == 9);
    CHECK(report::DownsampleCurves(snap, tl->devices[1], 2000).size() == 0);  // no trace
    // 9 columns of 7.8 us: events fall in columns 0 1 2 3 3 5 6 7 8; column 4 shows the state
    // after the last earlier event; the initial state (-1) is in column 0.
    CurveColumns cols = report::DownsampleCurves(snap, dt, 9);
    REQUIRE(cols.size() == 9);
    CHECK(cols.sample_event == std::vector<int64_t>{-1, 1, 2, 4, 4, 5, 6, 7, 8});
    CHECK(cols.live_min[4] == 12195304);
    CHECK(cols.live_max[4] == 12195304);
    CHECK(cols.live_max[7] == 16389608);
  }

  TEST_CASE("bands stack in allocation order under the folded band and add up to the live bytes") {
    Snapshot snap = Basic();
    auto tl = analysis::ReconstructTimeline(snap);
    const DeviceTimeline& dt = tl->devices[0];
    CurveColumns cols = report::DownsampleCurves(snap, dt, 100);
    SUBCASE("all lifetimes as bands") {
      std::vector<uint32_t> chosen = report::SelectBandLifetimes(snap, dt, cols, 10);
      REQUIRE(chosen.size() == 4);
      // Allocation order: weights (event 1), activation (2), optimizer (4), attention (5).
      CHECK(dt.blocks[chosen[0]].alloc_event == 1);
      CHECK(dt.blocks[chosen[3]].alloc_event == 5);
      std::vector<int64_t> rest;
      auto bands = report::StackBands(dt, cols, chosen, 0, rest);
      CheckBandInvariant(dt, cols, bands, rest);
      for (int64_t r : rest) CHECK(r == 0);
      // The attention block sits on the weights once the activation below it is freed.
      const report::Band& attn = bands[3];
      REQUIRE(attn.bottoms.size() == 2);
      CHECK(attn.bottoms[0].second == 8000000 + 4194304 + 1000);
      CHECK(attn.bottoms[1].second == 8000000 + 1000);
    }
    SUBCASE("two bands, the rest folded") {
      std::vector<uint32_t> chosen = report::SelectBandLifetimes(snap, dt, cols, 2);
      REQUIRE(chosen.size() == 2);
      std::vector<int64_t> rest;
      auto bands = report::StackBands(dt, cols, chosen, 0, rest);
      CheckBandInvariant(dt, cols, bands, rest);
      CHECK(rest.back() > 0);
    }
  }

  TEST_CASE("the report data has the peak, the sites at the peak and the segment map") {
    Snapshot snap = Basic();
    auto data = report::BuildReportData(snap, report::HtmlReportOptions{});
    REQUIRE(data.ok());
    const auto& j = *data;
    CHECK(j["mode"] == "single");
    REQUIRE(j["devices"].size() == 2);
    CHECK(j["devices"][0]["peak"]["bytes"] == 20583912);
    CHECK(j["devices"][0]["peak"]["x"] == 40.0);
    CHECK(j["devices"][0]["bands"].size() == 4);
    CHECK(!j["devices"][1].contains("curve"));
    // Device 0 at its peak (4 blocks) plus device 1 at its end (one ghost block).
    CHECK(j["peak_sites"]["total_bytes"] == 20583912 + 512);
    CHECK(j["peak_sites"]["rows"][0]["bytes"] == 8388608);
    CHECK(j["alloc_sites"]["total_count"] == 5);
    CHECK(j["segments"]["reserved_bytes"] == 20971520 + 2097152 + 2097152);
    CHECK(j["segments"]["segments"].size() == 3);
    CHECK(j["replay"].is_null());
  }

  TEST_CASE("the diff data has both curves and the sites before, after and delta") {
    Snapshot before = ParseOrFail(PythonPickle("load_json('summary_basic.json')"), "before");
    Snapshot after = Basic();
    auto data = report::BuildDiffData(before, after, report::HtmlReportOptions{});
    REQUIRE(data.ok());
    const auto& j = *data;
    CHECK(j["mode"] == "diff");
    CHECK(j["moment"] == "peak");
    CHECK(j["before"]["devices"][0].contains("curve"));
    CHECK(j["after"]["devices"][0]["peak_bytes"] == 20583912);
    REQUIRE(!j["sites"].empty());
    int64_t delta = 0;
    for (const auto& s : j["sites"]) delta += s["after"].get<int64_t>() - s["before"].get<int64_t>();
    CHECK(delta == j["live_bytes"][1].get<int64_t>() - j["live_bytes"][0].get<int64_t>());
  }

#if __has_include("memsnap/analysis/replay.h")
  TEST_CASE("--replay adds the simulated reserved curves, the recorded settings first") {
    Snapshot snap = Basic();
    report::HtmlReportOptions options;
    options.replay_confs = {"expandable_segments:True"};
    auto data = report::BuildReportData(snap, options);
    REQUIRE(data.ok());
    const auto& rp = (*data)["replay"];
    REQUIRE(rp["runs"].size() == 2);
    CHECK(rp["runs"][0]["conf"] == "recorded");
    CHECK(rp["runs"][1]["conf"] == "expandable_segments:True");
    for (const auto& run : rp["runs"]) {
      REQUIRE(run.contains("curve"));
      CHECK(run["curve"]["reserved_max"].size() == (*data)["devices"][0]["curve"]["live_max"].size());
      CHECK(run["peak_reserved"].get<int64_t>() >= 20583912);  // at least the live peak
    }
    options.replay_confs = {"max_split_size_mb:abc"};
    auto bad = report::BuildReportData(snap, options);
    REQUIRE(!bad.ok());
    CHECK(std::string(bad.status().message()).find("--replay max_split_size_mb:abc: ") == 0);
  }
#endif

  TEST_CASE("the page escapes text that could close its script element") {
    Snapshot snap = Basic();
    auto data = report::BuildReportData(snap, report::HtmlReportOptions{});
    REQUIRE(data.ok());
    std::ostringstream page;
    report::WriteHtmlPage(*data, page);
    std::string html = page.str();
    // The frame "attn</script><b>" is in the data, escaped; only the page's own two script
    // elements close.
    size_t closes = 0;
    for (size_t p = html.find("</script>"); p != std::string::npos; p = html.find("</script>", p + 1)) {
      ++closes;
    }
    CHECK(closes == 2);
    CHECK(html.find("attn\\u003c/script>\\u003cb>") != std::string::npos);
    CHECK(html.find("<script src") == std::string::npos);  // self-contained: nothing to fetch
    // No network: the only URL is the SVG namespace name, which is never fetched.
    std::string rest = html;
    for (size_t p; (p = rest.find("http://www.w3.org/2000/svg")) != std::string::npos;) {
      rest.erase(p, 26);
    }
    CHECK(rest.find("http://") == std::string::npos);
    CHECK(rest.find("https://") == std::string::npos);
  }
}

}  // namespace
}  // namespace memsnap
