// Replays the generated fuzz seed corpus (scripts/make_fuzz_seeds.py) and every crash reproducer
// kept in tests/fuzz/regressions/ as ordinary unit tests.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "pickle_paths.h"
#include "test_util.h"

namespace memsnap {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> FilesUnder(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_SUITE("fuzz_seeds") {
  TEST_CASE("every generated fuzz seed reads as a snapshot") {
    std::string dir = testing::TempDir() + "/seeds";
    testing::RunPython(
        "import subprocess\nsubprocess.check_call([sys.executable, '" MEMSNAP_SOURCE_DIR
        "/scripts/make_fuzz_seeds.py', '" +
        dir + "'], stdout=subprocess.DEVNULL)\n");
    auto files = FilesUnder(dir + "/reader");
    CHECK(files.size() >= 40);
    for (const fs::path& p : files) {
      CAPTURE(p.string());
      std::string bytes = testing::ReadFileOrFail(p.string());
      auto input = io::FromMemory(bytes, p.filename().string());
      auto snaps = parse::ParseSnapshots(*input);
      CHECK_MESSAGE(snaps.ok(), snaps.status().message());
    }
  }

  TEST_CASE("fuzz crash reproducers in tests/fuzz/regressions fail cleanly") {
    for (const fs::path& p : FilesUnder(MEMSNAP_SOURCE_DIR "/tests/fuzz/regressions")) {
      CAPTURE(p.string());
      std::string bytes = testing::ReadFileOrFail(p.string());
      auto input = io::FromMemory(bytes, "repro");
      auto snaps = parse::ParseSnapshots(*input);
      if (!snaps.ok()) CHECK(std::string(snaps.status().message()).rfind("repro: ", 0) == 0);
      // JSON and HTML decoders directly too: a reproducer may target one of them.
      auto json = parse::ParseJson(*input);
      if (!json.ok()) CHECK(std::string(json.status().message()).rfind("repro: ", 0) == 0);
      (void)parse::ExtractHtmlPayloads(bytes, "repro");
      (void)io::Gunzip(bytes, "repro", 16 << 20);
      // The pickle decoder's fast path and generic path agree on what the fuzzers found too.
      if (!bytes.empty() && bytes[0] == '\x80') CHECK(testing::ComparePicklePaths(bytes) == "");
    }
  }

  TEST_CASE("the pickle seeds of the path-comparing fuzz targets decode the same both ways") {
    std::string dir = testing::TempDir() + "/path_seeds";
    testing::RunPython(
        "import subprocess\nsubprocess.check_call([sys.executable, '" MEMSNAP_SOURCE_DIR
        "/scripts/make_fuzz_seeds.py', '" +
        dir + "'], stdout=subprocess.DEVNULL)\n");
    auto files = FilesUnder(dir + "/pickle_paths");
    CHECK(files.size() >= 20);
    for (const fs::path& p : files) {
      CAPTURE(p.string());
      CHECK(testing::ComparePicklePaths(testing::ReadFileOrFail(p.string())) == "");
    }
  }
}

}  // namespace memsnap
