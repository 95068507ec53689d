#pragma once

#include <ostream>
#include <string>

#include "memsnap/analysis/check.h"
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

}  // namespace memsnap::report
