#include "memsnap/report/check_render.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/util/format.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::CheckReport;
using analysis::CheckResult;

std::string Show(double v, bool is_ratio) {
  return is_ratio ? FormatPercent(v) : FormatBytes(static_cast<int64_t>(v));
}

std::string Verdict(const CheckReport& r) {
  if (r.passed()) return absl::StrCat("PASS (", r.checks.size(), " checks)");
  return absl::StrCat("FAIL (", r.failures(), " of ", r.checks.size(), " checks failed)");
}

std::string SiteName(const analysis::SiteDelta& s) {
  return s.frames.empty() ? s.key : s.frames.front();
}

// What a failure says, e.g. "reserved 1.2 GiB exceeds 1.0 GiB (baseline 1.0 GiB)".
std::string FailureMessage(const CheckResult& c) {
  std::string m = absl::StrCat(c.metric, " ", Show(c.value, c.is_ratio), " exceeds ",
                               Show(c.limit, c.is_ratio));
  if (c.baseline) {
    absl::StrAppend(&m, " (baseline ", Show(*c.baseline, c.is_ratio), ", ",
                    FormatDelta(static_cast<int64_t>(c.value - *c.baseline)), ")");
  }
  return m;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control characters other than tab/newline are not allowed in XML 1.0.
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out += '?';
        } else {
          out += ch;
        }
    }
  }
  return out;
}

std::string MarkdownCell(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (ch == '|') {
      out += "\\|";
    } else if (ch == '\n') {
      out += ' ';
    } else {
      out += ch;
    }
  }
  return out;
}

// One <testsuite> of the file's checks; testcase names start with `prefix`.
void JunitSuite(const CheckReport& r, std::string_view prefix, std::ostream& x) {
  std::string suite = XmlEscape(absl::StrCat("memsnap check ", r.path));
  x << "  <testsuite name=\"" << suite << "\" tests=\"" << r.checks.size() << "\" failures=\""
    << r.failures() << "\" errors=\"0\" skipped=\"0\" time=\"0\">\n";
  for (const auto& c : r.checks) {
    // time="0": some report parsers require the attribute.
    x << "    <testcase classname=\"memsnap.check\" name=\"" << XmlEscape(prefix)
      << XmlEscape(c.name) << "\" time=\"0\"";
    if (c.passed) {
      x << "/>\n";
      continue;
    }
    std::string detail = FailureMessage(c);
    for (const auto& s : r.growing_sites) {
      absl::StrAppend(&detail, "\n", FormatDelta(s.delta_bytes()), "  ", SiteName(s));
    }
    x << ">\n      <failure type=\"memory regression\" message=\"" << XmlEscape(FailureMessage(c))
      << "\">" << XmlEscape(detail) << "</failure>\n";
    x << "    </testcase>\n";
  }
  std::string notes;
  for (const auto& n : r.notes) absl::StrAppend(&notes, n, "\n");
  if (!notes.empty()) x << "    <system-out>" << XmlEscape(notes) << "</system-out>\n";
  x << "  </testsuite>\n";
}

// The checks table, the notes and the growing sites of one file.
void MarkdownChecks(const CheckReport& r, std::ostream& m) {
  m << "| Check | Value | Limit | Baseline | Result |\n|---|---:|---:|---:|---|\n";
  for (const auto& c : r.checks) {
    m << "| " << MarkdownCell(c.name) << " | " << Show(c.value, c.is_ratio) << " | "
      << Show(c.limit, c.is_ratio) << " | " << (c.baseline ? Show(*c.baseline, c.is_ratio) : "")
      << " | " << (c.passed ? "PASS" : "**FAIL**") << " |\n";
  }
  for (const auto& n : r.notes) m << "\n> " << MarkdownCell(n) << "\n";
  if (!r.growing_sites.empty()) {
    m << "\n**Top growing sites** (live bytes at the " << (r.sites_at_peak ? "peak" : "end")
      << ")\n\n"
         "| Growth | Baseline | New | Site |\n|---:|---:|---:|---|\n";
    for (const auto& s : r.growing_sites) {
      m << "| " << FormatDelta(s.delta_bytes()) << " | " << FormatBytes(s.before_bytes) << " | "
        << FormatBytes(s.after_bytes) << " | `" << MarkdownCell(SiteName(s)) << "` |\n";
    }
  }
}

std::string RanksVerdict(const analysis::CheckRanksReport& r) {
  if (r.passed()) return absl::StrCat("PASS (", r.ranks.size(), " files, ", r.checks(), " checks)");
  return absl::StrCat("FAIL (", r.failed_ranks(), " of ", r.ranks.size(), " files failed; ",
                      r.failures(), " of ", r.checks(), " checks failed)");
}

}  // namespace

Json CheckToJson(const CheckReport& r) {
  Json j;
  j["passed"] = r.passed();
  j["failures"] = r.failures();
  j["file"] = r.path;
  j["baseline"] = r.baseline_path.empty() ? Json(nullptr) : Json(r.baseline_path);
  Json checks = Json::array();
  for (const auto& c : r.checks) {
    Json cj;
    cj["name"] = c.name;
    cj["metric"] = c.metric;
    cj["kind"] = c.kind == analysis::CheckKind::kBaseline ? "baseline" : "threshold";
    if (c.is_ratio) {
      cj["value"] = c.value;
      cj["limit"] = c.limit;
    } else {
      cj["value"] = static_cast<int64_t>(c.value);
      cj["limit"] = static_cast<int64_t>(c.limit);
    }
    if (c.baseline) cj["baseline"] = static_cast<int64_t>(*c.baseline);
    cj["passed"] = c.passed;
    checks.push_back(cj);
  }
  j["checks"] = checks;
  Json sites = Json::array();
  for (const auto& s : r.growing_sites) {
    sites.push_back(Json{{"site", s.key},
                         {"frames", s.frames},
                         {"before_bytes", s.before_bytes},
                         {"after_bytes", s.after_bytes},
                         {"delta_bytes", s.delta_bytes()},
                         {"before_count", s.before_count},
                         {"after_count", s.after_count}});
  }
  j["growing_sites"] = sites;
  j["growing_sites_at"] = r.sites_at_peak ? "peak" : "end";
  j["notes"] = r.notes;
  return j;
}

