#include "memsnap/analysis/compose/ranks.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace memsnap::analysis {

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];
}

bool IsRatio(const RankMetric& m) { return m.unit == Unit::kRatio; }

// The distance from the median beyond which a rank stands out (RankOptions): the floor, or the
// spread of the known values (1.4826 MAD estimates a standard deviation), whichever is larger.
double Threshold(const RankMetric& m, const RankOptions& options) {
  std::vector<double> distances;
  for (double v : m.values) {
    if (v >= 0) distances.push_back(v > m.median ? v - m.median : m.median - v);
  }
  const double mad = Median(distances);
  const double floor = IsRatio(m) ? options.deviation : m.median * options.deviation;
  return std::max(floor, options.mad_factor * 1.4826 * std::max(mad, 0.0));
}

void FindOutliers(const std::vector<std::string>& files, const RankMetric& m,
                  const RankOptions& options, std::vector<Outlier>& out) {
  if (m.median < 0) return;
  const double threshold = Threshold(m, options);
  // A byte metric whose median is 0 has no scale: any rank above it stands out.
  auto above = [&](double v) { return v > m.median + threshold || (threshold == 0 && v > 0); };
  auto below = [&](double v) { return m.call_out_below && v < m.median - threshold; };
  // The highest rank that stands out is named so (first in input order on ties).
  size_t best = m.values.size();
  for (size_t i = 0; i < m.values.size(); ++i) {
    if (m.values[i] >= 0 && above(m.values[i]) &&
        (best == m.values.size() || m.values[i] > m.values[best])) {
      best = i;
    }
  }
  for (size_t i = 0; i < m.values.size(); ++i) {
    const double v = m.values[i];
    if (v < 0) continue;
    OutlierKind kind;
    if (above(v)) {
      kind = i == best ? OutlierKind::kHighestAbove : OutlierKind::kAboveMedian;
    } else if (below(v)) {
      kind = OutlierKind::kBelowMedian;
    } else {
      continue;
    }
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
  // A rank far below the others held a fraction of their memory: it ran less, or other work.
  t.metrics = {{"reserved_bytes", "reserved", Unit::kBytes, true, {}, -1, true},
               {"allocated_bytes", "allocated", Unit::kBytes, true, {}, -1, true},
               {"peak_bytes", "peak", Unit::kBytes, true, {}, -1, true}};
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

namespace memsnap::analysis {

void ExplainOutliers(RankTable& table, const std::vector<RankProfile>& profiles, size_t top_sites) {
  table.explained = true;
  table.differences.clear();
  std::vector<std::string> done;
  for (const Outlier& o : table.outliers) {
    if (o.unit != Unit::kBytes) continue;
    if (std::find(done.begin(), done.end(), o.file) != done.end()) continue;
    auto metric = std::find_if(table.metrics.begin(), table.metrics.end(),
                               [&](const RankMetric& m) { return m.name == o.metric; });
    auto file = std::find(table.files.begin(), table.files.end(), o.file);
    if (metric == table.metrics.end() || file == table.files.end()) continue;
    const size_t rank = static_cast<size_t>(file - table.files.begin());
    // The median rank: the first whose figure is the median (the lower median is a rank's own).
    size_t median = table.files.size();
    for (size_t i = 0; i < metric->values.size(); ++i) {
      if (metric->values[i] == metric->median) {
        median = i;
        break;
      }
    }
    if (median == table.files.size() || median == rank || rank >= profiles.size() ||
        median >= profiles.size() || !profiles[rank].known || !profiles[median].known) {
      continue;
    }
    done.push_back(o.file);
    const RankProfile& a = profiles[rank];
    const RankProfile& b = profiles[median];
    RankDifference d;
    d.file = o.file;
    d.median_file = table.files[median];
    d.metric = o.metric;
    for (int c = 0; c < kNumCategories; ++c) {
      const int64_t delta = a.by_category[c] - b.by_category[c];
      if (delta != 0) d.kinds.push_back({static_cast<Category>(c), delta});
    }
    std::stable_sort(d.kinds.begin(), d.kinds.end(),
                     [](const RankKindDelta& x, const RankKindDelta& y) {
                       return std::llabs(x.delta_bytes) > std::llabs(y.delta_bytes);
                     });
    std::map<std::string, RankSiteDelta> sites;  // by key
    for (const RankSiteBytes& s : a.sites) {
      RankSiteDelta& r = sites[s.key];
      r.site = s.site;
      r.category = s.category;
      r.bytes += s.bytes;
    }
    for (const RankSiteBytes& s : b.sites) {
      auto [it, inserted] = sites.try_emplace(s.key);
      if (inserted) {
        it->second.site = s.site;
        it->second.category = s.category;
      }
      it->second.median_bytes += s.bytes;
    }
    std::vector<std::pair<std::string, RankSiteDelta>> rows;
    for (auto& [key, r] : sites) {
      if (r.delta_bytes() != 0) rows.emplace_back(key, std::move(r));
    }
    std::sort(rows.begin(), rows.end(), [](const auto& x, const auto& y) {
      const int64_t dx = std::llabs(x.second.delta_bytes()),
                    dy = std::llabs(y.second.delta_bytes());
      if (dx != dy) return dx > dy;
      return x.first < y.first;
    });
    for (size_t i = 0; i < rows.size() && i < top_sites; ++i) {
      d.sites.push_back(std::move(rows[i].second));
    }
    table.differences.push_back(std::move(d));
  }
}

}  // namespace memsnap::analysis
