#include "memsnap/report/ranks_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;

// How far above the median: a percent of it for bytes, percentage points for ratios.
std::string Above(double v, double median, bool is_ratio) {
  if (is_ratio) return absl::StrFormat("%.1f points", (v - median) * 100.0);
  return FormatPercent((v - median) / median);
}
// How far below the median, in the same units.
std::string Below(double v, double median, bool is_ratio) {
  if (is_ratio) return absl::StrFormat("%.1f points", (median - v) * 100.0);
  return FormatPercent((median - v) / median);
}

Cell Value(double v, Unit unit) {
  if (v < 0) return {};
  if (unit == Unit::kRatio) return v;
  return static_cast<int64_t>(v);
}

Json OutliersToJson(const std::vector<analysis::Outlier>& outliers) {
  Json out = Json::array();
  for (const auto& o : outliers) {
    // A top-site outlier has no number: its value and median are null.
    const bool number = o.unit != Unit::kText;
    out.push_back({{"file", o.file},
                   {"metric", o.metric},
                   {"value", number ? CellToJson(Value(o.value, o.unit), o.unit) : Json(nullptr)},
                   {"median", number ? CellToJson(Value(o.median, o.unit), o.unit) : Json(nullptr)},
                   {"reason", OutlierReason(o)}});
  }
  return out;
}

void RenderOutliers(const std::vector<analysis::Outlier>& outliers, std::ostream& out) {
  if (outliers.empty()) return;
  out << "\noutliers\n";
  for (const auto& o : outliers) out << "  " << o.file << ": " << OutlierReason(o) << "\n";
}

// "activation +4.0 MiB, gradient -1.0 MiB": the kinds that differ, largest first.
std::string KindsText(const std::vector<analysis::RankKindDelta>& kinds,
                      const analysis::CategoryNames& names) {
  std::string text;
  for (const analysis::RankKindDelta& k : kinds) {
    absl::StrAppend(&text, text.empty() ? "" : ", ", Sv(names.Name(k.category)), " ",
                    FormatDelta(k.delta_bytes));
  }
  return text;
}

// Each outlier against the median rank: its kinds on one line, then its sites, one a line.
void RenderDifferences(const std::vector<analysis::RankDifference>& differences,
                       const analysis::CategoryNames& names, std::ostream& out) {
  for (const analysis::RankDifference& d : differences) {
    out << "\n" << d.file << " against the median rank " << d.median_file << ":\n";
    if (d.kinds.empty()) {
      out << "  the same bytes of every kind and site\n";
      continue;
    }
    out << "  by kind: " << KindsText(d.kinds, names) << "\n";
    Table sites;
    sites.AddColumn("delta_bytes", "delta", Unit::kDelta).min_width = 12;
    sites.AddColumn("category", "category", Unit::kText).min_width = 16;
    sites.AddColumn("site", "site", Unit::kText);
    for (const analysis::RankSiteDelta& s : d.sites) {
      sites.AddRow({s.delta_bytes(), std::string(names.Name(s.category)), s.site});
    }
    RenderTableText(sites, out, {.indent = "  ", .header = false, .fixed_widths = true});
  }
}

Json DifferencesToJson(const std::vector<analysis::RankDifference>& differences,
                       const analysis::CategoryNames& names) {
  Json out = Json::array();
  for (const analysis::RankDifference& d : differences) {
    Json kinds = Json::array();
    for (const analysis::RankKindDelta& k : d.kinds) {
      kinds.push_back(
          {{"category", std::string(names.Name(k.category))}, {"delta_bytes", k.delta_bytes}});
    }
    Json sites = Json::array();
    for (const analysis::RankSiteDelta& s : d.sites) {
      sites.push_back({{"site", s.site},
                       {"category", std::string(names.Name(s.category))},
                       {"bytes", s.bytes},
                       {"median_bytes", s.median_bytes},
                       {"delta_bytes", s.delta_bytes()}});
    }
    out.push_back({{"file", d.file},
                   {"median_file", d.median_file},
                   {"metric", d.metric},
                   {"kinds", std::move(kinds)},
                   {"sites", std::move(sites)}});
  }
  return out;
}

}  // namespace

