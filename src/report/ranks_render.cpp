#include "memsnap/report/ranks_render.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_format.h"
#include "memsnap/util/format.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;

// Bytes as integers, ratios rounded to 4 decimals (as in frag --json); negative = unknown.
Json OutlierNumber(double v, bool is_ratio) {
  if (v < 0) return Json(nullptr);
  if (is_ratio) return Json(std::round(v * 10000.0) / 10000.0);
  return Json(static_cast<int64_t>(v));
}

// The file column: as wide as the longest name, at most 60; longer names keep their end.
struct FileColumn {
  size_t width = 4;
  explicit FileColumn(const std::vector<std::string>& files) {
    for (const auto& f : files) width = std::max(width, f.size());
    width = std::min<size_t>(width, 60);
  }
  std::string operator()(const std::string& file) const {
    return file.size() <= width ? file : "..." + file.substr(file.size() - width + 3);
  }
};

std::string Cell(double v, bool is_ratio) {
  if (v < 0) return "-";
  return is_ratio ? FormatPercent(v) : FormatBytes(static_cast<int64_t>(v));
}

Json OutliersToJson(const std::vector<analysis::Outlier>& outliers) {
  Json out = Json::array();
  for (const auto& o : outliers) {
    out.push_back({{"file", o.file},
                   {"metric", o.metric},
                   {"value", OutlierNumber(o.value, o.is_ratio)},
                   {"median", OutlierNumber(o.median, o.is_ratio)},
                   {"reason", o.reason}});
  }
  return out;
}

void RenderOutliers(const std::vector<analysis::Outlier>& outliers, std::ostream& out) {
  if (outliers.empty()) return;
  out << "\noutliers\n";
  for (const auto& o : outliers) out << "  " << o.file << ": " << o.reason << "\n";
}

}  // namespace

nlohmann::ordered_json RanksToJson(const analysis::RankReport& r) {
  nlohmann::ordered_json j;
  j["median_reserved_bytes"] = r.median_reserved;
  j["median_allocated_bytes"] = r.median_allocated;
  j["median_peak_bytes"] = r.median_peak < 0 ? nlohmann::ordered_json(nullptr)
                                             : nlohmann::ordered_json(r.median_peak);
  auto& ranks = j["ranks"] = nlohmann::ordered_json::array();
  for (const auto& f : r.ranks) {
    ranks.push_back({{"file", f.file},
                     {"reserved_bytes", f.reserved_bytes},
                     {"allocated_bytes", f.allocated_bytes},
                     {"peak_bytes", f.peak_bytes < 0 ? nlohmann::ordered_json(nullptr)
                                                     : nlohmann::ordered_json(f.peak_bytes)},
                     {"top_site", f.top_site}});
  }
  j["outliers"] = OutliersToJson(r.outliers);
  return j;
}

void RenderRanksText(const analysis::RankReport& r, std::ostream& out) {
  bool any_peak = false;
  bool any_site = false;
  std::vector<std::string> files;
  for (const auto& f : r.ranks) {
    files.push_back(f.file);
    any_peak = any_peak || f.peak_bytes >= 0;
    any_site = any_site || !f.top_site.empty();
  }
  const FileColumn name(files);
  const size_t width = name.width;
  out << absl::StrFormat("%-*s %12s %12s", width, "file", "reserved", "allocated");
  if (any_peak) out << absl::StrFormat(" %12s", "peak");
  if (any_site) out << "  top site";
  out << "\n";
  for (const auto& f : r.ranks) {
    out << absl::StrFormat("%-*s %12s %12s", width, name(f.file), FormatBytes(f.reserved_bytes),
                           FormatBytes(f.allocated_bytes));
    if (any_peak) out << absl::StrFormat(" %12s", f.peak_bytes < 0 ? "-" : FormatBytes(f.peak_bytes));
    // A stack key is folded, root first: its site is the innermost frame, after the last ';'.
    if (any_site && !f.top_site.empty()) {
      out << "  " << f.top_site.substr(f.top_site.rfind(';') + 1);
    }
    out << "\n";
  }
  out << absl::StrFormat("%-*s %12s %12s", width, "median", FormatBytes(r.median_reserved),
                         FormatBytes(r.median_allocated));
  if (any_peak) out << absl::StrFormat(" %12s", FormatBytes(r.median_peak));
  out << "\n";
  RenderOutliers(r.outliers, out);
}

Json RankTableToJson(const analysis::RankTable& t) {
  Json j;
  Json& medians = j["medians"] = Json::object();
  for (const auto& m : t.metrics) medians[m.name] = OutlierNumber(m.median, m.is_ratio);
  Json& ranks = j["ranks"] = Json::array();
  for (size_t i = 0; i < t.files.size(); ++i) {
    Json row;
    row["file"] = t.files[i];
    for (const auto& m : t.metrics) row[m.name] = OutlierNumber(m.values[i], m.is_ratio);
    if (!t.note_label.empty() && i < t.notes.size()) row[t.note_label] = t.notes[i];
    ranks.push_back(std::move(row));
  }
  j["outliers"] = OutliersToJson(t.outliers);
  return j;
}

void RenderRankTableText(const analysis::RankTable& t, std::ostream& out) {
  const FileColumn name(t.files);
  const bool notes = !t.note_label.empty();
  out << absl::StrFormat("%-*s", name.width, "file");
  for (const auto& m : t.metrics) out << absl::StrFormat(" %12s", m.label);
  if (notes) out << "  " << t.note_label;
  out << "\n";
  for (size_t i = 0; i < t.files.size(); ++i) {
    out << absl::StrFormat("%-*s", name.width, name(t.files[i]));
    for (const auto& m : t.metrics) out << absl::StrFormat(" %12s", Cell(m.values[i], m.is_ratio));
    if (notes && i < t.notes.size() && !t.notes[i].empty()) out << "  " << t.notes[i];
    out << "\n";
  }
  out << absl::StrFormat("%-*s", name.width, "median");
  for (const auto& m : t.metrics) out << absl::StrFormat(" %12s", Cell(m.median, m.is_ratio));
  out << "\n";
  RenderOutliers(t.outliers, out);
}

}  // namespace memsnap::report
