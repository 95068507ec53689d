// Per-rank tables of `frag` and `check` over many files (one snapshot per rank): the figures each
// command reports for one file, side by side, with the outliers (analysis::CompareMetrics).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/compose/check.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/group.h"

namespace memsnap::analysis {

/// What one rank's memory live at `moment` is made of (by kind, and by site over every device),
/// for ExplainOutliers. The timeline keeps the lifetimes live at `moment`; categories are decided
/// in `categories` (the session's).
absl::StatusOr<RankProfile> RankProfileAt(const Snapshot& snap, const Timeline& timeline,
                                          const Moment& moment, const CategoryNames& categories);

/// One rank's fragmentation headline: frag's totals at the chosen moment.
struct FragRank {
  std::string file;
  FragFigures totals;
  double external_fragmentation = 0;
  int64_t warnings = 0;  // the report's reconstruction warnings (shown in full by frag FILE)
  /// The answer of its device with the largest stranded share, as `frag FILE` gives it
  /// (report::FragRankVerdict writes "small: 146.6 MiB (0.3%) at the peak"); nullopt when the
  /// file has no segment.
  std::optional<FragAnswer> answer;
  bool many_devices = false;  // the file has more than one device: the answer names its device
};

/// The headline of one file's fragmentation report (what a worker keeps of it).
FragRank FragRankOf(const FragReport& report);

/// Columns reserved, allocated, free, stranded, largest free (bytes) and external fragmentation
/// (a ratio). Outliers are looked for in external_fragmentation, free_bytes and stranded_bytes.
/// The renderer adds the note columns, each rank's verdict and its warnings
/// (report::FragRanksTable).
RankTable CompareFragRanks(const std::vector<FragRank>& ranks, const RankOptions& options = {});

/// One rank of `check` over many files: its figures and its verdict.
struct CheckRank {
  CheckMetrics metrics;
  CheckReport report;
};

/// `check` over many files: every rank's verdict, and a table of their figures.
struct CheckRanksReport {
  std::string baseline;          // the baseline file or directory; empty without one
  std::vector<CheckRank> ranks;  // in input order
  /// Columns peak, reserved, allocated (bytes) and frag (a ratio); outliers in every column. The
  /// renderer adds each rank's verdict as a note column (report::CheckRanksTable).
  RankTable table;
  /// Snapshots that could not be read: the gate has not seen them, so it cannot pass (exit 2).
  std::vector<LeftOutFile> unreadable;
  /// Files of a directory that are not snapshots (a README), listed so nothing is left out unseen.
  std::vector<LeftOutFile> skipped;
  /// --baseline DIR: its ranks with no input of the same name (a rank that went missing fails the
  /// gate, exit 1); a rank with no baseline fails its own kBaselineFile check.
  std::vector<LeftOutFile> missing;
  /// Every rank passed, every rank was read, and no baseline rank is missing.
  bool passed() const;
  int failures() const;  // failed checks over all ranks
  int checks() const;    // checks over all ranks
  int failed_ranks() const;
};

/// Builds the report of `check` over many files from each rank's result (input order kept).
CheckRanksReport CompareCheckRanks(std::vector<CheckRank> ranks, std::string baseline,
                                   const RankOptions& options = {});

/// One rank of `top` over many files: reserved and allocated bytes at the end, the peak of live
/// bytes (when the file has a trace), and the label of the largest site that is not a bracketed
/// row at `moment`. `device`: only that device (an error when the file does not have it).
/// `at_text`: the --at flag as the user wrote it, for the error when the moment is out of range.
absl::StatusOr<RankFigures> TopRankFigures(const Snapshot& snap, const Moment& moment,
                                           std::string_view at_text, const GroupOptions& options,
                                           DeviceFilter device);

/// The timeline TopRankFigures rebuilds, for a caller that rebuilds it during the read
/// (cli::AnalyzeEachWithTimeline).
TimelineOptions TopRankTimelineOptions(const Moment& moment, DeviceFilter device);

/// TopRankFigures with the timeline already rebuilt with TopRankTimelineOptions(moment, device);
/// a timeline's error is returned as TopRankFigures would return it.
absl::StatusOr<RankFigures> TopRankFigures(const Snapshot& snap,
                                           const absl::StatusOr<Timeline>& timeline,
                                           const Moment& moment, std::string_view at_text,
                                           const GroupOptions& options);

}  // namespace memsnap::analysis
