// Running a command line inside another program (the Python module, python/): cli::RunEmbedded
// with snapshots already in memory (cli::Context::preloaded) prints what the CLI prints on the file
// they were read from, and a snapshot in memory is copied for a command (StringPool's copy).
#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <sstream>
#include <string>
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

std::string Fixture(const char* name) {
  return std::string(MEMSNAP_SOURCE_DIR) + "/testdata/" + name;
}

}  // namespace

TEST_SUITE("embedded_run") {
  TEST_CASE("a copied snapshot holds the same model in memory of its own") {
    for (const char* name : {"timeline_training.json", "timeline_legacy_2_0.json"}) {
      CAPTURE(name);
      absl::StatusOr<Snapshot> read = parse::ReadSnapshot(Fixture(name));
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
      const std::string path = Fixture(name);
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
}

}  // namespace memsnap
