// The generic renderers of a typed table (util/table.h): aligned text, JSON, CSV and Markdown,
// so that every command prints its tables the same way in every format (docs/tables.md).
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "memsnap/util/table.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

struct TextTableOptions {
  std::string indent;  // before every line, e.g. "  " under a section title
  bool header = true;  // the line of labels
  /// Each column exactly as wide as its min_width (or its label): a longer cell is printed whole
  /// and pushes the rest of its own line, not the whole column (the layout of a printf table, for
  /// a table whose text must stay as it was when one cell is long).
  bool fixed_widths = false;
  /// Spaces between columns, at least (two stay two where text follows a number). A table whose
  /// labels are phrases, side by side, reads better with 2.
  int gap = 1;
};

/// Options for a table whose columns keep fixed widths (TextTableOptions::fixed_widths).
inline TextTableOptions FixedWidths(std::string indent = "") {
  TextTableOptions o;
  o.indent = std::move(indent);
  o.fixed_widths = true;
  return o;
}

/// Called after each row's line (not the header's or a footer's) with the row's index: the lines
/// that belong under a row, such as a site's callers, without breaking the columns.
using AfterRow = std::function<void(size_t row, std::ostream& out)>;

/// Aligned columns: each as wide as its widest cell (at least min_width, at most max_width for
/// text), numbers right-aligned, text left-aligned; one space between columns, two where a
/// left-aligned column follows a right-aligned one; no trailing spaces. A footer cell followed
/// by empty ("") cells spills over them (a "[3 others]" row under several columns). Only
/// columns with in_text.
void RenderTableText(const Table& table, std::ostream& out, const TextTableOptions& options = {},
                     const AfterRow& after_row = {});

/// Where the column with this key starts on each line of a table printed with fixed widths
/// (TextTableOptions::fixed_widths), indent included: the place for the lines after_row writes
/// under a row's last column. Past the last column when no shown column has the key.
size_t FixedColumnStart(const Table& table, std::string_view key, const TextTableOptions& options);

/// One JSON value per cell: integers for bytes, counts and ids, ratios rounded to 4 decimals,
/// addresses and text as strings, null for unknown cells.
nlohmann::ordered_json CellToJson(const Cell& cell, Unit unit);

/// One row as an object keyed by column key (columns with in_data, in column order).
nlohmann::ordered_json RowToJson(const Table& table, const std::vector<Cell>& row);

/// The rows (not the footer) as an array of RowToJson objects.
nlohmann::ordered_json TableToJson(const Table& table);

/// A header line of keys and one line per row (not the footer), RFC 4180 quoting; only columns
/// with in_data.
void RenderTableCsv(const Table& table, std::ostream& out);

/// A GitHub-flavoured Markdown table of labels, rows and footer rows; numbers right-aligned,
/// code columns between backquotes. Only columns with in_text.
void RenderTableMarkdown(const Table& table, std::ostream& out);

}  // namespace memsnap::report