void RenderCheckText(const CheckReport& r, std::ostream& out) {
  out << "memsnap check " << r.path;
  if (!r.baseline_path.empty()) out << " (baseline " << r.baseline_path << ")";
  out << ": " << Verdict(r) << "\n";
  for (const auto& c : r.checks) {
    std::string limit = absl::StrCat("limit ", Show(c.limit, c.is_ratio));
    if (c.baseline) absl::StrAppend(&limit, " (baseline ", Show(*c.baseline, c.is_ratio), ")");
    out << absl::StrFormat("  %-32s %12s   %-36s %s\n", c.name, Show(c.value, c.is_ratio), limit,
                           c.passed ? "PASS" : "FAIL");
  }
  for (const auto& n : r.notes) out << "  note: " << n << "\n";
  if (!r.growing_sites.empty()) {
    out << "top growing sites (live bytes at the " << (r.sites_at_peak ? "peak" : "end")
        << ", baseline -> new)\n";
    for (const auto& s : r.growing_sites) {
      out << absl::StrFormat("  %12s  %12s -> %-12s %s\n", FormatDelta(s.delta_bytes()),
                             FormatBytes(s.before_bytes), FormatBytes(s.after_bytes),
                             SiteName(s));
    }
  }
}

std::string CheckToJunit(const CheckReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"memsnap check\" tests=\"" << r.checks.size() << "\" failures=\""
    << r.failures() << "\" errors=\"0\">\n";
  JunitSuite(r, "", x);
  x << "</testsuites>\n";
  return x.str();
}

std::string CheckToMarkdown(const CheckReport& r) {
  std::ostringstream m;
  m << "### memsnap check: " << (r.passed() ? "✅ " : "❌ ") << Verdict(r) << "\n\n";
  m << "File: `" << r.path << "`";
  if (!r.baseline_path.empty()) m << ", baseline: `" << r.baseline_path << "`";
  m << "\n\n";
  MarkdownChecks(r, m);
  return m.str();
}

Json CheckRanksToJson(const analysis::CheckRanksReport& r) {
  Json j;
  j["passed"] = r.passed();
  j["failures"] = r.failures();
  j["failed_files"] = r.failed_ranks();
  j["baseline"] = r.baseline.empty() ? Json(nullptr) : Json(r.baseline);
  j["ranks"] = RankTableToJson(r.table);
  Json files = Json::array();
  for (const auto& rank : r.ranks) files.push_back(CheckToJson(rank.report));
  j["files"] = std::move(files);
  return j;
}

void RenderCheckRanksText(const analysis::CheckRanksReport& r, std::ostream& out) {
  out << "memsnap check, " << r.ranks.size() << " files";
  if (!r.baseline.empty()) out << " (baseline " << r.baseline << ")";
  out << ": " << RanksVerdict(r) << "\n\n";
  RenderRankTableText(r.table, out);
  for (const auto& rank : r.ranks) {
    if (rank.report.passed()) continue;
    out << "\n";
    RenderCheckText(rank.report, out);
  }
}

std::string CheckRanksToJunit(const analysis::CheckRanksReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"memsnap check\" tests=\"" << r.checks() << "\" failures=\""
    << r.failures() << "\" errors=\"0\">\n";
  // Testcase names carry the file too: some CI views flatten suites into one list.
  for (const auto& rank : r.ranks) JunitSuite(rank.report, rank.report.path + ": ", x);
  x << "</testsuites>\n";
  return x.str();
}

std::string CheckRanksToMarkdown(const analysis::CheckRanksReport& r) {
  std::ostringstream m;
  m << "### memsnap check: " << (r.passed() ? "✅ " : "❌ ") << RanksVerdict(r) << "\n\n";
  m << r.ranks.size() << " files";
  if (!r.baseline.empty()) m << ", baseline: `" << r.baseline << "`";
  m << "\n\n| File |";
  for (const auto& metric : r.table.metrics) m << " " << metric.label << " |";
  m << " Result |\n|---|";
  for (size_t i = 0; i < r.table.metrics.size(); ++i) m << "---:|";
  m << "---|\n";
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    m << "| `" << MarkdownCell(r.table.files[i]) << "` |";
    for (const auto& metric : r.table.metrics) {
      double v = metric.values[i];
      m << " " << (v < 0 ? std::string("-") : Show(v, metric.unit == Unit::kRatio)) << " |";
    }
    const std::string& note = r.table.notes.front().values[i];
    m << " " << (r.ranks[i].report.passed() ? note : "**" + MarkdownCell(note) + "**") << " |\n";
  }
  if (!r.table.outliers.empty()) {
    m << "\n**Outliers**\n\n";
    for (const auto& o : r.table.outliers) {
      m << "- `" << MarkdownCell(o.file) << "`: " << MarkdownCell(o.reason) << "\n";
    }
  }
  for (const auto& rank : r.ranks) {
    if (rank.report.passed()) continue;
    m << "\n#### `" << MarkdownCell(rank.report.path) << "`: " << Verdict(rank.report) << "\n\n";
    MarkdownChecks(rank.report, m);
  }
  return m.str();
}

}  // namespace memsnap::report
