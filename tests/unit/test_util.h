// Shared helpers for the unit tests: Python-made pickles, fixture paths, the real corpus.
#pragma once

#include <cstddef>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::testing {

/// Runs CPython (standard library only) and returns pickle.dumps(<python_expr>, protocol).
/// `python_expr` may use `json` (the module) and the helpers defined in tests/unit/pyhelpers.py.
std::string PythonPickle(const std::string& python_expr, int protocol = 4);

/// Runs a python3 snippet and returns its stdout (bytes). Fails the test when python fails.
std::string RunPython(const std::string& code);

/// Absolute path of a file under the source tree's testdata/.
std::string TestdataPath(const std::string& name);

/// The bytes of the file at `path`; fails the test when it cannot be opened.
std::string ReadFileOrFail(const std::string& path);

/// Every hand-written JSON fixture under testdata/, as paths relative to it, sorted.
std::vector<std::string> FixtureNames();

/// Fixture `names` (paths under testdata/) pickled by CPython (pyhelpers.py load_json) in each of
/// `protocols`, in one Python run: {name, bytes} for each name, then each protocol.
std::vector<std::pair<std::string, std::string>> FixturePickles(
    const std::vector<std::string>& names, const std::vector<int>& protocols = {4});

/// The real-snapshot corpus (the folder CMake option MEMSNAP_CORPUS_DIR names), for a corpus
/// test, which is a test case in the test suite "corpus":
///   TEST_CASE("..." * doctest::test_suite("corpus"))
/// ctest runs those in entries of their own (corpus/<file>, tests/CMakeLists.txt). When the corpus
/// is absent the test case is marked skipped and nullopt returned (the caller returns), so ctest
/// reports the entry as skipped, never as passed; with MEMSNAP_REQUIRE_CORPUS=1 in the
/// environment an absent corpus fails the test case instead. Fails when called from a test case
/// outside the suite "corpus": that one would pass by skipping inside the `unit` entry.
std::optional<std::string> CorpusDir();

/// Every snapshot file of the corpus (sorted; manifest.json and README.md left out). Same
/// contract as CorpusDir(): empty when the corpus is absent (the test case is then skipped).
/// MEMSNAP_CORPUS_FILES=N in the environment bounds it to N files spread over the sorted list
/// (PyTorch versions and sizes, not the head of the list): scripts/tsan.sh, whose instrumented
/// decodes are ~20 times slower, reads a sample so that CI can afford it.
std::vector<std::string> CorpusFiles();

/// Whether CorpusFiles() is bounded by MEMSNAP_CORPUS_FILES (tests that count what the whole
/// corpus holds check their counts only when it is not).
bool CorpusBounded();

/// Marks the running test case skipped, with the reason (tests/unit/test_main.cpp). When every
/// test case of a run is skipped, memsnap_tests exits kSkipExitCode (ctest SKIP_RETURN_CODE).
void SkipTestCase(const std::string& reason);
inline constexpr int kSkipExitCode = 77;

/// One mebibyte, the unit most tests size their blocks in.
inline constexpr int64_t kMiB = int64_t{1} << 20;

/// The test suite of the running test case ("" outside any).
std::string_view CurrentTestSuite();

/// Parses bytes in memory (any container) and returns the snapshot or fails the test.
Snapshot ParseOrFail(const std::string& bytes, const std::string& name = "<test>");

/// testdata/<name> (a hand-written JSON fixture) pickled by CPython (pyhelpers.py load_json)
/// and parsed, with source.path = name; fails the test when it does not parse.
Snapshot LoadFixture(const std::string& name);

/// Parses bytes and returns the error message ("" when it parsed).
std::string ParseError(const std::string& bytes, const std::string& name = "<test>");

/// Runs the memsnap binary with `args` and returns {exit code, stdout, stderr}.
struct RunResult {
  int exit_code = 0;
  std::string out;
  std::string err;
};
RunResult RunMemsnap(const std::vector<std::string>& args);

/// A temporary directory removed at exit.
std::string TempDir();

/// Writes `bytes` to TempDir()/NAME and returns the path.
std::string WriteTemp(const std::string& name, const std::string& bytes);

/// How MutateBytes breaks a pickle: which cuts it makes, and how long a copied range may be.
struct ByteMutation {
  bool keep_half = false;  // truncations keep at least half of the bytes (frames survive)
  size_t max_copy = 16;    // the longest range duplicated elsewhere
};

/// One deterministic mutation of `bytes` (non-empty), drawn from `rng`: a few byte flips, a
/// truncation, a range duplicated elsewhere, or a range erased.
std::string MutateBytes(std::string bytes, std::mt19937_64& rng, const ByteMutation& how);

}  // namespace memsnap::testing
