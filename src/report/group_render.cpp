// Renderers of `memsnap top`: table, JSON and folded stacks.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/site_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/report/workload_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "report/render_util.h"

namespace memsnap::report {

using analysis::GroupReport;
using analysis::GroupRow;
using Json = nlohmann::ordered_json;

namespace {
constexpr size_t kFramesShown = 3;

std::string MomentName(const analysis::Moment& m) {
  switch (m.kind) {
    case analysis::Moment::Kind::kPeak:
      return "peak";
    case analysis::Moment::Kind::kEnd:
      return "end";
    case analysis::Moment::Kind::kTime:
      return absl::StrCat("time_us ", m.value);
    case analysis::Moment::Kind::kEvent:
      return absl::StrCat("event:", m.value);
    case analysis::Moment::Kind::kSinceStart:
      return FormatRelativeTime(m.value);
    case analysis::Moment::Kind::kBeforeEnd:
      return absl::StrCat(FormatRelativeTime(-m.value), " before the end");
  }
  return "?";
}

std::string CategoryCell(const GroupRow& r, const analysis::CategoryNames& names) {
  if (r.bytes <= 0 && r.count == 0) return "-";
  return absl::StrCat(Sv(names.Name(r.category())), r.mixed() ? "*" : "");
}

// A row's share of the total live bytes; unknown ("-") when nothing is live.
Cell Share(const GroupReport& report, int64_t bytes) {
  if (report.total_bytes <= 0) return {};
  return static_cast<double>(bytes) / static_cast<double>(report.total_bytes);
}

// top's text table: bytes, share, [self,] count, then the category and the row's name (a site,
// a module), or the category alone when it is the name. Fixed widths keep each row's columns
// where they were when a name is long; the caller lines under a site are `after_row`'s.
Table TopTable(const GroupReport& report, bool self_column, std::string_view name) {
  Table t;
  t.AddColumn("bytes", "bytes", Unit::kBytes).min_width = 12;
  t.AddColumn("share", "share", Unit::kRatio).min_width = 7;
  if (self_column) t.AddColumn("self_bytes", "self", Unit::kBytes).min_width = 12;
  t.AddColumn("count", "count", Unit::kCount).min_width = 9;
  if (report.options.by == analysis::GroupBy::kCategory) {
    t.AddColumn("category", "category", Unit::kText);
  } else {
    t.AddColumn("category", "category", Unit::kText).min_width = 16;
    t.AddColumn(std::string(name), std::string(name), Unit::kText);
  }
  return t;
}

// A module tree: one row per node, indented by its depth; bytes are the subtree's, `self` the
// node's own (docs/attribution.md, "Modules").
void RenderModuleTree(const GroupReport& report, const std::vector<GroupRow>& rows,
                      std::ostream& out) {
  Table table = TopTable(report, true, "module");
  bool any_mixed = false;
  for (const GroupRow& r : rows) {
    any_mixed = any_mixed || r.mixed();
    table.AddRow(
        {r.bytes, Share(report, r.bytes), r.self_bytes, r.count,
         CategoryCell(r, report.options.categories),
         absl::StrCat(std::string(2 * static_cast<size_t>(std::max(r.depth, 0)), ' '), r.site)});
  }
  table.AddRow({report.total_bytes, Share(report, report.total_bytes), std::string(),
                report.total_count, std::string("total"), std::string()});
  RenderTableText(table, out, FixedWidths());
  out << "bytes: the node and the modules it called; self: made in the node itself. Backward\n"
         "memory is under the module whose forward made its autograd node.\n";
  if (any_mixed) {
    out << "* the node holds other categories too; the one with the most bytes is shown\n";
  }
}

}  // namespace

void RenderGroupText(const GroupReport& report, const std::vector<GroupRow>& rows,
                     std::ostream& out) {
  out << "live memory at "
      << (report.moment_described.empty() ? MomentName(report.moment) : report.moment_described)
      << ", grouped by " << analysis::GroupByName(report.options.by);
  if ((report.options.by == analysis::GroupBy::kStack ||
       report.options.by == analysis::GroupBy::kModule) &&
      report.options.depth > 0) {
    out << " (depth " << report.options.depth << ")";
  }
  out << (report.options.filter.noise_filter ? "" : ", noise filter off") << "\n";
  for (const analysis::DeviceMoment& d : report.devices) {
    out << "  device " << d.device << ": "
        << (!d.has_trace         ? std::string("at the dump (no allocation traced)")
            : d.event.is_start() ? std::string("initial state")
                                 : absl::StrCat("after event:", d.event.index()));
    if (d.time_us != kNoTime && d.start_time_us != kNoTime) {
      out << " (" << FormatRelativeTime(d.time_us - d.start_time_us) << ")";
    }
    out << ", " << FormatBytes(d.live_bytes) << " live\n";
    if (d.workload) out << "    workload: " << WorkloadText(*d.workload) << "\n";
  }
  const bool by_category = report.options.by == analysis::GroupBy::kCategory;
  if (report.options.by == analysis::GroupBy::kModule) {
    RenderModuleTree(report, rows, out);
    return;
  }
  Table table = TopTable(report, false, "site");
  // The callers go under the site (by category, no row has callers).
  const std::string indent(FixedColumnStart(table, "site", FixedWidths()), ' ');
  std::vector<const GroupRow*> with_callers;  // per table row; none under the total
  bool any_mixed = false, any_differs = false;
  for (const GroupRow& r : rows) {
    if (by_category) {
      table.AddRow({r.bytes, Share(report, r.bytes), r.count, r.site});
    } else {
      any_mixed = any_mixed || r.mixed();
      table.AddRow({r.bytes, Share(report, r.bytes), r.count,
                    CategoryCell(r, report.options.categories),
                    r.label.head.empty() ? r.site : r.label.head});
    }
    with_callers.push_back(by_category ? nullptr : &r);
  }
  std::vector<Cell> total = {report.total_bytes, Share(report, report.total_bytes),
                             report.total_count, std::string("total")};
  if (!by_category) total.push_back(std::string());  // no site
  table.AddRow(std::move(total));
  with_callers.push_back(nullptr);
  RenderTableText(table, out, FixedWidths(), [&](size_t i, std::ostream& os) {
    if (const GroupRow* r = with_callers[i]) {
      any_differs =
          RenderCallerLines(r->info, r->label, kFramesShown - 1, indent, true, os) || any_differs;
    }
  });
  if (any_differs) out << kDiffersNote;
  if (any_mixed) {
    out << "* the site holds other categories too; the one with the most bytes is shown "
           "(--by category splits them)\n";
  }
}

Json CategoriesJson(const analysis::CategoryBytes& bytes, const analysis::CategoryNames& names) {
  Json j = Json::object();
  for (int c = 0; c < names.size(); ++c) {
    if (bytes[c] != 0) j[std::string(names.Name(static_cast<analysis::Category>(c)))] = bytes[c];
  }
  return j;
}

Json GroupToJson(const GroupReport& report, const std::vector<GroupRow>& rows) {
  Json j;
  j["by"] = std::string(analysis::GroupByName(report.options.by));
  j["depth"] = report.options.depth;
  Json devs = Json::array();
  for (const analysis::DeviceMoment& d : report.devices) {
    devs.push_back({{"device", d.device},
                    {"event_index", d.event.index()},
                    {"time_us", internal::TimeToJson(d.time_us)},
                    {"time_rel_us", d.time_us == kNoTime || d.start_time_us == kNoTime
                                        ? Json(nullptr)
                                        : Json(d.time_us - d.start_time_us)},
                    {"live_bytes", d.live_bytes}});
    if (d.workload) devs.back()["workload"] = internal::WorkloadToJson(*d.workload);
  }
  j["devices"] = devs;
  j["total_bytes"] = report.total_bytes;
  j["total_rounded_bytes"] = report.total_rounded_bytes;
  j["total_count"] = report.total_count;
  const analysis::CategoryNames& names = report.options.categories;
  j["categories"] = CategoriesJson(report.category_bytes, names);
  Json arr = Json::array();
  for (const GroupRow& r : rows) {
    Json row;
    row["key"] = r.key;
    row["site"] = r.site;
    row["category"] = std::string(names.Name(r.category()));
    row["categories"] = CategoriesJson(r.category_bytes, names);
    // The rule that decided most of the row's bytes, and the bytes each rule decided
    // (docs/attribution.md, "Rules").
    row["category_rule"] = std::string(analysis::CategoryRuleName(r.rule()));
    Json rules = Json::object();
    for (int k = 0; k < analysis::kNumCategoryRules; ++k) {
      if (r.rule_bytes[k] == 0) continue;
      rules[std::string(analysis::CategoryRuleName(static_cast<analysis::CategoryRule>(k)))] =
          r.rule_bytes[k];
    }
    row["category_rules"] = std::move(rules);
    row["bytes"] = r.bytes;
    row["rounded_bytes"] = r.rounded_bytes;
    row["count"] = r.count;
    row["share"] = report.total_bytes > 0 ? static_cast<double>(r.bytes) / report.total_bytes : 0.0;
    row["synthetic"] = r.synthetic;
    row["frames"] = r.frames;
    // A backward row's forward lines, all of them (the label shows three): only where the file
    // shows them (docs/attribution.md, rule L2).
    if (!r.info.forward_lines.empty()) row["forward_lines"] = r.info.forward_lines;
    if (report.options.by == analysis::GroupBy::kModule) {
      row["depth"] = r.depth;
      row["self_bytes"] = r.self_bytes;
      row["self_count"] = r.self_count;
    }
    arr.push_back(std::move(row));
  }
  j["rows"] = arr;
  return j;
}

void RenderFolded(const std::vector<GroupRow>& rows, std::ostream& out) {
  for (const GroupRow& r : rows) {
    if (r.bytes <= 0) continue;
    out << r.key << " " << r.bytes << "\n";
  }
}

}  // namespace memsnap::report
