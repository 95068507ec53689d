// Many ranks of one job (one snapshot per GPU process): a per-rank table and the outliers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/analysis/attribution/attribution.h"
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
/// The deviation of a rank is decided by RankOptions' robust rule (CompareMetrics).
enum class OutlierKind {
  kHighest,       // (no longer reported: the highest rank within the rule is no outlier)
  kHighestAbove,  // the highest, and above the median by more than the rule allows
  kAboveMedian,   // above the median by more than the rule allows, not the highest
  kOtherTopSite,  // its top site is not the one most ranks share
  kBelowMedian,   // below the median by more than the rule allows (RankMetric::call_out_below)
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

/// A rank stands out when its distance from the median exceeds both a floor (`deviation`) and
/// what the spread of the ranks makes ordinary: `mad_factor` times the median absolute deviation
/// (MAD, the median of |value - median| over the known values), scaled by 1.4826 so that it
/// estimates a standard deviation. Neither is pulled by a few outliers, so two ranks 27% above
/// the median of eight stand out, a rank 0.2% above it does not, and on ranks that
/// spread widely only those far beyond the spread do.
struct RankOptions {
  /// The floor: a fraction of the median for a byte metric, or hundredths for a ratio metric (a
  /// fraction itself: 0.10 = 10 points).
  double deviation = 0.10;
  double mad_factor = 3.0;
};

/// One figure of every rank: a column of a per-rank table.
struct RankMetric {
  std::string name;            // JSON key and outlier metric: "stranded_bytes", "fragmentation"
  std::string label;           // column header: "stranded", "ext frag"
  Unit unit = Unit::kBytes;    // kBytes or kRatio (a fraction, shown as a percent)
  bool call_out = true;        // look for outliers in this metric
  std::vector<double> values;  // one per rank, in rank order; negative = unknown
  double median = -1;  // filled by CompareMetrics: lower median of the known values; -1 none
  /// Also call out ranks far below the median (a rank that held a fraction of what the others
  /// did: it ran less, or something else). Off for metrics where less is only better.
  bool call_out_below = false;
};

/// A free-text figure of every rank (check's verdict, the top allocation site).
struct RankNote {
  std::string name;                 // JSON key
  std::string label;                // column header
  std::vector<std::string> values;  // one per rank; "" = nothing to say
  bool in_text = true;              // false: JSON only (too wide for the table)
};

/// What one rank's memory is made of at the moment its figures were taken (the dump, for
/// `summary`): bytes by kind, and by site.
struct RankSiteBytes {
  std::string key;   // SiteInfo::key: what matches the site across ranks
  std::string site;  // the label
  Category category = Category::kUnknown;
  int64_t bytes = 0;
};
struct RankProfile {
  bool known = false;  // false: the rank's memory could not be told apart (left out)
  CategoryBytes by_category{};
  std::vector<RankSiteBytes> sites;  // distinct keys
};

struct RankKindDelta {
  Category category = Category::kUnknown;
  int64_t delta_bytes = 0;  // the outlier's bytes minus the median rank's
};
struct RankSiteDelta {
  std::string site;
  Category category = Category::kUnknown;
  int64_t bytes = 0, median_bytes = 0;
  int64_t delta_bytes() const { return bytes - median_bytes; }
};

/// Why an outlier rank differs from the median rank (the rank whose figure is the median of the
/// metric it stands out in): the kinds of memory and the sites whose bytes differ most, largest
/// difference first. A typed finding; the words are the renderer's.
struct RankDifference {
  std::string file, median_file;
  std::string metric;  // the metric the rank stands out in (its first outlier)
  std::vector<RankKindDelta> kinds;
  std::vector<RankSiteDelta> sites;
};

/// The per-rank table of every command over many files (one snapshot per rank): a row per rank,
/// a column per metric, free-text notes, and the outliers. report::RankTableToTable turns it
/// into the typed table the generic renderers print.
struct RankTable {
  std::vector<std::string> files;  // one per rank, in input order
  std::vector<RankMetric> metrics;
  std::vector<RankNote> notes;    // after the metrics
  std::vector<Outlier> outliers;  // filled by CompareMetrics, metric by metric
  /// For each outlier rank (once per file), what makes its difference against the median rank;
  /// filled by ExplainOutliers, when the command knows the ranks' kinds and sites.
  std::vector<RankDifference> differences;
  bool explained = false;  // ExplainOutliers ran (the JSON then has `differences`)
  /// What the differences' categories are named: the ranks' (query::ReadSettings::categories).
  CategoryNames categories;
};

/// Fills every metric's median, and for metrics with call_out names every rank above the median
/// (or, with call_out_below, below it) by more than RankOptions' robust rule allows; the highest
/// of them (first in input order on ties) is kHighestAbove. Unknown (negative) values are left
/// out.
RankTable CompareMetrics(RankTable table, const RankOptions& options = {});

/// Compares ranks (CompareMetrics over reserved, allocated and peak bytes, and a top_site note):
/// names the rank with the highest peak, reserved and allocated bytes (when above the median), any
/// rank more than `deviation` above the median of a metric, and ranks whose top site differs from
/// the top site a majority of ranks share. Outliers of the peak come first.
RankTable CompareRanks(std::vector<RankFigures> ranks, const RankOptions& options = {});

/// Fills table.differences: for each file among the outliers of a byte metric (its first), the
/// kinds and the `top_sites` sites whose bytes differ most between it and the median rank of that
/// metric, from `profiles` (one per rank, in table.files' order). Ranks without a known profile
/// are skipped.
void ExplainOutliers(RankTable& table, const std::vector<RankProfile>& profiles,
                     size_t top_sites = 3);

}  // namespace memsnap::analysis
