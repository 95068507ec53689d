// Renderers of `memsnap top`: table, JSON and folded stacks.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/site_render.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

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

// A module tree: one row per node, indented by its depth; bytes are the subtree's, `self` the
// node's own (docs/attribution.md, "Modules").
void RenderModuleTree(const GroupReport& report, const std::vector<GroupRow>& rows,
                      std::ostream& out) {
  auto share = [&](int64_t b) {
    return report.total_bytes > 0 ? FormatPercent(static_cast<double>(b) / report.total_bytes)
                                  : std::string("-");
  };
  out << absl::StrFormat("%12s %7s %12s %9s  %-16s %s\n", "bytes", "share", "self", "count",
                         "category", "module");
  bool any_mixed = false;
  for (const GroupRow& r : rows) {
    any_mixed = any_mixed || r.mixed();
    out << absl::StrFormat("%12s %7s %12s %9s  %-16s %s%s\n", FormatBytes(r.bytes), share(r.bytes),
                           FormatBytes(r.self_bytes), FormatCount(r.count),
                           CategoryCell(r, report.options.categories),
                           std::string(2 * static_cast<size_t>(std::max(r.depth, 0)), ' '), r.site);
  }
  out << absl::StrFormat("%12s %7s %12s %9s  %s\n", FormatBytes(report.total_bytes),
                         share(report.total_bytes), "", FormatCount(report.total_count), "total");
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
  }
  const bool by_category = report.options.by == analysis::GroupBy::kCategory;
  if (report.options.by == analysis::GroupBy::kModule) {
    RenderModuleTree(report, rows, out);
    return;
  }
  auto share = [&](int64_t b) {
    return report.total_bytes > 0 ? FormatPercent(static_cast<double>(b) / report.total_bytes)
                                  : std::string("-");
  };
  const std::string indent(by_category ? 32 : 49, ' ');
  if (by_category) {
    out << absl::StrFormat("%12s %7s %9s  %s\n", "bytes", "share", "count", "category");
  } else {
    out << absl::StrFormat("%12s %7s %9s  %-16s %s\n", "bytes", "share", "count", "category",
                           "site");
  }
  bool any_mixed = false, any_differs = false;
  for (const GroupRow& r : rows) {
    if (by_category) {
      out << absl::StrFormat("%12s %7s %9s  %s\n", FormatBytes(r.bytes), share(r.bytes),
                             FormatCount(r.count), r.site);
      continue;
    }
    any_mixed = any_mixed || r.mixed();
    out << absl::StrFormat("%12s %7s %9s  %-16s %s\n", FormatBytes(r.bytes), share(r.bytes),
                           FormatCount(r.count), CategoryCell(r, report.options.categories),
                           r.label.head.empty() ? r.site : r.label.head);
    any_differs =
        RenderCallerLines(r.info, r.label, kFramesShown - 1, indent, true, out) || any_differs;
  }
  out << absl::StrFormat("%12s %7s %9s  %s\n", FormatBytes(report.total_bytes),
                         share(report.total_bytes), FormatCount(report.total_count), "total");
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
                    {"time_us", d.time_us == kNoTime ? Json(nullptr) : Json(d.time_us)},
                    {"time_rel_us", d.time_us == kNoTime || d.start_time_us == kNoTime
                                        ? Json(nullptr)
                                        : Json(d.time_us - d.start_time_us)},
                    {"live_bytes", d.live_bytes}});
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
