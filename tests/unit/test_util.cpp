#include "test_util.h"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "memsnap/cli/app.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"

namespace memsnap::testing {

namespace fs = std::filesystem;

std::string TempDir() {
  // Never destroyed: the atexit handler below runs after static destructors registered later
  // (ASan caught it reading a destroyed std::string).
  static const std::string* dir = [] {
    std::string tmpl = (fs::temp_directory_path() / "memsnap_test_XXXXXX").string();
    char* made = mkdtemp(tmpl.data());
    REQUIRE(made != nullptr);
    auto* d = new std::string(made);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(*dir, ec);
    });
    return d;
  }();
  return *dir;
}

std::string RunPython(const std::string& code) {
  static int counter = 0;
  std::string script = TempDir() + "/script_" + std::to_string(counter++) + ".py";
  {
    std::ofstream f(script);
    f << "import sys, json, pickle\n";
    f << "sys.path.insert(0, '" MEMSNAP_SOURCE_DIR "/tests/unit')\n";
    f << code;
  }
  std::string cmd = std::string(MEMSNAP_PYTHON) + " " + script;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = pclose(p);
  REQUIRE_MESSAGE(status == 0, "python failed: " << code);
  return out;
}

std::string PythonPickle(const std::string& python_expr, int protocol) {
  return RunPython("from pyhelpers import *\nsys.stdout.buffer.write(pickle.dumps(" + python_expr +
                   ", protocol=" + std::to_string(protocol) + "))\n");
}

std::string TestdataPath(const std::string& name) {
  return std::string(MEMSNAP_SOURCE_DIR) + "/testdata/" + name;
}

std::optional<std::string> CorpusDir() {
  REQUIRE_MESSAGE(CurrentTestSuite() == "corpus",
                  "a test that reads the corpus must be in the test suite \"corpus\" "
                  "(TEST_CASE(\"...\" * doctest::test_suite(\"corpus\"))): ctest runs those apart "
                  "and reports them as skipped when the corpus is absent");
  std::string dir = MEMSNAP_CORPUS_DIR;
  if (fs::exists(dir + "/manifest.json")) return dir;
  const char* require = std::getenv("MEMSNAP_REQUIRE_CORPUS");
  if (require != nullptr && std::string(require) == "1") {
    FAIL("the corpus " << dir << " is absent and MEMSNAP_REQUIRE_CORPUS=1");
  }
  SkipTestCase("the corpus " + dir + " is absent (configure -DMEMSNAP_CORPUS_DIR=...)");
  return std::nullopt;
}

std::vector<std::string> CorpusFiles() {
  std::vector<std::string> files;
  auto dir = CorpusDir();
  if (!dir) return files;
  for (const auto& e : fs::directory_iterator(*dir)) {
    std::string name = e.path().filename().string();
    if (name == "README.md" || name == "manifest.json") continue;
    files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  REQUIRE_MESSAGE(!files.empty(), "the corpus " << *dir << " holds no snapshot");
  if (!CorpusBounded()) return files;
  const size_t limit = std::strtoul(std::getenv("MEMSNAP_CORPUS_FILES"), nullptr, 10);
  if (files.size() <= limit) return files;
  std::vector<std::string> spread;
  for (size_t i = 0; i < limit; ++i) spread.push_back(files[i * files.size() / limit]);
  return spread;
}

bool CorpusBounded() {
  const char* v = std::getenv("MEMSNAP_CORPUS_FILES");
  return v != nullptr && std::strtoul(v, nullptr, 10) > 0;
}

Snapshot ParseOrFail(const std::string& bytes, const std::string& name) {
  auto input = io::FromMemory(bytes, name);
  auto snaps = parse::ParseSnapshots(*input);
  REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
  REQUIRE(snaps->size() >= 1);
  return std::move((*snaps)[0]);
}

std::string ReadFileOrFail(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  REQUIRE_MESSAGE(f.good(), "cannot open ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> FixtureNames() {
  const fs::path root = TestdataPath("");
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.path().extension() == ".json") names.push_back(fs::relative(e.path(), root).string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::pair<std::string, std::string>> FixturePickles(
    const std::vector<std::string>& names, const std::vector<int>& protocols) {
  std::string list, protos;
  for (const std::string& n : names) list += "'" + n + "', ";
  for (int p : protocols) protos += std::to_string(p) + ", ";
  // [len][bytes] records on stdout.
  const std::string out = RunPython(
      "from pyhelpers import load_json\nfor name in [" + list + "]:\n" + "    for protocol in [" +
      protos + "]:\n" + "        b = pickle.dumps(load_json(name), protocol=protocol)\n" +
      "        sys.stdout.buffer.write(len(b).to_bytes(8, 'little') + b)\n");
  std::vector<std::pair<std::string, std::string>> pickles;
  size_t at = 0;
  for (const std::string& name : names) {
    for (size_t k = 0; k < protocols.size(); ++k) {
      REQUIRE(at + 8 <= out.size());
      uint64_t n = 0;
      for (int b = 0; b < 8; ++b) n |= uint64_t{static_cast<unsigned char>(out[at + b])} << (8 * b);
      pickles.emplace_back(name, out.substr(at + 8, n));
      at += 8 + n;
    }
  }
  return pickles;
}

Snapshot LoadFixture(const std::string& name) {
  Snapshot snap = ParseOrFail(PythonPickle("load_json('" + name + "')"), name);
  snap.source.path = name;
  return snap;
}

std::string ParseError(const std::string& bytes, const std::string& name) {
  auto input = io::FromMemory(bytes, name);
  auto snaps = parse::ParseSnapshots(*input);
  if (snaps.ok()) return "";
  return std::string(snaps.status().message());
}

RunResult RunMemsnap(const std::vector<std::string>& args) {
  std::vector<std::string> storage = {"memsnap"};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  RunResult r;
  r.exit_code = cli::RunMain(static_cast<int>(storage.size()), argv.data(), out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string MutateBytes(std::string b, std::mt19937_64& rng, const ByteMutation& how) {
  const size_t n = b.size();
  switch (rng() % 4) {
    case 0:
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); ++k) {
        b[rng() % n] = static_cast<char>(rng());
      }
      break;
    case 1:
      b.resize(how.keep_half ? n / 2 + rng() % (n / 2) : rng() % n);
      break;
    case 2: {
      size_t at = rng() % n, len = 1 + rng() % how.max_copy;
      b.insert(at, b.substr(rng() % n, len));
      break;
    }
    default:
      b.erase(rng() % n, 1 + rng() % 8);
      break;
  }
  return b;
}

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace memsnap::testing
