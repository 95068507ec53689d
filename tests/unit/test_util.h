// Shared helpers for the unit tests: Python-made pickles, fixture paths, the real corpus.
#pragma once

#include <optional>
#include <string>
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

/// The real corpus folder (../shared/snapshots), or nullopt when absent: corpus tests skip.
std::optional<std::string> CorpusDir();

/// Every snapshot file in the corpus (sorted), empty when the corpus is absent.
std::vector<std::string> CorpusFiles();

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

}  // namespace memsnap::testing
