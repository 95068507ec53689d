#include "memsnap/query/export.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/io/output.h"
#include "memsnap/parse/reader.h"
#include "memsnap/query/session.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/report/perfetto.h"
#include "nlohmann/json.hpp"
#include "test_util.h"

namespace memsnap {
namespace {

using Json = nlohmann::json;
using testing::ParseOrFail;
using testing::PythonPickle;

/// What `export` writes: the query decides each lifetime's site and category, the writer prints.
query::ExportResult Lifetimes(query::Session& session, query::ExportFormat format,
                              int top_slices = 500) {
  query::ExportRequest request;
  request.format = format;
  request.top_slices = top_slices;
  auto result = query::ExportQuery(request, session);
  REQUIRE_MESSAGE(result.ok(), result.status().message());
  return *std::move(result);
}

query::Session Open(Snapshot snap) {
  return query::Session::FromSnapshot(std::move(snap), query::NeedsTimeline({}));
}

Json Perfetto(query::Session& session, int top_slices = 500) {
  auto tl = session.timeline();
  REQUIRE(tl.ok());
  const query::ExportResult lifetimes =
      Lifetimes(session, query::ExportFormat::kPerfetto, top_slices);
  std::ostringstream out;
  auto stats = report::WritePerfettoTrace(session.snapshot(), **tl, lifetimes, {}, out);
  REQUIRE(stats.ok());
  return Json::parse(out.str());
}

/// Σ requested bytes of the active blocks of each device: what the "live" counter must end at.
std::map<int32_t, int64_t> LiveBytes(const Snapshot& snap) {
  std::map<int32_t, int64_t> live;
  for (const Segment& s : snap.segments) {
    for (const Block& b : snap.BlocksOf(s)) {
      if (b.is_active()) live[s.device] += b.requested_size;
    }
  }
  return live;
}

/// Structural checks any trace viewer relies on; returns the last value of each counter track.
std::map<std::pair<int, std::string>, int64_t> CheckTraceStructure(const Json& trace) {
  REQUIRE(trace.contains("traceEvents"));
  REQUIRE(trace["traceEvents"].is_array());
  std::map<std::pair<int, std::string>, int64_t> last;
  std::map<std::pair<int, std::string>, int64_t> last_ts;
  std::map<std::pair<int, int>, std::vector<std::pair<int64_t, int64_t>>> slices;
  for (const Json& e : trace["traceEvents"]) {
    REQUIRE(e["ph"].is_string());
    std::string ph = e["ph"];
    REQUIRE(e["pid"].is_number_integer());
    REQUIRE(e["tid"].is_number_integer());
    REQUIRE(e["name"].is_string());
    if (ph == "M") continue;
    REQUIRE(e["ts"].is_number());
    CHECK(e["ts"].get<int64_t>() >= 0);
    if (ph == "C") {
      REQUIRE(e["args"]["bytes"].is_number_integer());
      auto key = std::make_pair(e["pid"].get<int>(), e["name"].get<std::string>());
      CHECK(e["ts"].get<int64_t>() >= last_ts[key]);  // each counter track in time order
      last_ts[key] = e["ts"];
      last[key] = e["args"]["bytes"];
    } else if (ph == "X") {
      REQUIRE(e["dur"].is_number_integer());
      CHECK(e["dur"].get<int64_t>() >= 0);
      slices[{e["pid"], e["tid"]}].emplace_back(e["ts"],
                                                e["ts"].get<int64_t>() + e["dur"].get<int64_t>());
    } else {
      CHECK(ph == "i");
    }
  }
  // On one thread, "X" slices are disjoint or nested, never partly overlapping.
  for (auto& [track, spans] : slices) {
    std::sort(spans.begin(), spans.end());
    std::vector<int64_t> open;
    for (const auto& [b, e] : spans) {
      while (!open.empty() && open.back() <= b) open.pop_back();
      if (!open.empty()) CHECK(e <= open.back());
      open.push_back(e);
    }
  }
  return last;
}

TEST_SUITE("export") {
  TEST_CASE("perfetto export has per-device counters that end at the snapshot's live bytes") {
    query::Session snap = Open(ParseOrFail(PythonPickle("load_json('report_basic.json')")));
    Json trace = Perfetto(snap);
    auto last = CheckTraceStructure(trace);
    CHECK(last[{1, "live"}] == 8000000 + 1000 + 8388608);
    CHECK(last[{1, "reserved"}] == 20971520 + 2097152);
    CHECK(last[{2, "live"}] == 512);  // device 1 has no trace: its final state only
    // Two streams on device 0: per-stream counters too, adding up to the device's.
    CHECK(last[{1, "live stream 0 (default)"}] == 8000000 + 8388608);
    CHECK(last[{1, "live stream 0x7"}] == 1000);
    CHECK(last[{1, "reserved stream 0x7"}] == 2097152);
    CHECK(trace["otherData"]["t0_us"] == 1000);
  }

  TEST_CASE("perfetto export draws the largest lifetimes, annotations and OOMs as events") {
    query::Session snap = Open(ParseOrFail(PythonPickle("load_json('report_basic.json')")));
    Json trace = Perfetto(snap, 3);
    CheckTraceStructure(trace);
    std::vector<Json> allocations, annotations, ooms;
    for (const Json& e : trace["traceEvents"]) {
      if (e["ph"] == "X" && e["cat"] == "allocation") allocations.push_back(e);
      if (e["ph"] == "X" && e["cat"] == "annotation") annotations.push_back(e);
      if (e["ph"] == "i" && e["name"] == "OOM") ooms.push_back(e);
    }
    REQUIRE(allocations.size() == 3);  // the 1000 B optimizer block is not among the top 3
    const Json& attn = allocations[2];
    CHECK(attn["name"] == "8.0 MiB model.py:20 attn</script><b>");
    CHECK(attn["ts"] == 40);
    CHECK(attn["dur"] == 30);  // still live: drawn to the last event
    CHECK(attn["args"]["stack"] == Json::array({"model.py:20:attn</script><b>",
                                                "model.py:31:forward", "train.py:9:<module>"}));
    CHECK(attn["args"]["address"] == "0x7f0000c00000");
    REQUIRE(annotations.size() == 2);
    CHECK(annotations[0]["name"] == "train_step");
    CHECK(annotations[0]["dur"] == 65);
    CHECK(annotations[1]["tid"] == annotations[0]["tid"]);  // nested on one lane
    REQUIRE(ooms.size() == 1);
    CHECK(ooms[0]["ts"] == 70);
    CHECK(ooms[0]["args"]["requested_bytes"] == 1073741824);
  }

  TEST_CASE("perfetto export with --top 0 draws every lifetime, as 0 means all for every --top") {
    query::Session snap = Open(ParseOrFail(PythonPickle("load_json('report_basic.json')")));
    auto count = [&](int top) {
      size_t n = 0;
      const Json trace = Perfetto(snap, top);
      for (const Json& e : trace["traceEvents"]) {
        n += e["ph"] == "X" && e["cat"] == "allocation";
      }
      return n;
    };
    const size_t all = count(1000000);
    CHECK(all > 3);
    CHECK(count(0) == all);
    CHECK(count(3) == 3);
  }

  TEST_CASE("perfetto export of every corpus file is well formed and ends at its live bytes" *
            doctest::test_suite("corpus")) {
    for (const std::string& path : testing::CorpusFiles()) {
      CAPTURE(path);
      auto snap = parse::ReadSnapshot(path);
      REQUIRE_MESSAGE(snap.ok(), snap.status().message());
      query::Session session = Open(*std::move(snap));
      Json trace = Perfetto(session, 50);
      auto last = CheckTraceStructure(trace);
      for (const auto& [device, bytes] : LiveBytes(session.snapshot())) {
        CHECK(last[{device + 1, "live"}] == bytes);
      }
    }
  }

  TEST_CASE("the lifetimes CSV has one row per lifetime with its events, site and category") {
    query::Session session = Open(ParseOrFail(PythonPickle("load_json('report_basic.json')")));
    auto tl = session.timeline();
    REQUIRE(tl.ok());
    std::ostringstream out;
    report::WriteLifetimesCsv(session.snapshot(), **tl,
                              Lifetimes(session, query::ExportFormat::kCsv).lifetimes, out);
    CHECK(out.str() ==
          "device,address,version,class,requested_bytes,rounded_bytes,stream,alloc_event,"
          "free_requested_event,free_completed_event,alloc_time_us,alloc_time_rel_us,free_time_us,"
          "free_time_rel_us,site,category\n"
          // Relative times count from the trace's first time_us (1000).
          "0,0x7f0000000000,0,open,8000000,8388608,0,1,,,1010,10,,,model.py:10 __init__,parameter\n"
          "0,0x7f0000800000,0,in-window,4194304,4194304,0,2,6,7,1020,20,1060,60,model.py:30 act,"
          "activation\n"
          "0,0x7f0002000000,0,open,1000,1024,7,4,,,1030,30,,,optim.py:40 step,optimizer_state\n"
          "0,0x7f0000c00000,0,open,8388608,8388608,0,5,,,1040,40,,,model.py:20 attn</script><b>,"
          "activation\n"
          "1,0x7f1000000000,0,ghost,512,512,0,,,,,,,,[no stack recorded],unknown\n");
  }

  TEST_CASE("a streamed output is renamed into place only when the writer succeeds") {
    std::string dir = testing::TempDir();
    std::string path = dir + "/streamed.txt";
    auto ok = io::WriteFileAtomically(path, [](std::ostream& out) {
      out << "hello\n";
      return absl::OkStatus();
    });
    CHECK(ok.ok());
    CHECK(std::filesystem::file_size(path) == 6);
    auto failed = io::WriteFileAtomically(path, [](std::ostream& out) {
      out << "half";
      return absl::DataLossError("boom");
    });
    CHECK(std::string(failed.message()) == "boom");
    CHECK(std::filesystem::file_size(path) == 6);  // the old file is untouched
    size_t temps = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().filename().string().starts_with(".memsnap-")) ++temps;
    }
    CHECK(temps == 0);  // no temporary left behind
    auto bad = io::WriteFileAtomically(dir + "/no/such/dir/x",
                                       [](std::ostream&) { return absl::OkStatus(); });
    CHECK(std::string(bad.message()) == dir + "/no/such/dir/x: No such file or directory");
  }

