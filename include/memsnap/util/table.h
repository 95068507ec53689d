// A typed output table: columns that know their unit (bytes, counts, ratios, ids, addresses,
// text), rows of cells, and footer rows. Commands build one and hand it to the generic renderers
// of report/table_render.h, which print it as aligned text, JSON, CSV or Markdown; no command
// formats a figure or aligns a column by hand (docs/tables.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace memsnap {

/// What a column's numbers are. The unit decides every format: a kBytes cell is "1.5 GiB" in
/// text and Markdown and 1610612736 in JSON and CSV; a kRatio cell is "12.3%" there and 0.1234
/// here.
enum class Unit : uint8_t {
  kBytes,    // an amount of memory, int64: "1.5 GiB" / 1610612736
  kDelta,    // a signed change of memory, int64: "+1.0 MiB" / 1048576
  kCount,    // a number of things, int64: "1,234" / 1234
  kRatio,    // a fraction, double: "12.3%" / 0.1234 (4 decimals)
  kId,       // a name that is a number (device, stream, event index), int64: "7" / 7
  kAddress,  // a device address, int64 holding the uint64: "0x7f3a00000000" in every format
  kText,     // a string, printed as it is
};

enum class Align : uint8_t {
  kAuto,  // numbers right, text left
  kLeft,
  kRight,
};

/// A cell: unknown (monostate: "-" in text, null in JSON, empty in CSV), an integer (every unit
/// but kRatio and kText), a fraction (kRatio) or a string (kText; any unit may hold a string,
/// e.g. "start" in an event-index column, printed as it is and as a JSON string).
using Cell = std::variant<std::monostate, int64_t, double, std::string>;

struct Column {
  std::string key;    // JSON key and CSV header: "reserved_bytes"; snake_case
  std::string label;  // text and Markdown header: "reserved"
  Unit unit = Unit::kText;
  Align align = Align::kAuto;
  /// The text renderer's minimum width (the column still grows to fit its header and cells).
  int min_width = 0;
  /// The text renderer's maximum width for a kText column; longer cells keep their end behind
  /// "...". 0: no limit.
  int max_width = 0;
  /// Which renderers show the column: a combined "pool" label can be text-only while the JSON
  /// carries "pool" and "pool_type" apart.
  bool in_text = true;  // text and Markdown
  bool in_data = true;  // JSON and CSV
  /// Markdown: the cell is code (a file name, a source line), written between backquotes.
  bool code = false;

  bool right_aligned() const {
    return align == Align::kRight || (align == Align::kAuto && unit != Unit::kText);
  }
};

struct Table {
  std::vector<Column> columns;
  std::vector<std::vector<Cell>> rows;    // each as long as `columns`
  std::vector<std::vector<Cell>> footer;  // text and Markdown only ("median", "[3 others]")

  /// Appends a column and returns it for further settings.
  Column& AddColumn(std::string key, std::string label, Unit unit);
  /// Appends a row; a row shorter than `columns` is padded with unknown cells.
  void AddRow(std::vector<Cell> cells);
  void AddFooter(std::vector<Cell> cells);
  /// The index of the column with this key; -1 when there is none.
  int Find(std::string_view key) const;
};

/// A cell as people read it (text and Markdown): "1.5 GiB", "12.3%", "1,234", "-" when unknown.
std::string CellText(const Cell& cell, Unit unit);

/// A cell as CSV writes it: integers plain, ratios with 4 decimals, addresses in hex, text as it
/// is (the CSV renderer quotes it), "" when unknown.
std::string CellCsv(const Cell& cell, Unit unit);

/// A fraction rounded to 4 decimals, as JSON and CSV carry ratios.
double RoundRatio(double fraction);

}  // namespace memsnap
