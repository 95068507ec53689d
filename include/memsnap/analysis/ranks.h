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
  std::string metric;  // "reserved_bytes", "allocated_bytes", "peak_bytes", "top_site"...
  double value = 0;    // bytes, or a fraction when is_ratio
  double median = 0;
  bool is_ratio = false;
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
  /// A rank is called out when a byte metric exceeds the median by more than this fraction, or a
  /// ratio metric (a fraction itself) by more than this many hundredths (0.10 = 10 points).
  double deviation = 0.10;
};

/// One figure of every rank: a column of a per-rank table.
struct RankMetric {
  std::string name;       // JSON key and outlier metric: "stranded_bytes", "external_fragmentation"
  std::string label;      // column header: "stranded", "ext frag"
  bool is_ratio = false;  // values are fractions (shown as percents), else bytes
  bool call_out = true;   // look for outliers in this metric
  std::vector<double> values;  // one per rank, in rank order; negative = unknown
  double median = -1;  // filled by CompareMetrics: lower median of the known values; -1 none
};

/// A per-rank table of any metrics, with its outliers (frag and check over many files).
struct RankTable {
  std::vector<std::string> files;  // one per rank, in input order
  std::vector<RankMetric> metrics;
  std::string note_label;          // optional last free-text column (e.g. check's verdict)
  std::vector<std::string> notes;  // one per rank when note_label is set
  std::vector<Outlier> outliers;   // filled by CompareMetrics, metric by metric
};

/// Fills every metric's median, and for metrics with call_out names the rank with the highest
/// value (first in input order on ties; only when above the median) and every rank above the
/// median by more than options.deviation (see RankOptions). Unknown (negative) values are left
/// out.
RankTable CompareMetrics(RankTable table, const RankOptions& options = {});

/// Compares ranks (CompareMetrics over peak, reserved and allocated bytes): names the rank with the
/// highest peak, reserved and allocated bytes (when above the median), any rank more than
/// `deviation` above the median of a metric, and ranks whose top site differs from the top site
/// a majority of ranks share.
RankReport CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options = {});

}  // namespace memsnap::analysis
