// `check`: a CI gate (docs/ci.md). Thresholds and/or a baseline (one file for every input, or a
// directory holding a baseline of the same name for each), each input measured once; on a failed
// baseline comparison, the sites that grew. Over several files (one per rank) every rank is
// checked, and an unreadable rank is reported beside the others, never passed over.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "memsnap/analysis/compose/check.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct CheckRequest {
  analysis::CheckOptions options;  // thresholds, tolerance, --fits, threads
  std::string baseline;            // a file, a directory of files named as the inputs, or empty
  int top_sites = 5;               // growing sites listed when a baseline comparison fails
  bool exact_lines = false;        // growing sites: no pairing of moved lines
  /// What the growing rows are (check --by): sites by default.
  analysis::GroupBy group_by = analysis::GroupBy::kSite;
};

/// "Nothing to check" (no threshold and no baseline), before anything is read.
absl::Status ValidateCheckRequest(const CheckRequest& request);

Needs CheckNeeds();
/// One file against the thresholds and its baseline (read here with the session's settings).
absl::StatusOr<analysis::CheckReport> CheckQuery(const CheckRequest& request, Session& session,
                                                 const ReadSettings& settings);

/// Whether `files` are checked as ranks (CheckRanksQuery): several files, or the one file of a
/// directory against a baseline directory (whose other ranks are then missing).
bool ChecksRanks(const CheckRequest& request, const std::vector<InputFile>& files);

/// Several files: every rank checked on a worker, then one verdict over all of them; unreadable
/// ranks are listed in the report (and fail the gate), non-snapshots found in a directory skipped.
/// Against a baseline directory, a rank with no baseline of its name fails its kBaselineFile
/// check, and, when the inputs hold a directory of ranks (files named one by one are the ranks
/// asked about), the baseline's ranks with no input of their name are `missing` (the gate fails).
absl::StatusOr<analysis::CheckRanksReport> CheckRanksQuery(const CheckRequest& request,
                                                           const std::vector<InputFile>& files,
                                                           const ReadSettings& settings);

}  // namespace memsnap::query
