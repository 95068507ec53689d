#include "memsnap/analysis/ranks.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"

namespace memsnap::analysis {

namespace {

int64_t Median(std::vector<int64_t> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

}  // namespace

RankReport CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options) {
  RankReport r;
  r.ranks = std::move(ranks);
  if (r.ranks.empty()) return r;
  std::vector<int64_t> reserved, allocated, peak;
  for (const auto& f : r.ranks) {
    reserved.push_back(f.reserved_bytes);
    allocated.push_back(f.allocated_bytes);
    if (f.peak_bytes >= 0) peak.push_back(f.peak_bytes);
  }
  r.median_reserved = Median(reserved);
  r.median_allocated = Median(allocated);
  r.median_peak = Median(peak);

  struct Metric {
    const char* name;
    int64_t RankFigures::*field;
    int64_t median;
  };
  const Metric metrics[] = {{"peak_bytes", &RankFigures::peak_bytes, r.median_peak},
                            {"reserved_bytes", &RankFigures::reserved_bytes, r.median_reserved},
                            {"allocated_bytes", &RankFigures::allocated_bytes, r.median_allocated}};
  for (const Metric& m : metrics) {
    if (m.median < 0) continue;
    // The highest rank of each metric is always named (first in input order on ties).
    size_t best = 0;
    for (size_t i = 1; i < r.ranks.size(); ++i) {
      if (r.ranks[i].*m.field > r.ranks[best].*m.field) best = i;
    }
    for (size_t i = 0; i < r.ranks.size(); ++i) {
      int64_t v = r.ranks[i].*m.field;
      if (v < 0) continue;
      bool deviates = m.median > 0 && static_cast<double>(v) >
                                          static_cast<double>(m.median) * (1.0 + options.deviation);
      if (i != best && !deviates) continue;
      std::string reason =
          i == best ? absl::StrCat("highest ", m.name, ": ", FormatBytes(v), " (median ",
                                   FormatBytes(m.median), ")")
                    : absl::StrCat(m.name, " ", FormatBytes(v), " is ",
                                   FormatPercent(static_cast<double>(v - m.median) /
                                                 static_cast<double>(m.median)),
                                   " above the median ", FormatBytes(m.median));
      if (i == best && deviates) {
        absl::StrAppend(&reason, ", ",
                        FormatPercent(static_cast<double>(v - m.median) /
                                      static_cast<double>(m.median)),
                        " above it");
      }
      r.outliers.push_back(Outlier{r.ranks[i].file, m.name, v, m.median, reason});
    }
  }
  // Top sites: the most common one is "normal"; ranks with another top site are called out.
  std::map<std::string, int> counts;
  for (const auto& f : r.ranks) {
    if (!f.top_site.empty()) ++counts[f.top_site];
  }
  int with_site = 0;
  for (const auto& [site, n] : counts) with_site += n;
  auto common = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;  // ties: the first in text order wins (std::map order)
  });
  // Only a majority makes a site "normal"; without one there is nothing to stand out from.
  if (counts.size() > 1 && common->second * 2 > with_site) {
    for (const auto& f : r.ranks) {
      if (!f.top_site.empty() && f.top_site != common->first) {
        r.outliers.push_back(Outlier{f.file, "top_site", 0, 0,
                                     absl::StrCat("top site differs: ", f.top_site, " (most ranks: ",
                                                  common->first, ")")});
      }
    }
  }
  return r;
}

}  // namespace memsnap::analysis
