#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "test_util.h"

namespace memsnap {
namespace {

using testing::RunMemsnap;

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// Runs bash with the completion script loaded and prints COMPREPLY for the words `line`.
std::string Complete(const std::string& script, const std::string& line) {
  std::string dir = testing::TempDir();
  std::ofstream(dir + "/completion.bash") << script;
  std::string cmd = "bash -c 'source " + dir + "/completion.bash; COMP_WORDS=(" + line +
                    "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _memsnap; echo \"${COMPREPLY[*]}\"' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

TEST_SUITE("cli_docs") {
  TEST_CASE("docs/cli.md is what `memsnap help-markdown` prints") {
    auto r = RunMemsnap({"help-markdown"});
    REQUIRE(r.exit_code == 0);
    std::string path = std::string(MEMSNAP_SOURCE_DIR) + "/docs/cli.md";
    // After changing a command's flags, regenerate: build/memsnap help-markdown > docs/cli.md
    CHECK_MESSAGE(ReadFile(path) == r.out,
                  "docs/cli.md is stale: run `build/memsnap help-markdown > docs/cli.md`");
  }

  TEST_CASE("the markdown reference lists every visible command with its options and examples") {
    auto r = RunMemsnap({"help-markdown"});
    CHECK(r.out.find("## memsnap report\n") != std::string::npos);
    CHECK(r.out.find("| `-f, --format` |") != std::string::npos);
    CHECK(r.out.find("memsnap export --format perfetto snap.pickle -o trace.json") !=
          std::string::npos);
    CHECK(r.out.find("help-markdown") == r.out.find("help-markdown > docs/cli.md"));  // hidden
    CHECK(r.out.find("`-h, --help`") == std::string::npos);
  }

  TEST_CASE("the bash completion completes commands, options and option values") {
    auto r = RunMemsnap({"completion", "bash"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("complete -o filenames -o bashdefault -F _memsnap memsnap") !=
          std::string::npos);
    CHECK(Complete(r.out, "memsnap repo") == "report\n");
    CHECK(Complete(r.out, "memsnap rep") == "replay report\n");
    CHECK(Complete(r.out, "memsnap ex") == "export\n");
    CHECK(Complete(r.out, "memsnap export --form") == "--format\n");
    CHECK(Complete(r.out, "memsnap export --format pe") == "perfetto\n");
    CHECK(Complete(r.out, "memsnap -q report --ban") == "--bands\n");
    CHECK(Complete(r.out, "memsnap --qu") == "--quiet\n");
  }

  TEST_CASE("completion refuses shells it does not know") {
    auto r = RunMemsnap({"completion", "fish"});
    CHECK(r.exit_code == 2);
  }
}

}  // namespace
}  // namespace memsnap
