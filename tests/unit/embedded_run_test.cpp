// Running a command line inside another program (the Python module, python/): cli::RunEmbedded
// with snapshots already in memory (cli::Context::preloaded) prints what the CLI prints on the file
// they were read from, and a snapshot in memory is copied for a command (StringPool's copy).
#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_replace.h"
#include "memsnap/cli/app.h"
#include "memsnap/model/copy.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "test_util.h"

namespace memsnap {
namespace {

struct Ran {
  int code;
  std::string out, err;
};

Ran Embedded(const std::vector<std::string>& args, const cli::PreloadedSnapshots& in_memory) {
  std::ostringstream out, err;
  cli::EmbeddedRun run;
  run.preloaded = &in_memory;
  const int code = cli::RunEmbedded(args, out, err, run);
  return {code, out.str(), err.str()};
}

std::string EmbeddedFixture(const char* name) {
  return std::string(MEMSNAP_SOURCE_DIR) + "/testdata/" + name;
}

}  // namespace

TEST_SUITE("embedded_run") {
  TEST_CASE("a copied snapshot holds the same model in memory of its own") {
    for (const char* name : {"timeline_training.json", "timeline_legacy_2_0.json"}) {
      CAPTURE(name);
      absl::StatusOr<Snapshot> read = parse::ReadSnapshot(EmbeddedFixture(name));
      REQUIRE(read.ok());
      const Snapshot& snap = *read;
      const Snapshot copy = CopySnapshot(snap);
      REQUIRE(copy.strings.size() == snap.strings.size());
      for (uint32_t i = 0; i < snap.strings.size(); ++i) {
        CHECK(copy.strings.Get(StrId(i)) == snap.strings.Get(StrId(i)));
        if (i > 0) CHECK(copy.strings.Get(StrId(i)).data() != snap.strings.Get(StrId(i)).data());
      }
      CHECK(testing::ModelText(copy) == testing::ModelText(snap));
      CHECK(copy.source.path == snap.source.path);
      CHECK(copy.diagnostics.warnings == snap.diagnostics.warnings);
    }
  }

  TEST_CASE("a command on a snapshot in memory prints what the CLI prints on its file") {
    for (const char* name : {"timeline_training.json", "oom_fragmentation.json"}) {
      CAPTURE(name);
      const std::string path = EmbeddedFixture(name);
      absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(path);
      REQUIRE(snap.ok());
      // Named as no file is: only the snapshot in memory can answer.
      const std::string in_memory = "in-memory.json";
      cli::PreloadedSnapshots inputs;
      inputs[in_memory] = std::make_shared<const Snapshot>(*std::move(snap));
      for (std::vector<std::string> args : {std::vector<std::string>{"summary", "--json"},
                                            {"top", "--by", "category"},
                                            {"timeline", "--json"},
                                            {"frag"},
                                            {"oom", "--device-memory", "1GiB", "--json"},
                                            {"check", "--fits", "1GiB"},
                                            {"blocks", "--json"}}) {
        CAPTURE(args[0]);
        std::vector<std::string> on_file = args, on_memory = args;
        on_file.push_back(path);
        on_memory.push_back(in_memory);
        const testing::RunResult want = testing::RunMemsnap(on_file);
        const Ran got = Embedded(on_memory, inputs);
        CHECK(got.code == want.exit_code);
        CHECK(absl::StrReplaceAll(got.out, {{in_memory, path}}) == want.out);
      }
      // Two inputs in memory, and one of them named twice.
      const Ran diff = Embedded({"diff", "--json", in_memory, in_memory}, inputs);
      CHECK(diff.code == 0);
      CHECK(diff.out.find("\"delta\": 0") != std::string::npos);
    }
  }

  TEST_CASE("an embedded run fails as the CLI does on what is not in memory") {
    const Ran got = Embedded({"summary", "no-such-file.pickle"}, {});
    CHECK(got.code == 2);
    CHECK(got.err.find("no-such-file.pickle") != std::string::npos);
  }

  TEST_CASE("two command lines with categories of their own, run at once, answer in their own") {
    // The Python module's threads: each call is one command line with its own --category.
    absl::StatusOr<Snapshot> read =
        parse::ReadSnapshot(EmbeddedFixture("attribution_training.json"));
    REQUIRE(read.ok());
    cli::PreloadedSnapshots in_memory;
    in_memory["snap"] = std::make_shared<const Snapshot>(*std::move(read));
    const std::vector<std::string> a = {
        "top", "--by", "category", "--json", "--category", "adam=optim/adam\\.py", "snap"};
    const std::vector<std::string> b = {
        "top", "--by", "category", "--json", "--category", "fwd=model/net\\.py", "snap"};
    const Ran alone_a = Embedded(a, in_memory), alone_b = Embedded(b, in_memory);
    REQUIRE(alone_a.code == 0);
    REQUIRE(alone_b.code == 0);
    CHECK(alone_a.out.find("\"adam\"") != std::string::npos);
    CHECK(alone_a.out.find("\"fwd\"") == std::string::npos);
    CHECK(alone_b.out.find("\"fwd\"") != std::string::npos);
    CHECK(alone_b.out.find("\"adam\"") == std::string::npos);
    std::atomic<int> wrong{0};
    auto repeat = [&](const std::vector<std::string>& args, const std::string& expected) {
      for (int i = 0; i < 25; ++i) {
        if (Embedded(args, in_memory).out != expected) ++wrong;
      }
    };
    std::thread ta(repeat, std::cref(a), std::cref(alone_a.out));
    std::thread tb(repeat, std::cref(b), std::cref(alone_b.out));
    ta.join();
    tb.join();
    CHECK(wrong.load() == 0);
    // And a command line without any answers in the built-in categories alone.
    const Ran plain = Embedded({"top", "--by", "category", "--json", "snap"}, in_memory);
    CHECK(plain.out.find("\"adam\"") == std::string::npos);
    CHECK(plain.out.find("\"fwd\"") == std::string::npos);
  }
}

}  // namespace memsnap
