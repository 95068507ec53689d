#include "memsnap/report/check_render.h"

#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "memsnap/report/diff_render.h"
#include "memsnap/report/oom_render.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::CheckReport;
using analysis::CheckResult;

bool IsFits(const CheckResult& c) { return c.metric == analysis::CheckMetric::kFits; }

// --baseline DIR without the rank's file: a check without figures.
bool IsNoBaseline(const CheckResult& c) { return c.metric == analysis::CheckMetric::kBaselineFile; }

// The baseline file a kBaselineFile check looked for.
const std::string& LookedFor(const CheckResult& c) {
  static const std::string kNone;
  return c.failure ? c.failure->baseline_file : kNone;
}

std::string MetricName(const CheckResult& c) {
  return std::string(analysis::CheckMetricName(c.metric));
}

// The check's name: "peak <= 1.0 GiB", "reserved vs baseline (+5.0%)", "fits 24.0 GiB".
std::string CheckName(const CheckResult& c) {
  if (IsFits(c)) return absl::StrCat("fits ", FormatBytes(static_cast<int64_t>(c.limit)));
  if (IsNoBaseline(c)) return "baseline of the same name";
  if (c.kind == analysis::CheckKind::kBaseline) {
    return absl::StrCat(MetricName(c), " vs baseline (+", FormatPercent(c.tolerance), ")");
  }
  return absl::StrCat(MetricName(c), " <= ", internal::FigureText(c.limit, c.is_ratio));
}

std::string CheckVerdictText(const CheckReport& r) {
  if (r.passed()) return absl::StrCat("PASS (", r.checks.size(), " checks)");
  return absl::StrCat("FAIL (", r.failures(), " of ", r.checks.size(), " checks failed)");
}

std::string SiteName(const analysis::SiteDelta& s, const analysis::CategoryNames& names) {
  return absl::StrCat(s.site, " (", Sv(names.Name(s.category())), ")");
}

// What the growing rows are: "sites", or "rows by metadata" (check --by).
std::string GrowingRowsName(const CheckReport& r) {
  if (r.growing_by == analysis::GroupBy::kSite) return "sites";
  return absl::StrCat("rows by ", Sv(analysis::GroupByName(r.growing_by)));
}

// The kinds of memory that changed between the baseline and this file ("" without growing sites).
std::string KindsText(const CheckReport& r) {
  return r.growing_kinds
             ? KindChangesText(r.growing_kinds->before, r.growing_kinds->after, r.categories)
             : "";
}

// How far a failed check is over its limit: "+12.0 MiB, 0.3% over" (bytes) or "+2.1 points"
// (ratios).
std::string Overshoot(const CheckResult& c) {
  const double over = c.failure ? c.failure->over : c.value - c.limit;
  if (c.is_ratio) return absl::StrFormat("+%.1f points", over * 100.0);
  std::string s = FormatDelta(static_cast<int64_t>(over));
  if (c.limit > 0) absl::StrAppend(&s, ", ", FormatPercent(over / c.limit), " over");
  return s;
}

// The value column: a --fits run that fails shows what the run needs (fit.h).
std::string ValueCell(const CheckResult& c) {
  if (IsNoBaseline(c)) return "missing";
  if (!IsFits(c)) return internal::FigureText(c.value, c.is_ratio);
  return absl::StrCat(c.passed ? "peak " : "needs ", internal::FigureText(c.value, false));
}

// Exact figures: rounded to one decimal, a failing value and its limit often print the same.
std::string Exact(double v, bool is_ratio) {
  return is_ratio ? FormatPercent(v) : FormatExactBytes(static_cast<int64_t>(v));
}

