#pragma once

#include <ostream>
#include <string>

#include "memsnap/analysis/check.h"
#include "memsnap/analysis/rank_tables.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `check --json` object: passed, failures, file, baseline, checks[{name, metric, kind,
/// value, limit, baseline, passed}], growing_sites[...], notes.
nlohmann::ordered_json CheckToJson(const analysis::CheckReport& report);

/// The short verdict: one line per check (value, limit, PASS/FAIL), then the top growing sites.
void RenderCheckText(const analysis::CheckReport& report, std::ostream& out);

/// JUnit XML: one <testsuite>, one <testcase> per check, <failure> on the failed ones.
std::string CheckToJunit(const analysis::CheckReport& report);

/// A Markdown job summary: a verdict line, a table of checks and the top growing sites.
std::string CheckToMarkdown(const analysis::CheckReport& report);

/// `check --json` over many files: passed, failures, failed_files, baseline, ranks (the per-rank
/// table: RankTableToJson) and files (every file's CheckToJson object, in input order).
nlohmann::ordered_json CheckRanksToJson(const analysis::CheckRanksReport& report);

/// Over many files: one verdict line, the per-rank table with each file's verdict and the
/// outliers, then RenderCheckText of every file that failed.
void RenderCheckRanksText(const analysis::CheckRanksReport& report, std::ostream& out);

/// JUnit XML over many files: one <testsuite> per file, one <testcase> per check of it, named
/// "FILE: CHECK".
std::string CheckRanksToJunit(const analysis::CheckRanksReport& report);

/// Markdown over many files: a verdict line, a table of files (figures, PASS/FAIL and the failed
/// checks), the outliers, then the checks table of every file that failed.
std::string CheckRanksToMarkdown(const analysis::CheckRanksReport& report);

}  // namespace memsnap::report
