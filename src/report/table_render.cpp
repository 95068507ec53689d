#include "memsnap/report/table_render.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "memsnap/util/format.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;

std::vector<size_t> Shown(const Table& t, bool text) {
  std::vector<size_t> shown;
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (text ? t.columns[i].in_text : t.columns[i].in_data) shown.push_back(i);
  }
  return shown;
}

bool IsEmpty(const Cell& c) {
  const auto* s = std::get_if<std::string>(&c);
  return s != nullptr && s->empty();
}

// A text cell that does not fit keeps its end (the file name of a long path).
std::string Clip(std::string s, size_t width) {
  if (width < 4 || s.size() <= width) return s;
  return "..." + s.substr(s.size() - width + 3);
}

// How many shown columns, starting at shown[k], a cell covers: itself and the empty cells after
// it, when it is a footer's left-aligned text (a "[3 others]" row under several columns).
size_t Span(const Table& t, const std::vector<size_t>& shown, const std::vector<Cell>& row,
            size_t k, bool footer) {
  if (!footer || t.columns[shown[k]].right_aligned() || IsEmpty(row[shown[k]])) return 1;
  size_t n = 1;
  while (k + n < shown.size() && IsEmpty(row[shown[k + n]])) ++n;
  return n;
}

void AppendCsv(std::string_view s, std::ostream& out) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) {
    out << s;
    return;
  }
  out << '"';
  for (char ch : s) {
    if (ch == '"') out << '"';
    out << ch;
  }
  out << '"';
}

std::string MarkdownEscape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n' || ch == '\r') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

// Each shown column's width before any cell is measured: its minimum, or its label's.
std::vector<size_t> StartWidths(const Table& t, const std::vector<size_t>& shown,
                                const TextTableOptions& o) {
  std::vector<size_t> width(shown.size());
  for (size_t k = 0; k < shown.size(); ++k) {
    const Column& c = t.columns[shown[k]];
    width[k] = std::max<size_t>(c.min_width, o.header ? c.label.size() : 0);
  }
  return width;
}

// A text column is at most its max_width (never under its min_width).
void ClampWidths(const Table& t, const std::vector<size_t>& shown, std::vector<size_t>& width) {
  for (size_t k = 0; k < shown.size(); ++k) {
    const Column& c = t.columns[shown[k]];
    if (c.max_width > 0 && c.unit == Unit::kText) {
      width[k] = std::min(width[k], std::max<size_t>(c.max_width, c.min_width));
    }
  }
}

// The spaces before shown column k (k > 0): two where left-aligned text follows a right-aligned
// number (one would glue them), at least the options' gap.
size_t Gap(const Table& t, const std::vector<size_t>& shown, size_t k, const TextTableOptions& o) {
  const int rule =
      !t.columns[shown[k]].right_aligned() && t.columns[shown[k - 1]].right_aligned() ? 2 : 1;
  return static_cast<size_t>(std::max(rule, o.gap));
}

}  // namespace

size_t FixedColumnStart(const Table& t, std::string_view key, const TextTableOptions& o) {
  const std::vector<size_t> shown = Shown(t, true);
  std::vector<size_t> width = StartWidths(t, shown, o);
  ClampWidths(t, shown, width);
  size_t start = o.indent.size();
  for (size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) start += Gap(t, shown, k, o);
    if (t.columns[shown[k]].key == key) return start;
    start += width[k];
  }
  return start;
}

