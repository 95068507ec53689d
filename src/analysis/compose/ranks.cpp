#include "memsnap/analysis/compose/ranks.h"

#include <algorithm>
#include <map>

namespace memsnap::analysis {

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

bool IsRatio(const RankMetric& m) { return m.unit == Unit::kRatio; }

void FindOutliers(const std::vector<std::string>& files, const RankMetric& m,
                  const RankOptions& options, std::vector<Outlier>& out) {
  if (m.median < 0) return;
  // The highest rank is named (first in input order on ties) unless it is no higher than the
  // median: when every rank holds the same figure, none stands out.
  size_t best = 0;
  for (size_t i = 1; i < m.values.size(); ++i) {
    if (m.values[i] > m.values[best]) best = i;
  }
  const bool name_best = m.values[best] > m.median;
  for (size_t i = 0; i < m.values.size(); ++i) {
    double v = m.values[i];
    if (v < 0) continue;
    const bool is_ratio = IsRatio(m);
    bool deviates = is_ratio ? v > m.median + options.deviation
                             : m.median > 0 && v > m.median * (1.0 + options.deviation);
    bool is_best = i == best && name_best;
    if (!is_best && !deviates) continue;
    const OutlierKind kind = !is_best   ? OutlierKind::kAboveMedian
                             : deviates ? OutlierKind::kHighestAbove
                                        : OutlierKind::kHighest;
    out.push_back(Outlier{files[i], m.name, v, m.median, m.unit, kind, {}, {}});
  }
}

}  // namespace

RankTable CompareMetrics(RankTable table, const RankOptions& options) {
  for (RankMetric& m : table.metrics) {
    std::vector<double> known;
    for (double v : m.values) {
      if (v >= 0) known.push_back(v);
    }
    m.median = Median(known);
    if (m.call_out) FindOutliers(table.files, m, options, table.outliers);
  }
  return table;
}

RankTable CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options) {
  RankTable t;
  if (ranks.empty()) return t;
  t.metrics = {{"reserved_bytes", "reserved", Unit::kBytes, true, {}, -1},
               {"allocated_bytes", "allocated", Unit::kBytes, true, {}, -1},
               {"peak_bytes", "peak", Unit::kBytes, true, {}, -1}};
  // The top site is the table's last column: the user's line that holds most memory on the rank.
  t.notes = {{"top_site", "top site", {}, true}};
  for (const auto& f : ranks) {
    t.files.push_back(f.file);
    t.metrics[0].values.push_back(static_cast<double>(f.reserved_bytes));
    t.metrics[1].values.push_back(static_cast<double>(f.allocated_bytes));
    t.metrics[2].values.push_back(static_cast<double>(f.peak_bytes));
    t.notes[0].values.push_back(f.top_site);
  }
  t = CompareMetrics(std::move(t), options);
  // The peak is what runs out of memory: its outliers come first.
  std::stable_partition(t.outliers.begin(), t.outliers.end(),
                        [](const Outlier& o) { return o.metric == "peak_bytes"; });
  // Top sites: the most common one is "normal"; ranks with another top site are called out.
  std::map<std::string, int> counts;
  for (const auto& f : ranks) {
    if (!f.top_site.empty()) ++counts[f.top_site];
  }
  int with_site = 0;
  for (const auto& [site, n] : counts) with_site += n;
  auto common = std::max_element(counts.begin(), counts.end(), [](const auto& a, const auto& b) {
    return a.second < b.second;  // ties: the first in text order wins (std::map order)
  });
  // Only a majority makes a site "normal"; without one there is nothing to stand out from.
  if (counts.size() > 1 && common->second * 2 > with_site) {
    for (const auto& f : ranks) {
      if (!f.top_site.empty() && f.top_site != common->first) {
        t.outliers.push_back(Outlier{f.file, "top_site", 0, 0, Unit::kText,
                                     OutlierKind::kOtherTopSite, f.top_site, common->first});
      }
    }
  }
  return t;
}

}  // namespace memsnap::analysis
