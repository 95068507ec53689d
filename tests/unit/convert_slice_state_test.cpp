// `memsnap convert --to`: a slice holds the allocator state at its end (issue 52), so every
// command reads it the way its trace explains: its peak and the kinds at its peak are those of
// the whole file at that event.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "doctest/doctest.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace memsnap {
namespace {

using nlohmann::json;
using testing::RunMemsnap;

json RunJson(const std::vector<std::string>& args) {
  testing::RunResult r = RunMemsnap(args);
  INFO(absl::StrJoin(args, " "), ": ", r.err);
  REQUIRE((r.exit_code == 0 || r.exit_code == 1));
  return json::parse(r.out);
}

// A device of two segments, 16 MiB large one created in the trace and a 2 MiB small one older
// than it holding a block allocated before the trace and freed in it by the optimizer (event 8).
constexpr uint64_t kLarge = 0x7f0000000000;
constexpr uint64_t kSmall = 0x7f0100000000;
using testing::kMiB;

std::string FixtureJson(bool alloc_after_end_state = false) {
  auto frames = [](const char* fn) {
    const bool step = std::string(fn) == "step";
    return json::array(
        {{{"name", fn}, {"filename", step ? "torch/optim/adam.py" : "model.py"}, {"line", 7}},
         {{"name", "<module>"}, {"filename", "train.py"}, {"line", 3}}});
  };
  auto ev = [&](const char* action, uint64_t addr, int64_t size, int t) {
    return json{{"action", action},
                {"addr", addr},
                {"size", size},
                {"stream", 0},
                {"time_us", 1700000000000000 + t},
                {"frames", frames(addr == kSmall ? "step" : "forward")}};
  };
  json trace = json::array({
      ev("segment_alloc", kLarge, 16 * kMiB, 0),
      ev("alloc", kLarge, 4 * kMiB, 1),
      ev("alloc", kLarge + 4 * kMiB, 8 * kMiB, 2),
      ev("free_requested", kLarge, 4 * kMiB, 3),
      ev("free_completed", kLarge, 4 * kMiB, 4),
      ev("alloc", kLarge + 12 * kMiB, 2 * kMiB, 5),
      ev("free_requested", kLarge + 4 * kMiB, 8 * kMiB, 6),
      ev("free_completed", kLarge + 4 * kMiB, 8 * kMiB, 7),
      ev("free_requested", kSmall, 1000, 8),
      ev("free_completed", kSmall, 1000, 9),
  });
  // An alloc the final state does not hold, and no free of it: the trace after a cut before it
  // cannot be undone consistently.
  if (alloc_after_end_state) trace.push_back(ev("alloc", kLarge + 14 * kMiB, kMiB, 10));
  auto block = [&](uint64_t addr, int64_t size, int64_t requested, const char* state) {
    return json{{"address", addr},
                {"size", size},
                {"requested_size", requested},
                {"state", state},
                {"frames", std::string(state) == "inactive" ? json::array() : frames("forward")}};
  };
  auto segment = [&](uint64_t addr, int64_t size, const char* type, json blocks, int64_t alloc) {
    return json{{"device", 0},
                {"address", addr},
                {"total_size", size},
                {"allocated_size", alloc},
                {"active_size", alloc},
                {"requested_size", alloc},
                {"stream", 0},
                {"segment_type", type},
                {"segment_pool_id", json::array({0, 0})},
                {"is_expandable", false},
                {"frames", json::array()},
                {"blocks", blocks}};
  };
  json segments = json::array(
      {segment(kLarge, 16 * kMiB, "large",
               json::array({block(kLarge, 12 * kMiB, 0, "inactive"),
                            block(kLarge + 12 * kMiB, 2 * kMiB, 2 * kMiB, "active_allocated"),
                            block(kLarge + 14 * kMiB, 2 * kMiB, 0, "inactive")}),
               2 * kMiB),
       segment(kSmall, 2 * kMiB, "small", json::array({block(kSmall, 2 * kMiB, 0, "inactive")}),
               0)});
  return json{{"segments", segments}, {"device_traces", json::array({trace})}}.dump();
}

// The active blocks of device 0 in a written snapshot: address -> {size, requested, state}.
std::map<uint64_t, std::tuple<int64_t, int64_t, std::string>> ActiveBlocks(const json& snap) {
  std::map<uint64_t, std::tuple<int64_t, int64_t, std::string>> out;
  for (const json& s : snap["segments"]) {
    for (const json& b : s["blocks"]) {
      if (b["state"] == "inactive") continue;
      out[b["address"].get<uint64_t>()] = {b["size"].get<int64_t>(),
                                           b["requested_size"].get<int64_t>(),
                                           b["state"].get<std::string>()};
    }
  }
  return out;
}

// The kinds with bytes, as `top --json`'s `categories` and summary's `categories_at_peak` print.
std::map<std::string, int64_t> Kinds(const json& categories) {
  std::map<std::string, int64_t> out;
  for (const auto& [k, v] : categories.items()) {
    if (v.get<int64_t>() != 0) out[k] = v.get<int64_t>();
  }
  return out;
}

TEST_SUITE("convert") {
  TEST_CASE("a slice to event N holds the allocator state before event N, not the end state") {
    const std::string in = testing::WriteTemp("slice_state_in.json", FixtureJson());
    const std::string out = testing::TempDir() + "/slice_state_out.json";
    testing::RunResult r = RunMemsnap({"convert", "--force", "--to", "event:5", in, out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.empty());
    const json snap = json::parse(testing::ReadFileOrFail(out));
    REQUIRE(snap["device_traces"][0].size() == 5);
    // After event 4: the 8 MiB block is live, the 4 MiB one freed, the 2 MiB one not yet
    // allocated, and the block older than the trace (freed at event 9) still live, with the
    // small pool's rounding of its request and the stack the trace gave it.
    const auto active = ActiveBlocks(snap);
    CHECK(active.size() == 2);
    CHECK(active.at(kLarge + 4 * kMiB) ==
          std::tuple<int64_t, int64_t, std::string>{8 * kMiB, 8 * kMiB, "active_allocated"});
    CHECK(active.at(kSmall) ==
          std::tuple<int64_t, int64_t, std::string>{1024, 1000, "active_allocated"});
    for (const json& s : snap["segments"]) {
      int64_t tiled = 0;
      for (const json& b : s["blocks"]) {
        tiled += b["size"].get<int64_t>();
        if (b["state"] != "inactive") CHECK(b["frames"].size() == 2);
      }
      CHECK(tiled == s["total_size"].get<int64_t>());
      if (s["address"] == kLarge) CHECK(s["allocated_size"] == 8 * kMiB);
    }

    // Every command reads the slice as the whole file at each of its events: the live bytes,
    // the peak, and the kinds of the blocks whose fate the slice holds (the 8 MiB one, freed
    // after it, is a temporary to the whole file and kept to the slice, which stops before).
    for (int e = 0; e < 5; ++e) {
      CAPTURE(e);
      const json full = RunJson({"top", "--json", "--at", absl::StrCat("event:", e), in});
      const json slice = RunJson({"top", "--json", "--at", absl::StrCat("event:", e), out});
      CHECK(slice["total_bytes"] == full["total_bytes"]);
      if (e < 2) CHECK(Kinds(slice["categories"]) == Kinds(full["categories"]));
    }
    const json at1 = RunJson({"top", "--json", "--at", "event:1", out});
    CHECK(Kinds(at1["categories"]) ==
          std::map<std::string, int64_t>{{"optimizer_state", 1000}, {"temporary", 4 * kMiB}});
    const json summary = RunJson({"summary", "--json", out});
    REQUIRE(summary["devices"][0].contains("peaks"));
    CHECK(summary["devices"][0]["peaks"]["live_bytes"] == 12 * kMiB + 1000);
    CHECK(summary["devices"][0]["peaks"]["live_event"] == 2);
    for (const json& c : summary["categories_at_peak"]) {
      for (const auto& [k, v] : c["categories"].items()) CHECK(v.get<int64_t>() >= 0);
    }

    // The end of the recording's state, on request.
    const std::string kept = testing::TempDir() + "/slice_state_kept.json";
    r = RunMemsnap({"convert", "--force", "--keep-final-state", "--to", "event:5", in, kept});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const auto final_active = ActiveBlocks(json::parse(testing::ReadFileOrFail(kept)));
    CHECK(final_active.size() == 1);
    CHECK(final_active.count(kLarge + 12 * kMiB) == 1);
  }

  TEST_CASE("a slice that starts later reads its older blocks as allocated before its trace") {
    const std::string in = testing::WriteTemp("slice_state_from_in.json", FixtureJson());
    const std::string out = testing::TempDir() + "/slice_state_from_out.json";
    testing::RunResult r =
        RunMemsnap({"convert", "--force", "--from", "event:2", "--to", "event:7", in, out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    // Slice event k is event k + 2 of the file: the live bytes agree at each.
    for (int k = 0; k < 5; ++k) {
      CAPTURE(k);
      const json full = RunJson({"top", "--json", "--at", absl::StrCat("event:", k + 2), in});
      const json slice = RunJson({"top", "--json", "--at", absl::StrCat("event:", k), out});
      CHECK(slice["total_bytes"] == full["total_bytes"]);
    }
  }

  TEST_CASE("a slice whose state cannot be rebuilt exactly says so, naming the file and event") {
    const std::string in = testing::WriteTemp("slice_state_bad_in.json", FixtureJson(true));
    const std::string out = testing::TempDir() + "/slice_state_bad_out.json";
    testing::RunResult r = RunMemsnap({"convert", "--force", "--to", "event:5", in, out});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.err.find("warning: " + in +
                     ": device 0: the allocator state at the slice's end "
                     "(before event:5) could not be rebuilt exactly") != std::string::npos);
    CHECK(r.err.find("1 alloc(s) of a block not live") != std::string::npos);
    const json j = RunJson({"convert", "--force", "--json", "--to", "event:5", in, out});
    CHECK(j["state"] == "slice_end");
    CHECK(j["warnings"].size() == 1);
  }

  TEST_CASE("slices of corpus traces have the peak and the kinds of the whole file at that event" *
            doctest::test_suite("corpus")) {
    std::vector<std::string> files = testing::CorpusFiles();
    if (files.empty()) return;  // skipped: the corpus is absent
    const std::string out = testing::TempDir() + "/corpus_slice.pickle";
    int sliced = 0;
    for (const std::string& path : files) {
      CAPTURE(path);
      const json summary = RunJson({"summary", "--json", path});
      const json* dev = nullptr;
      for (const json& d : summary["devices"]) {
        if (d.contains("peaks") && d["trace_entries"].get<int64_t>() > 1) {
          dev = &d;
          break;
        }
      }
      if (dev == nullptr) continue;  // no trace to cut
      const std::string device = std::to_string((*dev)["device"].get<int>());
      const int64_t peak = (*dev)["peaks"]["live_event"].get<int64_t>();
      const int64_t n = (*dev)["trace_entries"].get<int64_t>();
      // Just after the peak, and the middle of the trace.
      std::vector<int64_t> cuts = {std::clamp<int64_t>(peak + 1, 1, n),
                                   std::max<int64_t>(n / 2, 1)};
      if (cuts[0] == cuts[1]) cuts.pop_back();
      for (int64_t cut : cuts) {
        CAPTURE(cut);
        testing::RunResult r = RunMemsnap(
            {"convert", "-q", "--force", "--to", absl::StrCat("event:", cut), path, out});
        REQUIRE_MESSAGE(r.exit_code == 0, r.err);
        ++sliced;
        const json s = RunJson({"summary", "--json", out});
        const json* sd = nullptr;
        for (const json& d : s["devices"]) {
          if (std::to_string(d["device"].get<int>()) == device) sd = &d;
        }
        REQUIRE(sd != nullptr);
        REQUIRE(sd->contains("peaks"));
        const int64_t at = (*sd)["peaks"]["live_event"].get<int64_t>();
        CHECK(at < cut);
        const std::string moment = absl::StrCat("event:", at);
        const json full = RunJson({"top", "--json", "--device", device, "--at", moment, path});
        const json slice = RunJson({"top", "--json", "--device", device, out});
        // The slice's peak is the whole file's live bytes at that event, and (cut just after the
        // whole file's peak) its peak.
        CHECK((*sd)["peaks"]["live_bytes"] == full["total_bytes"]);
        CHECK(slice["total_bytes"] == full["total_bytes"]);
        if (cut == peak + 1) CHECK(at == peak);
        for (const auto& [k, v] : slice["categories"].items()) CHECK(v.get<int64_t>() >= 0);
        for (const json& c : s["categories_at_peak"]) {
          int64_t sum = 0;
          for (const auto& [k, v] : c["categories"].items()) {
            CHECK(v.get<int64_t>() >= 0);
            sum += v.get<int64_t>();
          }
          CHECK(sum == c["live_bytes"].get<int64_t>());
        }
        // The kinds: each block live then has the whole file's kind, except those the whole file
        // decides by their free after the cut (a temporary is one freed soon after its phase):
        // the slice ends before it, and reads them as a trace that stops there would.
        const json fb =
            RunJson({"blocks", "--json", "--limit", "0", "--device", device, "--at", moment, path});
        const json sb =
            RunJson({"blocks", "--json", "--limit", "0", "--device", device, "--at", moment, out});
        std::map<std::pair<uint64_t, int64_t>, const json*> by_key;
        auto key = [](const json& b) {
          return std::pair{b["address"].get<uint64_t>(),
                           b.contains("alloc_event") && b["alloc_event"].is_number()
                               ? b["alloc_event"].get<int64_t>()
                               : int64_t{-1}};
        };
        for (const json& b : fb["blocks"]) by_key[key(b)] = &b;
        std::map<std::string, int64_t> decided_full, decided_slice;
        for (const json& b : sb["blocks"]) {
          auto it = by_key.find(key(b));
          REQUIRE_MESSAGE(it != by_key.end(), b.dump());
          const json& a = *it->second;
          auto freed_at = [](const json& x) -> int64_t {
            for (const char* k : {"free_requested_event", "free_completed_event"}) {
              if (x.contains(k) && x[k].is_number()) return x[k].get<int64_t>();
            }
            return INT64_MAX;
          };
          if (freed_at(a) >= cut) continue;  // decided after the cut
          CAPTURE(b.dump());
          CHECK(a["category"] == b["category"]);
          decided_full[a["category"]] += a["requested_size"].get<int64_t>();
          decided_slice[b["category"]] += b["requested_size"].get<int64_t>();
        }
        CHECK(decided_full == decided_slice);
      }
    }
    CHECK(sliced > 0);
  }
}

}  // namespace
}  // namespace memsnap