void RenderTableText(const Table& t, std::ostream& out, const TextTableOptions& o,
                     const AfterRow& after_row) {
  const std::vector<size_t> shown = Shown(t, true);
  if (shown.empty()) return;
  std::vector<size_t> width = StartWidths(t, shown, o);
  auto measure = [&](const std::vector<Cell>& row, bool footer) {
    for (size_t k = 0; k < shown.size(); ++k) {
      if (Span(t, shown, row, k, footer) > 1) continue;  // measured with the columns it spans
      const Column& c = t.columns[shown[k]];
      width[k] = std::max(width[k], CellText(row[shown[k]], c.unit).size());
    }
  };
  if (!o.fixed_widths) {
    for (const auto& row : t.rows) measure(row, false);
    for (const auto& row : t.footer) measure(row, true);
  }
  ClampWidths(t, shown, width);
  auto gap = [&](size_t k) { return Gap(t, shown, k, o); };
  auto line = [&](const std::vector<std::string>& cells, const std::vector<size_t>& spans) {
    std::string s = o.indent;
    for (size_t k = 0; k < shown.size(); k += spans[k]) {
      size_t w = width[k];
      for (size_t j = 1; j < spans[k]; ++j) w += gap(k + j) + width[k + j];
      if (k > 0) s.append(gap(k), ' ');
      const Column& c = t.columns[shown[k]];
      std::string text =
          c.unit == Unit::kText && spans[k] == 1 && !o.fixed_widths ? Clip(cells[k], w) : cells[k];
      size_t pad = text.size() < w ? w - text.size() : 0;
      if (c.right_aligned()) s.append(pad, ' ');
      s += text;
      if (!c.right_aligned()) s.append(pad, ' ');
    }
    while (s.size() > o.indent.size() && s.back() == ' ') s.pop_back();
    out << s << "\n";
  };
  if (o.header) {
    std::vector<std::string> labels;
    for (size_t i : shown) labels.push_back(t.columns[i].label);
    line(labels, std::vector<size_t>(shown.size(), 1));
  }
  auto row_line = [&](const std::vector<Cell>& row, bool footer) {
    std::vector<std::string> cells;
    std::vector<size_t> spans;
    for (size_t k = 0; k < shown.size(); ++k) {
      cells.push_back(CellText(row[shown[k]], t.columns[shown[k]].unit));
      spans.push_back(Span(t, shown, row, k, footer));
    }
    line(cells, spans);
  };
  for (size_t i = 0; i < t.rows.size(); ++i) {
    row_line(t.rows[i], false);
    if (after_row) after_row(i, out);
  }
  for (const auto& row : t.footer) row_line(row, true);
}

Json CellToJson(const Cell& cell, Unit unit) {
  if (std::holds_alternative<std::monostate>(cell)) return nullptr;
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  if (unit == Unit::kRatio) {
    double v = std::holds_alternative<double>(cell) ? std::get<double>(cell)
                                                    : static_cast<double>(std::get<int64_t>(cell));
    return RoundRatio(v);
  }
  if (unit == Unit::kAddress) return CellText(cell, unit);
  if (const auto* d = std::get_if<double>(&cell)) return *d;
  return std::get<int64_t>(cell);
}

Json RowToJson(const Table& t, const std::vector<Cell>& row) {
  Json j = Json::object();
  for (size_t i : Shown(t, false)) j[t.columns[i].key] = CellToJson(row[i], t.columns[i].unit);
  return j;
}

Json TableToJson(const Table& t) {
  Json rows = Json::array();
  for (const auto& row : t.rows) rows.push_back(RowToJson(t, row));
  return rows;
}

void RenderTableCsv(const Table& t, std::ostream& out) {
  const std::vector<size_t> shown = Shown(t, false);
  for (size_t k = 0; k < shown.size(); ++k) {
    if (k > 0) out << ',';
    AppendCsv(t.columns[shown[k]].key, out);
  }
  out << "\n";
  for (const auto& row : t.rows) {
    for (size_t k = 0; k < shown.size(); ++k) {
      if (k > 0) out << ',';
      AppendCsv(CellCsv(row[shown[k]], t.columns[shown[k]].unit), out);
    }
    out << "\n";
  }
}

void RenderTableMarkdown(const Table& t, std::ostream& out) {
  const std::vector<size_t> shown = Shown(t, true);
  if (shown.empty()) return;
  out << "|";
  for (size_t i : shown) out << " " << MarkdownEscape(t.columns[i].label) << " |";
  out << "\n|";
  for (size_t i : shown) out << (t.columns[i].right_aligned() ? "---:|" : "---|");
  out << "\n";
  auto row_line = [&](const std::vector<Cell>& row) {
    out << "|";
    for (size_t i : shown) {
      const Column& c = t.columns[i];
      std::string text = MarkdownEscape(CellText(row[i], c.unit));
      bool code = c.code && !text.empty() && !std::holds_alternative<std::monostate>(row[i]);
      out << " " << (code ? "`" + text + "`" : text) << " |";
    }
    out << "\n";
  };
  for (const auto& row : t.rows) row_line(row);
  for (const auto& row : t.footer) row_line(row);
}

}  // namespace memsnap::report
