#include "memsnap/util/table.h"

#include <doctest/doctest.h>

#include <sstream>
#include <tuple>

#include "absl/strings/str_format.h"
#include "memsnap/report/table_render.h"

namespace memsnap {
namespace {

// file (text), reserved (bytes), frag (ratio), segments (count), note (text); a median footer.
Table Sample() {
  Table t;
  t.AddColumn("file", "file", Unit::kText).code = true;
  t.AddColumn("reserved_bytes", "reserved", Unit::kBytes).min_width = 10;
  t.AddColumn("fragmentation", "frag", Unit::kRatio);
  t.AddColumn("segments", "segments", Unit::kCount);
  t.AddColumn("note", "note", Unit::kText);
  t.AddRow({std::string("a.pickle"), int64_t{1536}, 0.12345, int64_t{1234}, std::string("ok")});
  t.AddRow({std::string("b,|c.pickle"), int64_t{3 << 20}, Cell{}, int64_t{7}, std::string("")});
  t.AddFooter({std::string("median"), int64_t{1536}, 0.12345, int64_t{7}, std::string("")});
  return t;
}

std::string Text(const Table& t, const report::TextTableOptions& o = {}) {
  std::ostringstream out;
  report::RenderTableText(t, out, o);
  return out.str();
}

TEST_SUITE("table") {
  TEST_CASE("each unit prints as people read it and as machines read it") {
    CHECK(CellText(int64_t{1536}, Unit::kBytes) == "1.5 KiB");
    CHECK(CellText(int64_t{1048576}, Unit::kDelta) == "+1.0 MiB");
    CHECK(CellText(int64_t{1234567}, Unit::kCount) == "1,234,567");
    CHECK(CellText(0.1234, Unit::kRatio) == "12.3%");
    CHECK(CellText(int64_t{1234567}, Unit::kId) == "1234567");
    CHECK(CellText(int64_t{0x7f3a00000000}, Unit::kAddress) == "0x7f3a00000000");
    CHECK(CellText(Cell{}, Unit::kBytes) == "-");
    CHECK(CellText(std::string("start"), Unit::kId) == "start");
    CHECK(CellCsv(int64_t{1536}, Unit::kBytes) == "1536");
    CHECK(CellCsv(0.123456, Unit::kRatio) == "0.1235");
    CHECK(CellCsv(Cell{}, Unit::kRatio).empty());
    CHECK(report::CellToJson(int64_t{1536}, Unit::kBytes) == 1536);
    CHECK(report::CellToJson(0.123456, Unit::kRatio) == 0.1235);
    CHECK(report::CellToJson(int64_t{0x7f3a00000000}, Unit::kAddress) == "0x7f3a00000000");
    CHECK(report::CellToJson(Cell{}, Unit::kCount).is_null());
  }

  TEST_CASE("text aligns numbers right and text left, with no trailing spaces") {
    CHECK(Text(Sample()) ==
          "file          reserved  frag segments  note\n"
          "a.pickle       1.5 KiB 12.3%    1,234  ok\n"
          "b,|c.pickle    3.0 MiB     -        7\n"
          "median         1.5 KiB 12.3%        7\n");
  }

  TEST_CASE("with fixed widths a long cell pushes only its own line, as printf's widths do") {
    Table t;
    t.AddColumn("category", "category", Unit::kText).min_width = 8;
    t.AddColumn("bytes", "bytes", Unit::kBytes).min_width = 9;
    t.AddColumn("share", "share", Unit::kRatio).min_width = 6;
    t.AddRow({std::string("gradient"), int64_t{1536}, 0.5});
    t.AddRow({std::string("kv_cache_of_the_decoder"), int64_t{3 << 20}, 0.25});
    t.AddRow({std::string("input"), int64_t{7}, 0.125});
    const std::string fixed = Text(t, {.indent = "  ", .header = false, .fixed_widths = true});
    std::string printf_like;
    for (const auto& [name, bytes, share] :
         {std::tuple{"gradient", "1.5 KiB", "50.0%"},
          std::tuple{"kv_cache_of_the_decoder", "3.0 MiB", "25.0%"},
          std::tuple{"input", "7 B", "12.5%"}}) {
      printf_like += absl::StrFormat("  %-8s %9s %6s\n", name, bytes, share);
    }
    CHECK(fixed == printf_like);
    // Without them the long name widens the whole column.
    CHECK(Text(t, {.indent = "  ", .header = false}) != printf_like);
  }

  TEST_CASE("lines written after a row sit under it, and the columns stay aligned") {
    Table t;
    t.AddColumn("bytes", "bytes", Unit::kBytes).min_width = 8;
    t.AddColumn("site", "site", Unit::kText);
    t.AddRow({int64_t{2048}, std::string("linear")});
    t.AddRow({int64_t{1}, std::string("total")});
    t.AddFooter({std::string("[1 other]"), std::string()});
    std::ostringstream out;
    report::RenderTableText(t, out, report::FixedWidths(), [](size_t row, std::ostream& os) {
      if (row == 0) os << "           <- train.py:12\n";
    });
    CHECK(out.str() ==
          "   bytes  site\n"
          " 2.0 KiB  linear\n"
          "           <- train.py:12\n"
          "     1 B  total\n"
          "[1 other]\n");
  }

  TEST_CASE("a fixed-width column starts where the text renderer puts it") {
    Table t;
    t.AddColumn("bytes", "bytes", Unit::kBytes).min_width = 8;
    t.AddColumn("site", "site", Unit::kText).min_width = 6;
    t.AddColumn("note", "note", Unit::kText);
    t.AddRow({int64_t{2048}, std::string("linear"), std::string("x")});
    const report::TextTableOptions o = report::FixedWidths("  ");
    CHECK(report::FixedColumnStart(t, "site", o) == 2 + 8 + 2);
    CHECK(report::FixedColumnStart(t, "note", o) == 2 + 8 + 2 + 6 + 1);
    CHECK(Text(t, o).find("  2.0 KiB  linear x\n") != std::string::npos);
  }

  TEST_CASE("a wider gap keeps phrase labels apart") {
    Table t;
    t.AddColumn("metric", "", Unit::kText);
    t.AddColumn("a", "trace (as recorded)", Unit::kText).align = Align::kRight;
    t.AddColumn("b", "sim: expandable", Unit::kText).align = Align::kRight;
    t.AddRow({std::string("peak"), std::string("1.0 GiB"), std::string("2.0 GiB")});
    report::TextTableOptions o;
    o.gap = 2;
    CHECK(Text(t, o) ==
          "      trace (as recorded)  sim: expandable\n"
          "peak              1.0 GiB          2.0 GiB\n");
    CHECK(Text(t).find("recorded) sim:") != std::string::npos);  // the default: one space
  }

  TEST_CASE("a text column over its maximum width keeps the end of each cell") {
    Table t;
    t.AddColumn("file", "file", Unit::kText).max_width = 10;
    t.AddRow({std::string("ranks/rank0.pickle")});
    t.AddRow({std::string("short")});
    CHECK(Text(t) == "file\n....pickle\nshort\n");
  }

  TEST_CASE("a footer cell spills over the empty cells after it") {
    Table t;
    t.AddColumn("device", "dev", Unit::kId).align = Align::kLeft;
    t.AddColumn("address", "address", Unit::kAddress).align = Align::kLeft;
    t.AddColumn("size", "size", Unit::kBytes);
    t.AddRow({int64_t{0}, int64_t{0x7f00}, int64_t{2048}});
    t.AddFooter({std::string("[3 others]"), std::string(""), int64_t{4096}});
    CHECK(Text(t, {"  ", true}) ==
          "  dev address    size\n"
          "  0   0x7f00  2.0 KiB\n"
          "  [3 others]  4.0 KiB\n");
  }

  TEST_CASE("columns can be left out of the text or of the data") {
    Table t = Sample();
    t.columns[3].in_text = false;
    t.columns[4].in_data = false;
    CHECK(Text(t).find("segments") == std::string::npos);
    nlohmann::ordered_json j = report::TableToJson(t);
    CHECK(j[0].contains("segments"));
    CHECK_FALSE(j[0].contains("note"));
  }

  TEST_CASE("JSON holds one object per row, keyed by column, without the footer") {
    nlohmann::ordered_json j = report::TableToJson(Sample());
    REQUIRE(j.size() == 2);
    CHECK(j[0].dump() ==
          R"({"file":"a.pickle","reserved_bytes":1536,"fragmentation":0.1235,"segments":1234,)"
          R"("note":"ok"})");
    CHECK(j[1]["fragmentation"].is_null());
  }

  TEST_CASE("CSV quotes cells with commas and leaves the footer out") {
    std::ostringstream out;
    report::RenderTableCsv(Sample(), out);
    CHECK(out.str() ==
          "file,reserved_bytes,fragmentation,segments,note\n"
          "a.pickle,1536,0.1235,1234,ok\n"
          "\"b,|c.pickle\",3145728,,7,\n");
  }

  TEST_CASE("Markdown aligns numbers right, escapes pipes and writes code cells as code") {
    std::ostringstream out;
    report::RenderTableMarkdown(Sample(), out);
    CHECK(out.str() ==
          "| file | reserved | frag | segments | note |\n"
          "|---|---:|---:|---:|---|\n"
          "| `a.pickle` | 1.5 KiB | 12.3% | 1,234 | ok |\n"
          "| `b,\\|c.pickle` | 3.0 MiB | - | 7 |  |\n"
          "| `median` | 1.5 KiB | 12.3% | 7 |  |\n");
  }
}

}  // namespace
}  // namespace memsnap