// What a failure says, e.g. "reserved 3,865,470,566 B exceeds 3,852,887,654 B by +12.0 MiB,
// 0.3% over (baseline 3.5 GiB, +117.0 MiB)".
std::string FailureMessage(const CheckResult& c) {
  const std::optional<analysis::CheckFailure>& f = c.failure;
  if (!f) return "";
  if (f->reason == analysis::CheckReason::kNoBaseline) {
    return absl::StrCat("no baseline: ", f->baseline_file,
                        " does not exist (a rank without its baseline cannot be compared)");
  }
  if (f->reason == analysis::CheckReason::kDoesNotFit) {
    const int64_t needs = static_cast<int64_t>(f->value);
    const int64_t capacity = static_cast<int64_t>(f->limit);
    std::string why;
    switch (f->verdict) {
      case analysis::OomVerdict::kDemand:
      case analysis::OomVerdict::kNotReproduced:
        why = "its live memory does not fit: no allocator setting can make it fit";
        break;
      case analysis::OomVerdict::kFragmentation:
        why = "its live memory fits, the allocator's layout does not (fragmentation)";
        break;
      case analysis::OomVerdict::kCacheNotReleased:
        why = "its live memory fits, the allocator's cache is not released (cache)";
        break;
    }
    std::string m = absl::StrCat("does not fit ", FormatBytes(capacity), ": the run needs ",
                                 FormatBytes(needs));
    if (f->device_needs.size() > 1) absl::StrAppend(&m, " on device ", f->device);
    absl::StrAppend(&m, " (", FormatBytes(static_cast<int64_t>(f->over)),
                    " over) with the recorded settings; ", why);
    if (f->device_needs.size() > 1) {
      std::vector<std::string> others;
      for (const auto& [device, bytes] : f->device_needs) {
        if (device != f->device)
          others.push_back(absl::StrCat("device ", device, " ", FormatBytes(bytes)));
      }
      absl::StrAppend(&m, " (also short: ", absl::StrJoin(others, ", "), ")");
    }
    if (f->best_needs > 0) {
      absl::StrAppend(&m, "; PYTORCH_CUDA_ALLOC_CONF=", f->best_conf, " needs ",
                      FormatBytes(f->best_needs));
    }
    absl::StrAppend(&m, ". First failure: device ", f->device, " ",
                    f->event == analysis::kPreexistingEvent
                        ? std::string("re-creating the blocks alive before the trace")
                        : absl::StrCat("at event:", f->event),
                    ", asking for ", FormatBytes(f->requested));
    return m;
  }
  std::string m = absl::StrCat(MetricName(c), " ", Exact(f->value, c.is_ratio), " exceeds ",
                               Exact(f->limit, c.is_ratio), " by ", Overshoot(c));
  if (f->baseline) {
    absl::StrAppend(&m, " (baseline ", internal::FigureText(*f->baseline, c.is_ratio), ", ",
                    FormatDelta(static_cast<int64_t>(f->value - *f->baseline)), ")");
  }
  return m;
}

std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
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
      << XmlEscape(CheckName(c)) << "\" time=\"0\"";
    if (c.passed) {
      x << "/>\n";
      continue;
    }
    std::string detail = FailureMessage(c);
    if (IsFits(c) && r.fits) {
      absl::StrAppend(&detail, "\n", OomBrief(*r.fits));
    } else {
      if (const std::string kinds = KindsText(r); !kinds.empty()) {
        absl::StrAppend(&detail, "\ngrew by kind: ", kinds);
      }
      for (const auto& s : r.growing_sites) {
        absl::StrAppend(&detail, "\n", FormatDelta(s.delta_bytes()), "  ",
                        SiteName(s, r.categories));
      }
    }
    x << ">\n      <failure type=\"" << (IsNoBaseline(c) ? "missing baseline" : "memory regression")
      << "\" message=\"" << XmlEscape(FailureMessage(c)) << "\">" << XmlEscape(detail)
      << "</failure>\n";
    x << "    </testcase>\n";
  }
  std::string notes;
  for (const auto& n : CheckNotes(r)) absl::StrAppend(&notes, n, "\n");
  if (!notes.empty()) x << "    <system-out>" << XmlEscape(notes) << "</system-out>\n";
  x << "  </testsuite>\n";
}

