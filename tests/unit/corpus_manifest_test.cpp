// The real corpus (MEMSNAP_CORPUS_DIR): every file parses and its figures equal manifest.json.
// Reported as skipped when the corpus is absent (testing::CorpusDir).
#include <doctest/doctest.h>

#include <fstream>
#include <map>

#include "memsnap/analysis/sites/summary.h"
#include "memsnap/parse/reader.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace memsnap {

TEST_SUITE("corpus") {
  TEST_CASE("every corpus file parses and matches manifest.json") {
    auto dir = testing::CorpusDir();
    if (!dir) return;  // skipped: the corpus is absent
    std::ifstream f(*dir + "/manifest.json");
    nlohmann::json manifest = nlohmann::json::parse(f);
    REQUIRE(manifest.is_array());
    REQUIRE(manifest.size() == testing::CorpusFiles().size());
    for (const auto& entry : manifest) {
      std::string file = entry.at("file").get<std::string>();
      CAPTURE(file);
      auto snap = parse::ReadSnapshot(*dir + "/" + file);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      CHECK(snap->source.pickle_protocol == entry.at("proto").get<int>());
      analysis::SummaryReport r = analysis::Summarize(*snap);
      CHECK(r.totals.segments == entry.at("segments").get<int64_t>());
      CHECK(r.totals.blocks == entry.at("blocks").get<int64_t>());
      CHECK(r.totals.trace_entries == entry.at("trace_entries").get<int64_t>());
      CHECK(r.totals.reserved_bytes == entry.at("reserved_bytes").get<int64_t>());
      std::map<std::string, int64_t> actions;
      for (int a = 0; a < kNumActions; ++a) {
        if (r.totals.actions[a] > 0) {
          actions[std::string(ActionName(static_cast<Action>(a)))] = r.totals.actions[a];
        }
      }
      CHECK(actions == entry.at("actions").get<std::map<std::string, int64_t>>());
      std::vector<int64_t> per_device;
      for (const DeviceTrace& t : snap->traces) per_device.push_back(t.size());
      CHECK(per_device == entry.at("per_device").get<std::vector<int64_t>>());
    }
  }
}

}  // namespace memsnap
