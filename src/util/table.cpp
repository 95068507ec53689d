#include "memsnap/util/table.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/util/format.h"

namespace memsnap {

Column& Table::AddColumn(std::string key, std::string label, Unit unit) {
  Column& c = columns.emplace_back();
  c.key = std::move(key);
  c.label = std::move(label);
  c.unit = unit;
  return c;
}

void Table::AddRow(std::vector<Cell> cells) {
  cells.resize(columns.size());
  rows.push_back(std::move(cells));
}

void Table::AddFooter(std::vector<Cell> cells) {
  cells.resize(columns.size());
  footer.push_back(std::move(cells));
}

int Table::Find(std::string_view key) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i].key == key) return static_cast<int>(i);
  }
  return -1;
}

double RoundRatio(double fraction) { return std::round(fraction * 10000.0) / 10000.0; }

namespace {

// An integer cell of a kRatio column (or a ratio cell of an integer column) is read as the
// other kind, so that a builder's int/double slip still prints the number.
double AsDouble(const Cell& cell) {
  if (const auto* i = std::get_if<int64_t>(&cell)) return static_cast<double>(*i);
  return std::get<double>(cell);
}

int64_t AsInt(const Cell& cell) {
  if (const auto* d = std::get_if<double>(&cell)) return static_cast<int64_t>(*d);
  return std::get<int64_t>(cell);
}

}  // namespace

std::string CellText(const Cell& cell, Unit unit) {
  if (std::holds_alternative<std::monostate>(cell)) return "-";
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  switch (unit) {
    case Unit::kBytes:
      return FormatBytes(AsInt(cell));
    case Unit::kDelta:
      return FormatDelta(AsInt(cell));
    case Unit::kCount:
      return FormatCount(AsInt(cell));
    case Unit::kRatio:
      return FormatPercent(AsDouble(cell));
    case Unit::kId:
      return absl::StrCat(AsInt(cell));
    case Unit::kAddress:
      return FormatAddress(static_cast<uint64_t>(AsInt(cell)));
    case Unit::kText:
      break;
  }
  return std::holds_alternative<double>(cell) ? absl::StrCat(std::get<double>(cell))
                                              : absl::StrCat(AsInt(cell));
}

std::string CellCsv(const Cell& cell, Unit unit) {
  if (std::holds_alternative<std::monostate>(cell)) return "";
  if (const auto* s = std::get_if<std::string>(&cell)) return *s;
  if (unit == Unit::kRatio) return absl::StrFormat("%.4f", AsDouble(cell));
  if (unit == Unit::kAddress) return FormatAddress(static_cast<uint64_t>(AsInt(cell)));
  if (std::holds_alternative<double>(cell)) return absl::StrCat(std::get<double>(cell));
  return absl::StrCat(AsInt(cell));
}

}  // namespace memsnap
