// `--threads N` reaches every command that reads a file (docs/cli.md, the global flags): one file
// is decoded on N threads with its timeline pass beside the reader, the files of a directory are
// read side by side. Whatever N, the output must be the same, byte for byte.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/cli/common.h"
#include "memsnap/util/parallel.h"
#include "test_util.h"

namespace memsnap {
namespace {

// The output of `memsnap --threads N args...`, stdout then stderr.
std::string Output(const std::string& threads, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"--threads", threads};
  all.insert(all.end(), args.begin(), args.end());
  testing::RunResult r = testing::RunMemsnap(all);
  return "exit " + std::to_string(r.exit_code) + "\n" + r.out + "\n--- stderr\n" + r.err;
}

TEST_CASE("--threads is split between the files of a directory, never exceeded, never below one") {
  cli::Context ctx;
  ctx.threads = 8;
  query::ReadSettings settings = cli::ReadSettingsOf(ctx);
  CHECK(query::ThreadsPerFile(settings, 1) == 8);  // one file: decoded on all of them
  CHECK(query::ThreadsPerFile(settings, 3) == 2);  // 3 side by side, 2 each
  CHECK(query::ThreadsPerFile(settings, 8) == 1);
  CHECK(query::ThreadsPerFile(settings, 64) == 1);  // 8 side by side, one each
  settings.threads = 1;
  CHECK(query::ThreadsPerFile(settings, 5) == 1);
  settings.threads = 0;  // every core
  CHECK(query::ThreadsPerFile(settings, 1) == static_cast<int>(ThreadsFor(0)));
}

TEST_CASE("every command that reads gives the same output on 1, 2 and 5 threads" *
          doctest::test_suite("corpus")) {
  std::vector<std::string> files = testing::CorpusFiles();
  std::optional<std::string> dir = testing::CorpusDir();
  if (files.empty() || !dir) return;  // skipped: the corpus is absent
  // The two largest files: the ones most likely to be cut into chunks for several threads.
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return std::filesystem::file_size(a) > std::filesystem::file_size(b);
  });
  REQUIRE(files.size() >= 2);
  const std::string& a = files[0];
  const std::string& b = files[1];
  const std::vector<std::vector<std::string>> commands = {
      {"summary", a},
      {"summary", "--json", *dir},
      {"timeline", "--json", a},
      {"top", a},
      {"top", "--json", *dir},
      {"blocks", "--at", "peak", "--json", a},
      {"diff", "--json", b, a},
      {"diff", "--folded", "-", "--by", "function", b, a},
      {"check", "--max-peak", "1TiB", "--baseline", b, a},
      {"check", "--max-reserved", "1TiB", "--json", "--baseline", *dir, *dir},
      {"frag", "--json", a},
      {"frag", "--json", *dir},
      {"leaks", "--json", a},
      {"oom", "--device-memory", "1GiB", "--json", a},
      {"replay", "--json", a},
      {"export", "--format", "csv", a},
      {"convert", "--format", "json", a, "-"},
      {"report", "-o", "-", b, a},
  };
  for (const std::vector<std::string>& args : commands) {
    std::string line;
    for (const std::string& s : args) line += s + " ";
    CAPTURE(line);
    const std::string one = Output("1", args);
    CHECK(one.starts_with("exit 0\n"));
    CHECK(Output("2", args) == one);
    CHECK(Output("5", args) == one);
  }
}

}  // namespace
}  // namespace memsnap