  TEST_CASE("a failed write names the path and the system's reason") {
    // /dev/full is not a regular file: it is written in place (never renamed over), and every
    // write fails with ENOSPC.
    struct stat st;
    if (stat("/dev/full", &st) != 0 || !S_ISCHR(st.st_mode)) return;
    uint64_t bytes = 1;
    auto full = io::WriteFileAtomically(
        "/dev/full",
        [](std::ostream& out) {
          out << std::string(3 << 20, 'x');
          return absl::OkStatus();
        },
        &bytes);
    CHECK(std::string(full.message()) == "/dev/full: No space left on device");
    CHECK(bytes == 0);
    CHECK((stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode)));
  }

  TEST_CASE("a write removes only the temporary files memsnap left, never a user's file") {
    std::string dir = testing::TempDir() + "/stale";
    std::filesystem::create_directory(dir);
    std::string path = dir + "/stale.txt";
    auto make = [&](const std::string& name, bool mark) {
      std::ofstream(dir + "/" + name) << "half";
      if (mark) ::setxattr((dir + "/" + name).c_str(), "user.memsnap", "temp", 4, 0);
    };
    // Whether this file system keeps the mark (elsewhere the name and the lock are the proof).
    make(".memsnap-0000000000000000.tmp", true);
    char probe[8];
    const bool marks =
        ::getxattr((dir + "/.memsnap-0000000000000000.tmp").c_str(), "user.memsnap", probe, 8) == 4;
    std::filesystem::remove(dir + "/.memsnap-0000000000000000.tmp");
    const std::string stale = ".memsnap-00000000deadbeef.tmp";     // marked, unlocked: a SIGKILL's
    const std::string held = ".memsnap-00000000000a11fe.tmp";      // a live writer's
    const std::string unmarked = ".memsnap-0123456789abcdef.tmp";  // the user's, in our pattern
    const std::string old_style = "stale.txt.tmp.999999999";       // the user's
    const std::string upper = ".memsnap-00000000DEADBEEF.tmp";     // not the pattern
    make(stale, true);
    make(held, true);
    if (marks) make(unmarked, false);
    make(old_style, false);
    make(upper, true);
    const int lock = ::open((dir + "/" + held).c_str(), O_RDONLY | O_CLOEXEC);
    REQUIRE(lock >= 0);
    REQUIRE(::flock(lock, LOCK_EX) == 0);
    auto ok = io::WriteFileAtomically(path, [](std::ostream& out) {
      out << "whole";
      return absl::OkStatus();
    });
    ::close(lock);
    CHECK(ok.ok());
    CHECK_FALSE(std::filesystem::exists(dir + "/" + stale));
    CHECK(std::filesystem::exists(dir + "/" + held));
    if (marks) CHECK(std::filesystem::exists(dir + "/" + unmarked));
    CHECK(std::filesystem::exists(dir + "/" + old_style));
    CHECK(std::filesystem::exists(dir + "/" + upper));
    CHECK(std::filesystem::file_size(path) == 5);
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace memsnap