std::string OutlierReason(const analysis::Outlier& o) {
  const bool is_ratio = o.unit == Unit::kRatio;
  switch (o.kind) {
    case analysis::OutlierKind::kOtherTopSite:
      return absl::StrCat("top site differs: ", o.top_site, " (most ranks: ", o.common_site, ")");
    case analysis::OutlierKind::kAboveMedian:
      return absl::StrCat(o.metric, " ", internal::FigureText(o.value, is_ratio), " is ",
                          Above(o.value, o.median, is_ratio), " above the median ",
                          internal::FigureText(o.median, is_ratio));
    case analysis::OutlierKind::kBelowMedian:
      return absl::StrCat(o.metric, " ", internal::FigureText(o.value, is_ratio), " is ",
                          Below(o.value, o.median, is_ratio), " below the median ",
                          internal::FigureText(o.median, is_ratio));
    case analysis::OutlierKind::kHighest:
    case analysis::OutlierKind::kHighestAbove:
      break;
  }
  std::string reason =
      absl::StrCat("highest ", o.metric, ": ", internal::FigureText(o.value, is_ratio), " (median ",
                   internal::FigureText(o.median, is_ratio), ")");
  if (o.kind == analysis::OutlierKind::kHighestAbove) {
    absl::StrAppend(&reason, ", ", Above(o.value, o.median, is_ratio), " above it");
  }
  return reason;
}

Table RankTableToTable(const analysis::RankTable& t) {
  Table table;
  Column& file = table.AddColumn("file", "file", Unit::kText);
  file.max_width = 60;  // longer paths keep their end
  file.code = true;
  for (const auto& m : t.metrics) {
    Column& c = table.AddColumn(m.name, m.label, m.unit);
    c.min_width = 12;
    c.in_text = m.median >= 0;
  }
  for (const auto& n : t.notes) table.AddColumn(n.name, n.label, Unit::kText).in_text = n.in_text;
  for (size_t i = 0; i < t.files.size(); ++i) {
    std::vector<Cell> row = {t.files[i]};
    for (const auto& m : t.metrics) row.push_back(Value(m.values[i], m.unit));
    for (const auto& n : t.notes) row.push_back(i < n.values.size() ? n.values[i] : "");
    table.AddRow(std::move(row));
  }
  std::vector<Cell> median = {std::string("median")};
  for (const auto& m : t.metrics) median.push_back(Value(m.median, m.unit));
  table.AddFooter(std::move(median));
  for (auto& cell : table.footer.back()) {
    if (std::holds_alternative<std::monostate>(cell)) cell = std::string();
  }
  return table;
}

Json LeftOutToJson(const std::vector<analysis::LeftOutFile>& files) {
  Json j = Json::array();
  for (const analysis::LeftOutFile& f : files)
    j.push_back(Json{{"path", f.path}, {"reason", f.reason}});
  return j;
}

Json RankTableToJson(const analysis::RankTable& t) {
  Json j;
  Json& medians = j["medians"] = Json::object();
  for (const auto& m : t.metrics) medians[m.name] = CellToJson(Value(m.median, m.unit), m.unit);
  j["ranks"] = TableToJson(RankTableToTable(t));
  j["outliers"] = OutliersToJson(t.outliers);
  if (t.explained) j["differences"] = DifferencesToJson(t.differences, t.categories);
  return j;
}

void RenderRankTableText(const analysis::RankTable& t, std::ostream& out) {
  RenderTableText(RankTableToTable(t), out);
  RenderOutliers(t.outliers, out);
  RenderDifferences(t.differences, t.categories, out);
}

}  // namespace memsnap::report
