#include "memsnap/report/ranks_render.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "memsnap/util/format.h"

namespace memsnap::report {

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
  auto& outliers = j["outliers"] = nlohmann::ordered_json::array();
  for (const auto& o : r.outliers) {
    outliers.push_back({{"file", o.file},
                        {"metric", o.metric},
                        {"value", o.value},
                        {"median", o.median},
                        {"reason", o.reason}});
  }
  return j;
}

void RenderRanksText(const analysis::RankReport& r, std::ostream& out) {
  size_t width = 4;
  bool any_peak = false;
  for (const auto& f : r.ranks) {
    width = std::max(width, f.file.size());
    any_peak = any_peak || f.peak_bytes >= 0;
  }
  width = std::min<size_t>(width, 60);
  auto name = [&](const std::string& file) {
    return file.size() <= width ? file : "..." + file.substr(file.size() - width + 3);
  };
  out << absl::StrFormat("%-*s %12s %12s", width, "file", "reserved", "allocated");
  if (any_peak) out << absl::StrFormat(" %12s", "peak");
  out << "\n";
  for (const auto& f : r.ranks) {
    out << absl::StrFormat("%-*s %12s %12s", width, name(f.file), FormatBytes(f.reserved_bytes),
                           FormatBytes(f.allocated_bytes));
    if (any_peak) out << absl::StrFormat(" %12s", f.peak_bytes < 0 ? "-" : FormatBytes(f.peak_bytes));
    out << "\n";
  }
  out << absl::StrFormat("%-*s %12s %12s", width, "median", FormatBytes(r.median_reserved),
                         FormatBytes(r.median_allocated));
  if (any_peak) out << absl::StrFormat(" %12s", FormatBytes(r.median_peak));
  out << "\n";
  if (!r.outliers.empty()) {
    out << "\noutliers\n";
    for (const auto& o : r.outliers) out << "  " << o.file << ": " << o.reason << "\n";
  }
}

}  // namespace memsnap::report
