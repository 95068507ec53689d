// Many ranks of one job (one snapshot per GPU process): a per-rank table and the outliers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memsnap::analysis {

/// One rank's headline figures; commands fill the ones they compute (peak needs a trace).
struct RankFigures {
  std::string file;
  int64_t reserved_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t peak_bytes = -1;  // -1: unknown (no trace)
  std::string top_site;     // the largest live allocation site, "" when unknown
};

struct Outlier {
  std::string file;
  std::string metric;  // "reserved_bytes", "allocated_bytes", "peak_bytes", "top_site"
  int64_t value = 0;
  int64_t median = 0;
  std::string reason;  // one sentence for people
};

struct RankReport {
  std::vector<RankFigures> ranks;  // in input order
  int64_t median_reserved = 0;
  int64_t median_allocated = 0;
  int64_t median_peak = -1;
  std::vector<Outlier> outliers;  // highest of each metric, large deviations, odd top sites
};

struct RankOptions {
  /// A rank is called out when a metric exceeds the median by more than this fraction.
  double deviation = 0.10;
};

/// Compares ranks: always names the rank with the highest peak (or reserved bytes without
/// traces), any rank more than `deviation` above the median of a metric, and ranks whose top
/// site differs from the top site a majority of ranks share.
RankReport CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options = {});

}  // namespace memsnap::analysis
