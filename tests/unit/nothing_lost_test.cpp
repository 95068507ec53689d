// What happens to files under memsnap (docs/design.md, "Errors"): inputs that are not regular files
// or change while they are read, outputs that would replace an input or a snapshot.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memsnap/cli/common.h"
#include "memsnap/io/input.h"
#include "memsnap/io/output.h"
#include "memsnap/parse/reader.h"
#include "test_util.h"

namespace memsnap {
namespace {

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A protocol 4 pickle's first bytes: PROTO 4, FRAME.
const std::string kPickleHead = std::string("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}", 12);

TEST_SUITE("nothing lost") {
  TEST_CASE("a mapped file truncated while it is read reads zeros and fails as changed") {
    const std::string path = testing::TempDir() + "/truncated.bin";
    WriteFile(path, std::string(1 << 20, 'x'));
    auto in = io::OpenFile(path);
    REQUIRE(in.ok());
    CHECK((*in)->CheckUnchanged().ok());
    REQUIRE(truncate(path.c_str(), 4096) == 0);
    std::string_view bytes = (*in)->bytes();
    CHECK(bytes[100] == 'x');       // still in the file
    CHECK(bytes[600000] == '\0');   // past its new end: SIGBUS, answered by a zero page
    CHECK(bytes[1048575] == '\0');  // the rest of the mapping too
    const absl::Status st = (*in)->CheckUnchanged();
    CHECK(std::string(st.message()) == path + ": file changed while it was read");
  }

  TEST_CASE("a file rewritten in place after it was opened fails as changed") {
    const std::string path = testing::TempDir() + "/rewritten.bin";
    WriteFile(path, std::string(10000, 'x'));
    auto in = io::OpenFile(path);
    REQUIRE(in.ok());
    WriteFile(path, std::string(20000, 'y'));
    CHECK(std::string((*in)->CheckUnchanged().message()) ==
          path + ": file changed while it was read");
  }

  TEST_CASE("a FIFO is refused without being opened, so no missing writer can block the read") {
    const std::string path = testing::TempDir() + "/fifo";
    std::filesystem::remove(path);
    REQUIRE(mkfifo(path.c_str(), 0600) == 0);
    auto in = io::OpenFile(path);
    CHECK(std::string(in.status().message()) ==
          path + ": not a regular file (a FIFO); give a file, or - to read standard input");
    auto dev = io::OpenFile("/dev/zero");
    CHECK(std::string(dev.status().message()) ==
          "/dev/zero: not a regular file (a character device); give a file, or - to read "
          "standard input");
  }

  TEST_CASE("snapshots are told from memsnap's own outputs by their first bytes") {
    CHECK(parse::LooksLikeSnapshot(kPickleHead));
    CHECK(parse::LooksLikeSnapshot("{\"segments\": [], \"device_traces\": []}"));
    CHECK(parse::LooksLikeSnapshot("[{\"device\": 0, \"total_size\": 2, \"blocks\": []}]"));
    CHECK(parse::LooksLikeSnapshot("<html><script>[{\"name\": \"a\", \"base64\": \"gAR9\"}]"));
    // Not snapshots: a Perfetto trace, the HTML report, JUnit, CSV, folded stacks, nothing.
    CHECK_FALSE(parse::LooksLikeSnapshot("{\"traceEvents\": [{\"name\": \"x\"}]}"));
    CHECK_FALSE(parse::LooksLikeSnapshot("<!doctype html><html><script>var data = {}</script>"));
    CHECK_FALSE(parse::LooksLikeSnapshot("<?xml version=\"1.0\"?><testsuites>"));
    CHECK_FALSE(parse::LooksLikeSnapshot("device,address,version\n0,0x10,0\n"));
    CHECK_FALSE(parse::LooksLikeSnapshot("train.py:6:train 8500\n"));
    CHECK_FALSE(parse::LooksLikeSnapshot(""));
    CHECK_FALSE(parse::LooksLikeSnapshot("\x80\x09"));  // no pickle protocol 9
  }

  TEST_CASE("an output that is an input by path, hard link or symlink is refused, --force or not") {
    const std::string dir = testing::TempDir() + "/links";
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    const std::string in = dir + "/snap.pickle";
    WriteFile(in, kPickleHead);
    std::filesystem::create_hard_link(in, dir + "/hard.pickle");
    std::filesystem::create_symlink("snap.pickle", dir + "/sym.pickle");
    for (const std::string& out : {in, dir + "/hard.pickle", dir + "/sym.pickle"}) {
      for (bool force : {false, true}) {
        absl::Status st = cli::CheckOutputPath("--folded", out, {in}, force);
        CHECK(std::string(st.message()) == "--folded " + out + ": " + out +
                                               " is the same file as the input " + in +
                                               "; refusing to write over it");
      }
    }
    // A directory input stands for its files.
    CHECK_FALSE(cli::CheckOutputPath("-o", in, {dir}, true).ok());
    // A snapshot that is no input: refused without --force only.
    const std::string other = dir + "/other.pickle";
    WriteFile(other, kPickleHead);
    CHECK(std::string(cli::CheckOutputPath("-o", other, {in}, false).message()) ==
          "-o " + other + ": " + other +
              " is a memory snapshot; refusing to overwrite it (use "
              "--force)");
    CHECK(cli::CheckOutputPath("-o", other, {in}, true).ok());
    // Anything else, standard output and a new file pass.
    WriteFile(dir + "/trace.json", "{\"traceEvents\": []}");
    CHECK(cli::CheckOutputPath("-o", dir + "/trace.json", {in}, false).ok());
    CHECK(cli::CheckOutputPath("-o", "-", {in}, false).ok());
    CHECK(cli::CheckOutputPath("-o", dir + "/new.json", {in}, false).ok());
  }
}

}  // namespace
}  // namespace memsnap
