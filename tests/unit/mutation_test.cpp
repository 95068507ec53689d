// Mutants of real snapshots through every command (issue 20): each corpus file (ctest
// corpus/mutation; skipped when the corpus is absent) and each hand-written fixture (in `unit`) is
// truncated, has bytes flipped, and is decoded, mutated field by field (snapshot_mutator.h) and
// re-encoded with the project's writer; every mutant goes through every command's analysis
// in-process. Each run must end with exit 0, 1 or 2, and a message when it is not 0; a crash, or
// under ASan/UBSan a sanitizer report, fails the suite.
//
// Bounded for the sanitizer stage of CI: MEMSNAP_MUTANTS (default 1) mutants of each kind per
// file, MEMSNAP_MUTATION_FILES (default all) corpus files, every one through every command.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "snapshot_mutator.h"
#include "test_util.h"

namespace memsnap {
namespace {

namespace fs = std::filesystem;

void Write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// A bound takes files spread over the sorted list (PyTorch versions, sizes), not its head.
std::vector<std::pair<std::string, std::string>> Bounded(
    std::vector<std::pair<std::string, std::string>> inputs) {
  const size_t limit = static_cast<size_t>(std::max(0, EnvInt("MEMSNAP_MUTATION_FILES", 0)));
  if (limit == 0 || inputs.size() <= limit) return inputs;
  std::vector<std::pair<std::string, std::string>> spread;
  for (size_t i = 0; i < limit; ++i) spread.push_back(std::move(inputs[i * inputs.size() / limit]));
  return spread;
}

std::vector<std::pair<std::string, std::string>> CorpusInputs() {
  std::vector<std::pair<std::string, std::string>> inputs;
  for (const std::string& path : testing::CorpusFiles()) {
    inputs.emplace_back(fs::path(path).filename().string(), testing::ReadFileOrFail(path));
  }
  return Bounded(std::move(inputs));
}

// The hand-written fixtures, pickled by CPython.
std::vector<std::pair<std::string, std::string>> FixtureInputs() {
  return testing::FixturePickles({"formats/reader_2_1_full.json", "formats/reader_2_0_history.json",
                                  "formats/reader_1_13_list.json", "timeline_training.json",
                                  "frag_expandable.json", "frag_trace.json", "timeline_ring.json"});
}

// Every command, with the flags that make it do the most work, on `file` (and `base`, the
// unmutated input, where a command takes two).
std::vector<std::vector<std::string>> Commands(const std::string& file, const std::string& base,
                                               const std::string& out) {
  return {
      {"summary", file},
      {"summary", file, "--json", "--strict"},
      {"timeline", file},
      {"timeline", file, "--csv"},
      {"top", file, "--by", "function"},
      {"top", file, "--at", "end", "--folded", "-"},
      {"blocks", file, "--all", "--json"},
      {"diff", base, file},
      {"frag", file, "--timeline"},
      {"check", file, "--max-peak", "1GiB", "--max-frag", "50%"},
      {"leaks", file},
      {"replay", file, "--verify"},
      {"replay", file, "--allocator", "expandable", "--device-memory", "1GiB"},
      {"report", file, "-o", out + ".html"},
      {"export", "--format", "perfetto", file, "-o", out + ".json"},
      {"export", "--format", "csv", file, "-o", out + ".csv"},
      {"convert", file, out + ".pickle"},
      {"convert", file, out + ".conv.json"},
  };
}

// Runs every command on mutants of each input: each run must end with exit 0, 1 or 2 and a message.
void CheckMutants(const std::vector<std::pair<std::string, std::string>>& inputs) {
  const int per_kind = EnvInt("MEMSNAP_MUTANTS", 1);
  const std::string dir = testing::TempDir() + "/mutants";
  fs::create_directories(dir);
  std::mt19937_64 rng(2020);
  int runs = 0, ok = 0, structured = 0;
  for (const auto& [name, bytes] : inputs) {
    const std::string base = dir + "/base";
    Write(base, bytes);
    std::vector<std::pair<std::string, std::string>> mutants;
    for (int i = 0; i < per_kind; ++i) {
      mutants.emplace_back("truncated", bytes.substr(0, rng() % (bytes.size() + 1)));
      std::string flipped = bytes;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 8) && !flipped.empty(); ++k) {
        flipped[rng() % flipped.size()] ^= static_cast<char>(1 + rng() % 255);
      }
      mutants.emplace_back("flipped", flipped);
      // Structured: decoded, mutated, written back by the project's own pickle writer.
      auto input = io::FromMemory(bytes, name);
      absl::StatusOr<std::vector<Snapshot>> snaps = parse::ParseSnapshots(*input);
      if (snaps.ok() && !snaps->empty()) {
        testing::SnapshotMutator mutator(rng());
        Snapshot& s = (*snaps)[0];
        mutator.Mutate(s, 6);
        std::string encoded = mutator.Encode(s);
        REQUIRE(!encoded.empty());
        mutants.emplace_back("structured", encoded);
        ++structured;
      }
    }
    for (size_t m = 0; m < mutants.size(); ++m) {
      const std::string file = dir + "/mutant";
      Write(file, mutants[m].second);
      for (const std::vector<std::string>& args : Commands(file, base, dir + "/out")) {
        CAPTURE(name);
        CAPTURE(mutants[m].first);
        CAPTURE(args[0]);
        testing::RunResult r = testing::RunMemsnap(args);
        ++runs;
        CHECK((r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 2));
        // A message, not silence: an error names the command, a failed check reports.
        if (r.exit_code == 0) ++ok;
        if (r.exit_code == 1) CHECK_FALSE((r.out.empty() && r.err.empty()));
        if (r.exit_code == 2) CHECK(r.err.find("memsnap ") != std::string::npos);
      }
    }
  }
  MESSAGE(runs << " command runs on mutants, " << ok << " exit 0, " << structured
               << " structured mutants");
  CHECK(structured > 0);
  CHECK(ok > runs / 10);  // mutants reach the analyses, not only the reader's errors
}

}  // namespace

TEST_CASE("mutants of every corpus snapshot end every command with exit 0, 1 or 2 and a message" *
          doctest::test_suite("corpus")) {
  const std::vector<std::pair<std::string, std::string>> inputs = CorpusInputs();
  if (inputs.empty()) return;  // no corpus: reported as skipped (docs/coding-guidelines.md §10)
  CheckMutants(inputs);
}

TEST_SUITE("mutation") {
  TEST_CASE("mutants of the fixtures end every command with exit 0, 1 or 2 and a message") {
    CheckMutants(FixtureInputs());
  }
}

}  // namespace memsnap