// A figure of a check as a cell of a kBytes column: a ratio check's figure is a percent (text).
Cell FigureCell(double v, bool is_ratio) {
  if (is_ratio) return FormatPercent(v);
  return static_cast<int64_t>(v);
}

// The checks of one file, as Markdown shows them.
Table ChecksTable(const CheckReport& r) {
  Table t;
  t.AddColumn("check", "Check", Unit::kText);
  t.AddColumn("value", "Value", Unit::kText).align = Align::kRight;
  t.AddColumn("limit", "Limit", Unit::kBytes);
  t.AddColumn("baseline", "Baseline", Unit::kBytes);
  t.AddColumn("result", "Result", Unit::kText);
  for (const auto& c : r.checks) {
    if (IsNoBaseline(c)) {
      t.AddRow({CheckName(c), ValueCell(c), Cell(std::string()), Cell(std::string()),
                absl::StrCat("**FAIL** (", MarkdownCell(FailureMessage(c)), ")")});
      continue;
    }
    t.AddRow({CheckName(c), ValueCell(c), FigureCell(c.limit, c.is_ratio),
              c.baseline ? FigureCell(*c.baseline, c.is_ratio) : Cell(std::string()),
              c.passed    ? std::string("PASS")
              : IsFits(c) ? std::string("**FAIL**")
                          : absl::StrCat("**FAIL** (", Overshoot(c), ")")});
  }
  return t;
}

// The sites that grew most since the baseline.
Table GrowingSitesTable(const CheckReport& r) {
  Table t;
  t.AddColumn("growth_bytes", "Growth", Unit::kDelta);
  t.AddColumn("baseline_bytes", "Baseline", Unit::kBytes);
  t.AddColumn("new_bytes", "New", Unit::kBytes);
  t.AddColumn("site", "Site", Unit::kText).code = true;
  for (const auto& s : r.growing_sites) {
    t.AddRow({s.delta_bytes(), s.before_bytes, s.after_bytes, SiteName(s, r.categories)});
  }
  return t;
}

// The checks table, the notes and the growing sites of one file.
void MarkdownChecks(const CheckReport& r, std::ostream& m) {
  RenderTableMarkdown(ChecksTable(r), m);
  for (const auto& n : CheckNotes(r)) m << "\n> " << MarkdownCell(n) << "\n";
  for (const auto& c : r.checks) {
    if (c.passed || !IsFits(c) || !r.fits) continue;
    m << "\n**" << MarkdownCell(FailureMessage(c)) << "**\n\n```\n" << OomBrief(*r.fits) << "```\n";
  }
  if (const std::string kinds = KindsText(r); !kinds.empty()) {
    m << "\n**Grew by kind** (live bytes at the " << (r.sites_at_peak ? "peak" : "end")
      << ", baseline -> new): " << MarkdownCell(kinds) << "\n";
  }
  if (!r.growing_sites.empty()) {
    m << "\n**Top growing " << GrowingRowsName(r) << "** (live bytes at the "
      << (r.sites_at_peak ? "peak" : "end") << ")\n\n";
    RenderTableMarkdown(GrowingSitesTable(r), m);
  }
}

// A rank's verdict: "PASS", or "FAIL" and the names of the checks that failed.
std::string RankVerdict(const CheckReport& r) {
  std::string verdict = r.passed() ? "PASS" : "FAIL";
  const char* sep = " ";
  for (const CheckResult& c : r.checks) {
    if (c.passed) continue;
    absl::StrAppend(&verdict, sep, CheckName(c));
    sep = ", ";
  }
  return verdict;
}

// The per-rank table with each rank's verdict as its note column.
analysis::RankTable CheckRanksTable(const analysis::CheckRanksReport& r) {
  analysis::RankTable t = r.table;
  analysis::RankNote verdicts{"verdict", "verdict", {}, true};
  for (const analysis::CheckRank& rank : r.ranks)
    verdicts.values.push_back(RankVerdict(rank.report));
  t.notes.insert(t.notes.begin(), std::move(verdicts));
  return t;
}

