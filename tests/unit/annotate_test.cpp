// `annotate` trace entries (PyTorch's torch.cuda.memory._annotate_memory): metadata attached to a
// live block after its alloc. They are read as their own action, never paired as an alloc or a
// free, counted in the summary, and kept by convert.
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "memsnap/analysis/sites/summary.h"
#include "memsnap/writer/snapshot_writer.h"
#include "test_util.h"

namespace memsnap {
namespace {

constexpr uint64_t kFirst = 139637976727552u, kSecond = 139637976728576u;

// The annotate entries of `s`, as (address, user_metadata text), in trace order.
std::vector<std::pair<uint64_t, std::string>> Annotations(const Snapshot& s) {
  std::vector<std::pair<uint64_t, std::string>> out;
  for (uint32_t i = 0; i < s.events.size(); ++i) {
    if (s.events[i].action != Action::kAnnotate) continue;
    const EventExtra* x = s.ExtraOf(i);
    out.emplace_back(s.events[i].addr, x != nullptr && x->user_metadata.valid()
                                           ? std::string(s.strings.Get(x->user_metadata))
                                           : std::string());
  }
  return out;
}

void CheckAnnotations(const Snapshot& s) {
  CHECK(s.diagnostics.warnings.empty());
  const auto a = Annotations(s);
  REQUIRE(a.size() == 3);
  CHECK(a[0] == std::pair<uint64_t, std::string>{kFirst, "saved for backward"});
  CHECK(a[1] == std::pair<uint64_t, std::string>{kSecond, "kv cache"});
  CHECK(a[2].first == kFirst);
  CHECK(a[2].second.find("optimizer") != std::string::npos);  // the dict, as text
}

std::string Fixture() {
  return testing::ReadFileOrFail(testing::TestdataPath("formats/annotate.json"));
}

}  // namespace

TEST_SUITE("annotate") {
  TEST_CASE("annotate entries read without a warning from JSON and from a pickle") {
    CheckAnnotations(testing::ParseOrFail(Fixture(), "annotate.json"));
    CheckAnnotations(testing::ParseOrFail(
        testing::PythonPickle("load_json('formats/annotate.json')"), "annotate.pickle"));
  }

  TEST_CASE("the summary counts annotate entries as their own action and not as allocs") {
    const Snapshot s = testing::ParseOrFail(Fixture(), "annotate.json");
    const analysis::SummaryReport r = analysis::Summarize(s);
    REQUIRE(r.devices.size() == 1);
    const auto& actions = r.devices[0].totals.actions;
    CHECK(actions[static_cast<int>(Action::kAnnotate)] == 3);
    CHECK(actions[static_cast<int>(Action::kAlloc)] == 2);
    CHECK(actions[static_cast<int>(Action::kUnknown)] == 0);
  }

  TEST_CASE("convert keeps annotate entries and their metadata through pickle and JSON") {
    const Snapshot s = testing::ParseOrFail(Fixture(), "annotate.json");
    std::ostringstream pickle;
    REQUIRE(writer::WriteSnapshotPickle(s, {}, pickle).ok());
    const Snapshot from_pickle = testing::ParseOrFail(pickle.str(), "back.pickle");
    CheckAnnotations(from_pickle);
    std::ostringstream json;
    REQUIRE(writer::WriteSnapshotJson(from_pickle, {}, json).ok());
    const Snapshot from_json = testing::ParseOrFail(json.str(), "back.json");
    CheckAnnotations(from_json);
    std::ostringstream again;
    REQUIRE(writer::WriteSnapshotPickle(from_json, {}, again).ok());
    CHECK(again.str() == pickle.str());
  }
}

}  // namespace memsnap
