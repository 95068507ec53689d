// Many ranks of one job (one snapshot per GPU process): a per-rank table and the outliers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/util/table.h"

namespace memsnap::analysis {

/// One rank's headline figures; commands fill the ones they compute (peak needs a trace).
struct RankFigures {
  std::string file;
  int64_t reserved_bytes = 0;
  int64_t allocated_bytes = 0;
  int64_t peak_bytes = -1;  // -1: unknown (no trace)
  std::string top_site;     // the largest live allocation site, "" when unknown
};

/// A file among the inputs that was not analysed, and why: skipped (found in a directory, not a
/// snapshot at all: a README) or unreadable (a snapshot that failed to read: truncated, corrupt).
struct LeftOutFile {
  std::string path;
  std::string reason;  // the reader's error, without the path in front
};

/// Why a rank is called out; the words are the renderer's (report::OutlierReason).
enum class OutlierKind {
  kHighest,       // the highest value of the metric (above the median, within the deviation)
  kHighestAbove,  // the highest, and above the median by more than the deviation
  kAboveMedian,   // above the median by more than the deviation, not the highest
  kOtherTopSite,  // its top site is not the one most ranks share
};

struct Outlier {
  std::string file;
  std::string metric;  // "reserved_bytes", "allocated_bytes", "peak_bytes", "top_site"...
  double value = 0;    // in the metric's unit (bytes, or a fraction for kRatio)
  double median = 0;
  Unit unit = Unit::kBytes;
  OutlierKind kind = OutlierKind::kAboveMedian;
  std::string top_site;     // kOtherTopSite: this rank's top site
  std::string common_site;  // kOtherTopSite: the top site of most ranks
};

struct RankOptions {
  /// A rank is called out when a byte metric exceeds the median by more than this fraction, or a
  /// ratio metric (a fraction itself) by more than this many hundredths (0.10 = 10 points).
  double deviation = 0.10;
};

/// One figure of every rank: a column of a per-rank table.
struct RankMetric {
  std::string name;            // JSON key and outlier metric: "stranded_bytes", "fragmentation"
  std::string label;           // column header: "stranded", "ext frag"
  Unit unit = Unit::kBytes;    // kBytes or kRatio (a fraction, shown as a percent)
  bool call_out = true;        // look for outliers in this metric
  std::vector<double> values;  // one per rank, in rank order; negative = unknown
  double median = -1;  // filled by CompareMetrics: lower median of the known values; -1 none
};

/// A free-text figure of every rank (check's verdict, the top allocation site).
struct RankNote {
  std::string name;                 // JSON key
  std::string label;                // column header
  std::vector<std::string> values;  // one per rank; "" = nothing to say
  bool in_text = true;              // false: JSON only (too wide for the table)
};

/// The per-rank table of every command over many files (one snapshot per rank): a row per rank,
/// a column per metric, free-text notes, and the outliers. report::RankTableToTable turns it
/// into the typed table the generic renderers print.
struct RankTable {
  std::vector<std::string> files;  // one per rank, in input order
  std::vector<RankMetric> metrics;
  std::vector<RankNote> notes;    // after the metrics
  std::vector<Outlier> outliers;  // filled by CompareMetrics, metric by metric
};

/// Fills every metric's median, and for metrics with call_out names the rank with the highest
/// value (first in input order on ties; only when above the median) and every rank above the
/// median by more than options.deviation (see RankOptions). Unknown (negative) values are left
/// out.
RankTable CompareMetrics(RankTable table, const RankOptions& options = {});

/// Compares ranks (CompareMetrics over reserved, allocated and peak bytes, and a top_site note):
/// names the rank with the highest peak, reserved and allocated bytes (when above the median), any
/// rank more than `deviation` above the median of a metric, and ranks whose top site differs from
/// the top site a majority of ranks share. Outliers of the peak come first.
RankTable CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options = {});

}  // namespace memsnap::analysis