// Files of the verdict: those read and those that could not be.
size_t FilesOf(const analysis::CheckRanksReport& r) { return r.ranks.size() + r.unreadable.size(); }

// "1 file", "3 files": one rank is checked as ranks against a baseline directory.
std::string Files(size_t n) { return absl::StrCat(n, n == 1 ? " file" : " files"); }

std::string RanksVerdict(const analysis::CheckRanksReport& r) {
  if (r.passed())
    return absl::StrCat("PASS (", Files(r.ranks.size()), ", ", r.checks(), " checks)");
  // Ranks of the baseline that no input answers fail the gate whatever the others say.
  const std::string missing =
      r.missing.empty() ? ""
                        : absl::StrCat(r.missing.size(), " baseline rank",
                                       r.missing.size() == 1 ? "" : "s", " without a new rank; ");
  if (r.unreadable.empty()) {
    return absl::StrCat("FAIL (", missing, r.failed_ranks(), " of ", r.ranks.size(),
                        " files failed; ", r.failures(), " of ", r.checks(), " checks failed)");
  }
  // A rank that could not be read is an error, whatever the others say: the gate did not see it.
  std::string read =
      r.failed_ranks() > 0
          ? absl::StrCat(r.failed_ranks(), " of the ", r.ranks.size(), " read failed, ",
                         r.failures(), " of ", r.checks(), " checks")
          : absl::StrCat("the ", r.ranks.size(), " read passed ", r.checks(), " checks");
  return absl::StrCat("ERROR (", r.unreadable.size(), " of ", FilesOf(r),
                      " files could not be read; ", missing, read, ")");
}

// One testsuite per left-out file: an <error> for an unreadable rank, <skipped> for a file that
// is not a snapshot, so a CI view lists every file of the directory.
void JunitLeftOut(const analysis::LeftOutFile& f, bool error, std::ostream& x) {
  x << "  <testsuite name=\"" << XmlEscape(absl::StrCat("memsnap check ", f.path))
    << "\" tests=\"1\" failures=\"0\" errors=\"" << (error ? 1 : 0) << "\" skipped=\""
    << (error ? 0 : 1) << "\" time=\"0\">\n";
  x << "    <testcase classname=\"memsnap.check\" name=\"" << XmlEscape(f.path)
    << (error ? ": read" : ": not a snapshot") << "\" time=\"0\">\n";
  if (error) {
    x << "      <error type=\"unreadable snapshot\" message=\"" << XmlEscape(f.reason) << "\">"
      << XmlEscape(absl::StrCat(f.path, ": ", f.reason)) << "</error>\n";
  } else {
    x << "      <skipped message=\"" << XmlEscape(f.reason) << "\"/>\n";
  }
  x << "    </testcase>\n  </testsuite>\n";
}

// One testsuite per baseline rank with no new rank: a <failure>, as a failed check.
void JunitMissing(const analysis::LeftOutFile& f, std::ostream& x) {
  x << "  <testsuite name=\"" << XmlEscape(absl::StrCat("memsnap check ", f.path))
    << "\" tests=\"1\" failures=\"1\" errors=\"0\" skipped=\"0\" time=\"0\">\n";
  x << "    <testcase classname=\"memsnap.check\" name=\"" << XmlEscape(f.path)
    << ": new rank of the same name\" time=\"0\">\n";
  x << "      <failure type=\"missing rank\" message=\"" << XmlEscape(f.reason) << "\">"
    << XmlEscape(absl::StrCat("baseline rank ", f.path, ": ", f.reason)) << "</failure>\n";
  x << "    </testcase>\n  </testsuite>\n";
}

}  // namespace

std::vector<std::string> CheckNotes(const CheckReport& r) {
  std::vector<std::string> notes;
  if (!r.peak_uncompared_file.empty()) {
    notes.push_back(absl::StrCat("peak not compared: ", r.peak_uncompared_file, " has no trace"));
  }
  if (!r.growing_sites_error.empty()) {
    notes.push_back(absl::StrCat("growing sites unavailable: ", r.growing_sites_error));
  }
  return notes;
}

