#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/compose/check.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `check --json` object: passed, failures, file, baseline, checks[{name, metric, kind,
/// value, limit, baseline, passed}], growing_sites[...], notes.
nlohmann::ordered_json CheckToJson(const analysis::CheckReport& report);

/// The check's caveats in words ("note:" lines in text, `notes` in JSON, quotes in Markdown,
/// system-out in JUnit).
std::vector<std::string> CheckNotes(const analysis::CheckReport& report);

/// The short verdict: one line per check (value, limit, PASS/FAIL), then the top growing sites.
void RenderCheckText(const analysis::CheckReport& report, std::ostream& out);

/// JUnit XML: one <testsuite>, one <testcase> per check, <failure> on the failed ones.
std::string CheckToJunit(const analysis::CheckReport& report);

/// A Markdown job summary: a verdict line, a table of checks and the top growing sites.
std::string CheckToMarkdown(const analysis::CheckReport& report);

/// `check --json` over many files: passed, failures, failed_files, baseline, ranks (the per-rank
/// table: RankTableToJson), files (every file's CheckToJson object, in input order), unreadable
/// (the snapshots that could not be read: [{path, reason}]; any fails the gate) and skipped (the
/// files of a directory that are not snapshots).
nlohmann::ordered_json CheckRanksToJson(const analysis::CheckRanksReport& report);

/// Over many files: one verdict line (ERROR when a file could not be read), the per-rank table
/// with each file's verdict and the outliers, the files that could not be read and those skipped,
/// then RenderCheckText of every file that failed.
void RenderCheckRanksText(const analysis::CheckRanksReport& report, std::ostream& out);

/// JUnit XML over many files: one <testsuite> per file, one <testcase> per check of it, named
/// "FILE: CHECK"; a file that could not be read is a testcase "FILE: read" with an <error>, a
/// skipped file one "FILE: not a snapshot" with <skipped>.
std::string CheckRanksToJunit(const analysis::CheckRanksReport& report);

/// Markdown over many files: a verdict line, a table of files (figures, PASS/FAIL and the failed
/// checks; UNREADABLE and why for a file that could not be read), the skipped files, the
/// outliers, then the checks table of every file that failed.
std::string CheckRanksToMarkdown(const analysis::CheckRanksReport& report);

}  // namespace memsnap::report
