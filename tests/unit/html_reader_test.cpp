// The _memory_viz HTML wrapper: pages built at test time exactly as trace_plot/segment_plot write
// them (tests/unit/pyhelpers.py memory_viz_html), several payloads, gzip, and broken payloads.
#include <doctest/doctest.h>

#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "test_util.h"

namespace memsnap {
namespace {

std::string Html(const std::string& snapshots_expr, const std::string& extra = "") {
  return testing::RunPython("from pyhelpers import *\n" + extra +
                            "sys.stdout.write(memory_viz_html(" + snapshots_expr + "))\n");
}

absl::StatusOr<std::vector<Snapshot>> ParseAll(const std::string& bytes,
                                               const std::string& name = "page.html") {
  auto input = io::FromMemory(bytes, name);
  return parse::ParseSnapshots(*input);
}

}  // namespace

TEST_SUITE("html_reader") {
  TEST_CASE("a trace_plot page gives the same model as the pickle it embeds") {
    for (int protocol : {2, 3, 4, 5}) {
      CAPTURE(protocol);
      std::string html = testing::RunPython(
          "from pyhelpers import *\n"
          "sys.stdout.write(memory_viz_html([load_json('formats/reader_2_1_full.json')], "
          "protocol=" +
          std::to_string(protocol) + "))\n");
      Snapshot from_html = testing::ParseOrFail(html, "page.html");
      CHECK(from_html.source.container == ContainerFormat::kHtml);
      CHECK(from_html.source.pickle_protocol == protocol);
      Snapshot from_pickle = testing::ParseOrFail(
          testing::PythonPickle("load_json('formats/reader_2_1_full.json')", protocol));
      CHECK(testing::ModelText(from_html) == testing::ModelText(from_pickle));
    }
  }

  TEST_CASE("padding of 1, 2 and 3 NUL bytes after STOP is ignored") {
    // Three snapshots whose pickles have different lengths mod 3.
    for (int extra = 0; extra < 3; ++extra) {
      std::string name(static_cast<size_t>(extra + 1), 'x');
      std::string html = Html("[{'segments': [], 'device_traces': [[]], '" + name + "': 1}]");
      auto snaps = ParseAll(html);
      REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
      CHECK(snaps->size() == 1);
    }
  }

  TEST_CASE("several payloads in one page are several snapshots") {
    std::string html = Html(
        "[load_json('formats/reader_2_1_full.json'), load_json('formats/reader_1_13_list.json')]");
    auto snaps = ParseAll(html);
    REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
    REQUIRE(snaps->size() == 2);
    CHECK((*snaps)[0].segments.size() == 2);
    CHECK((*snaps)[1].source.bare_segment_list);
    CHECK((*snaps)[1].source.path == "page.html");
  }

  TEST_CASE("a gzipped HTML page is read") {
    std::string gz = testing::RunPython(
        "from pyhelpers import *\nimport gzip\n"
        "sys.stdout.buffer.write(gzip.compress(memory_viz_html("
        "[load_json('formats/reader_traces_alias.json')]).encode()))\n");
    auto snaps = ParseAll(gz);
    REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
    CHECK((*snaps)[0].source.gzip);
    CHECK((*snaps)[0].events.size() == 3);
  }

  TEST_CASE("broken pages give clear errors naming the file") {
    auto err = [](const std::string& html) {
      auto snaps = ParseAll(html);
      return snaps.ok() ? std::string() : std::string(snaps.status().message());
    };
    CHECK(err("<html><body>hello</body></html>") ==
          "page.html: HTML page without a \"base64\" snapshot payload (not a _memory_viz page?)");
    CHECK(err("<html>[{\"base64\": \"gAJ9cQAu") ==
          "page.html: offset 19: base64 payload: unterminated string");
    CHECK(err("<html>[{\"base64\": \"gA*J\"}]") ==
          "page.html: offset 21: base64 payload: invalid character 0x2a");
    CHECK(
        err("<html>[{\"base64\": \"gAJ\"}]") ==
        "page.html: offset 22: base64 payload: length is not a multiple of 4 (truncated payload?)");
    CHECK(err("<html>[{\"base64\": \"\"}]") == "page.html: offset 18: empty base64 payload");
    CHECK(err("<html>[{\"base64\": 5}]") ==
          "page.html: offset 18: \"base64\" is not followed by a string");
    CHECK(err("<html>[{\"base64\": \"gA==gA==\"}]") ==
          "page.html: offset 23: base64 payload: data after '=' padding");
    // A payload that decodes but is not a pickle: the inner error names the file.
    CHECK(err("<html>[{\"base64\": \"aGVsbG8=\"}]").rfind("page.html: ", 0) == 0);
  }

  TEST_CASE("the JSON escape \\/ inside a payload is accepted") {
    std::string html = Html("[{'segments': [], 'device_traces': []}]");
    // Escape every '/' as a JSON writer may do.
    std::string escaped;
    size_t start = html.find("\"base64\"");
    for (size_t i = 0; i < html.size(); ++i) {
      if (html[i] == '/' && i > start) escaped += '\\';
      escaped += html[i];
    }
    auto snaps = ParseAll(escaped);
    REQUIRE_MESSAGE(snaps.ok(), snaps.status().message());
  }
}

}  // namespace memsnap