Json CheckToJson(const CheckReport& r) {
  Json j;
  j["passed"] = r.passed();
  j["failures"] = r.failures();
  j["file"] = r.path;
  j["baseline"] = r.baseline_path.empty() ? Json(nullptr) : Json(r.baseline_path);
  Json checks = Json::array();
  for (const auto& c : r.checks) {
    Json cj;
    cj["name"] = CheckName(c);
    cj["metric"] = MetricName(c);
    cj["kind"] = c.kind == analysis::CheckKind::kBaseline ? "baseline" : "threshold";
    if (IsNoBaseline(c)) {  // no figures: the file looked for
      cj["value"] = nullptr;
      cj["limit"] = nullptr;
      cj["baseline_file"] = LookedFor(c);
    } else if (c.is_ratio) {
      cj["value"] = c.value;
      cj["limit"] = c.limit;
    } else {
      cj["value"] = static_cast<int64_t>(c.value);
      cj["limit"] = static_cast<int64_t>(c.limit);
    }
    if (c.baseline) cj["baseline"] = static_cast<int64_t>(*c.baseline);
    cj["passed"] = c.passed;
    if (const std::optional<analysis::CheckFailure>& f = c.failure) {
      if (IsNoBaseline(c)) {
        cj["reason"] = "no_baseline";
      } else if (c.is_ratio) {
        cj["over"] = f->over;
      } else {
        cj["over"] = static_cast<int64_t>(f->over);
      }
      if (f->reason == analysis::CheckReason::kDoesNotFit) {
        cj["reason"] = analysis::OomVerdictName(f->verdict);
        cj["device"] = f->device;
        cj["event"] = f->event == analysis::kPreexistingEvent ? Json(nullptr) : Json(f->event);
        cj["requested"] = f->requested;
        cj["needs"] = static_cast<int64_t>(f->value);
        cj["best_needs"] = f->best_needs > 0 ? Json(f->best_needs) : Json(nullptr);
        cj["best_conf"] = f->best_needs > 0 ? Json(f->best_conf) : Json(nullptr);
        Json per_device = Json::array();
        for (const auto& [device, bytes] : f->device_needs) {
          per_device.push_back({{"device", device}, {"needs", bytes}});
        }
        cj["device_needs"] = std::move(per_device);
      }
      cj["message"] = FailureMessage(c);
    }
    checks.push_back(cj);
  }
  j["checks"] = checks;
  Json sites = Json::array();
  for (const auto& s : r.growing_sites) {
    sites.push_back(Json{{"site", s.site},
                         {"key", s.key},
                         {"category", std::string(r.categories.Name(s.category()))},
                         {"frames", s.frames},
                         {"before_bytes", s.before_bytes},
                         {"after_bytes", s.after_bytes},
                         {"delta_bytes", s.delta_bytes()},
                         {"before_count", s.before_count},
                         {"after_count", s.after_count}});
  }
  j["growing_sites"] = sites;
  j["growing_sites_at"] = r.sites_at_peak ? "peak" : "end";
  if (r.growing_by != analysis::GroupBy::kSite) {
    j["growing_by"] = std::string(analysis::GroupByName(r.growing_by));  // check --by
  }
  j["growing_live_bytes_by_category"] =
      r.growing_kinds
          ? KindChangesJson(r.growing_kinds->before, r.growing_kinds->after, r.categories)
          : Json(nullptr);
  j["notes"] = CheckNotes(r);
  if (r.fits) j["fits"] = OomToJson(*r.fits);
  return j;
}

void RenderCheckText(const CheckReport& r, std::ostream& out) {
  out << "memsnap check " << r.path;
  if (!r.baseline_path.empty()) out << " (baseline " << r.baseline_path << ")";
  out << ": " << CheckVerdictText(r) << "\n";
  Table checks;
  checks.AddColumn("check", "check", Unit::kText).min_width = 32;
  checks.AddColumn("value", "value", Unit::kText).align = Align::kRight;
  checks.columns.back().min_width = 12;
  checks.AddColumn("limit", "limit", Unit::kText).min_width = 36;
  checks.AddColumn("result", "result", Unit::kText);
  for (const auto& c : r.checks) {
    std::string limit = absl::StrCat("limit ", internal::FigureText(c.limit, c.is_ratio));
    if (c.baseline)
      absl::StrAppend(&limit, " (baseline ", internal::FigureText(*c.baseline, c.is_ratio), ")");
    if (IsFits(c)) limit = absl::StrCat("device ", internal::FigureText(c.limit, false));
    if (IsNoBaseline(c)) limit = absl::StrCat("looked for ", LookedFor(c));
    checks.AddRow(
        {CheckName(c), ValueCell(c), std::move(limit), std::string(c.passed ? "PASS" : "FAIL")});
  }
  TextTableOptions rows = FixedWidths("  ");
  rows.header = false;
  RenderTableText(checks, out, rows, [&](size_t i, std::ostream& os) {
    const CheckResult& c = r.checks[i];
    if (!c.passed) os << "    " << FailureMessage(c) << "\n";
    // The explanation belongs to the fits row, before any other check's row.
    if (IsFits(c) && r.fits && !r.fits->ooms.empty()) {
      std::istringstream brief(OomBrief(*r.fits));
      for (std::string l; std::getline(brief, l);) os << "      " << l << "\n";
    }
  });
  for (const auto& n : CheckNotes(r)) out << "  note: " << n << "\n";
  if (const std::string kinds = KindsText(r); !kinds.empty()) {
    out << "grew by kind (live bytes at the " << (r.sites_at_peak ? "peak" : "end")
        << ", baseline -> new): " << kinds << "\n";
  }
  if (!r.growing_sites.empty()) {
    out << "top growing " << GrowingRowsName(r) << " (live bytes at the "
        << (r.sites_at_peak ? "peak" : "end") << ", baseline -> new)\n";
    Table growing;
    growing.AddColumn("delta_bytes", "delta", Unit::kDelta).min_width = 12;
    growing.AddColumn("change", "baseline -> new", Unit::kText).min_width = 26;
    growing.AddColumn("site", "site", Unit::kText);
    for (const auto& s : r.growing_sites) {
      growing.AddRow({s.delta_bytes(),
                      absl::StrCat(FormatBytes(s.before_bytes), " -> ", FormatBytes(s.after_bytes)),
                      SiteName(s, r.categories)});
    }
    TextTableOptions text = FixedWidths("  ");
    text.header = false;
    RenderTableText(growing, out, text);
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
  m << "### memsnap check: " << (r.passed() ? "✅ " : "❌ ") << CheckVerdictText(r) << "\n\n";
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
  j["ranks"] = RankTableToJson(CheckRanksTable(r));
  Json files = Json::array();
  for (const auto& rank : r.ranks) files.push_back(CheckToJson(rank.report));
  j["files"] = std::move(files);
  j["unreadable"] = LeftOutToJson(r.unreadable);
  j["skipped"] = LeftOutToJson(r.skipped);
  j["missing"] = LeftOutToJson(r.missing);
  return j;
}

void RenderCheckRanksText(const analysis::CheckRanksReport& r, std::ostream& out) {
  out << "memsnap check, " << Files(FilesOf(r));
  if (!r.baseline.empty()) out << " (baseline " << r.baseline << ")";
  out << ": " << RanksVerdict(r) << "\n";
  if (!r.ranks.empty()) {
    out << "\n";
    RenderRankTableText(CheckRanksTable(r), out);
  }
  if (!r.unreadable.empty()) {
    out << "\ncould not be read (not checked: the gate fails)\n";
    for (const auto& f : r.unreadable) out << "  " << f.path << ": " << f.reason << "\n";
  }
  if (!r.missing.empty()) {
    out << "\nbaseline ranks without a new rank (not checked: the gate fails)\n";
    for (const auto& f : r.missing) out << "  " << f.path << ": " << f.reason << "\n";
  }
  if (!r.skipped.empty()) {
    out << "\nskipped (not snapshots)\n";
    for (const auto& f : r.skipped) out << "  " << f.path << ": " << f.reason << "\n";
  }
  for (const auto& rank : r.ranks) {
    if (rank.report.passed()) continue;
    out << "\n";
    RenderCheckText(rank.report, out);
  }
}

std::string CheckRanksToJunit(const analysis::CheckRanksReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"memsnap check\" tests=\""
    << static_cast<size_t>(r.checks()) + r.unreadable.size() + r.skipped.size() + r.missing.size()
    << "\" failures=\"" << static_cast<size_t>(r.failures()) + r.missing.size() << "\" errors=\""
    << r.unreadable.size() << "\">\n";
  // Testcase names carry the file too: some CI views flatten suites into one list.
  for (const auto& rank : r.ranks) JunitSuite(rank.report, rank.report.path + ": ", x);
  for (const auto& f : r.unreadable) JunitLeftOut(f, /*error=*/true, x);
  for (const auto& f : r.skipped) JunitLeftOut(f, /*error=*/false, x);
  for (const auto& f : r.missing) JunitMissing(f, x);
  x << "</testsuites>\n";
  return x.str();
}

std::string CheckRanksToMarkdown(const analysis::CheckRanksReport& r) {
  std::ostringstream m;
  m << "### memsnap check: " << (r.passed() ? "✅ " : "❌ ") << RanksVerdict(r) << "\n\n";
  m << Files(FilesOf(r));
  if (!r.baseline.empty()) m << ", baseline: `" << r.baseline << "`";
  m << "\n\n";
  Table t;
  t.AddColumn("file", "File", Unit::kText).code = true;
  for (const auto& metric : r.table.metrics) t.AddColumn(metric.name, metric.label, Unit::kBytes);
  t.AddColumn("result", "Result", Unit::kText);
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    std::vector<Cell> row = {r.table.files[i]};
    for (const auto& metric : r.table.metrics) {
      const double v = metric.values[i];
      row.push_back(v < 0 ? Cell() : FigureCell(v, metric.unit == Unit::kRatio));
    }
    const std::string note = RankVerdict(r.ranks[i].report);
    row.push_back(r.ranks[i].report.passed() ? note : "**" + note + "**");
    t.AddRow(std::move(row));
  }
  for (const auto& f : r.unreadable) {
    std::vector<Cell> row = {f.path};
    row.resize(1 + r.table.metrics.size());  // unknown cells: "-"
    row.push_back(absl::StrCat("**UNREADABLE**: ", f.reason));
    t.AddRow(std::move(row));
  }
  for (const auto& f : r.missing) {
    std::vector<Cell> row = {f.path};
    row.resize(1 + r.table.metrics.size());
    row.push_back(absl::StrCat("**MISSING** (baseline rank): ", f.reason));
    t.AddRow(std::move(row));
  }
  RenderTableMarkdown(t, m);
  if (!r.skipped.empty()) {
    m << "\n**Skipped** (not snapshots)\n\n";
    for (const auto& f : r.skipped) {
      m << "- `" << MarkdownCell(f.path) << "`: " << MarkdownCell(f.reason) << "\n";
    }
  }
  if (!r.table.outliers.empty()) {
    m << "\n**Outliers**\n\n";
    for (const auto& o : r.table.outliers) {
      m << "- `" << MarkdownCell(o.file) << "`: " << MarkdownCell(OutlierReason(o)) << "\n";
    }
  }
  for (const auto& rank : r.ranks) {
    if (rank.report.passed()) continue;
    m << "\n#### `" << MarkdownCell(rank.report.path) << "`: " << CheckVerdictText(rank.report)
      << "\n\n";
    MarkdownChecks(rank.report, m);
  }
  return m.str();
}

}  // namespace memsnap::report
