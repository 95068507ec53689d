// Renderers of `memsnap top`: table, JSON and folded stacks.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/format.h"

namespace memsnap::report {

using analysis::GroupReport;
using analysis::GroupRow;
using Json = nlohmann::ordered_json;

namespace {
constexpr size_t kFramesShown = 3;

std::string MomentName(const analysis::Moment& m) {
  switch (m.kind) {
    case analysis::Moment::Kind::kPeak: return "peak";
    case analysis::Moment::Kind::kEnd: return "end";
    case analysis::Moment::Kind::kTime: return absl::StrCat("time_us ", m.value);
    case analysis::Moment::Kind::kEvent: return absl::StrCat("event:", m.value);
    case analysis::Moment::Kind::kSinceStart: return FormatRelativeTime(m.value);
    case analysis::Moment::Kind::kBeforeEnd:
      return absl::StrCat(FormatRelativeTime(-m.value), " before the end");
  }
  return "?";
}
// Index of the innermost frame of a Python file ("file.py:line:name"), or 0 when there is none.
size_t FirstPythonFrame(const std::vector<std::string>& frames) {
  for (size_t k = 0; k < frames.size(); ++k) {
    if (frames[k].find(".py:") != std::string::npos) return k;
  }
  return 0;
}

}  // namespace

void RenderGroupText(const GroupReport& report, const std::vector<GroupRow>& rows,
                     std::ostream& out) {
  out << "live memory at " << MomentName(report.moment) << ", grouped by "
      << analysis::GroupByName(report.options.by);
  if (report.options.by == analysis::GroupBy::kStack && report.options.depth > 0) {
    out << " (depth " << report.options.depth << ")";
  }
  out << (report.options.filter.noise_filter ? "" : ", noise filter off") << "\n";
  for (const analysis::DeviceMoment& d : report.devices) {
    out << "  device " << d.device << ": "
        << (d.event < 0 ? std::string("initial state") : absl::StrCat("after event:", d.event));
    if (d.time_us != kNoTime && d.start_time_us != kNoTime) {
      out << " (" << FormatRelativeTime(d.time_us - d.start_time_us) << ")";
    }
    out << ", " << FormatBytes(d.live_bytes) << " live\n";
  }
  out << absl::StrFormat("%12s %7s %9s  %s\n", "bytes", "share", "count", "site");
  auto share = [&](int64_t b) {
    return report.total_bytes > 0 ? FormatPercent(static_cast<double>(b) / report.total_bytes)
                                  : std::string("-");
  };
  for (const GroupRow& r : rows) {
    // Stacks recorded with C++ frames start with the allocator's own frames; the user wants the
    // first Python frame, so the listing starts there and says how many frames it skipped.
    size_t first = FirstPythonFrame(r.frames);
    size_t end = std::min(r.frames.size(), first + kFramesShown);
    out << absl::StrFormat("%12s %7s %9s  %s\n", FormatBytes(r.bytes), share(r.bytes),
                           FormatCount(r.count), r.frames.empty() ? r.key : r.frames[first]);
    for (size_t k = first + 1; k < end; ++k) {
      out << std::string(32, ' ') << "<- " << r.frames[k] << "\n";
    }
    if (first > 0 || r.frames.size() > end) {
      out << std::string(32, ' ') << "<- ... " << r.frames.size() - end << " more frames";
      if (first > 0) out << " (and " << first << " native frames inside, not shown)";
      out << "\n";
    }
  }
  out << absl::StrFormat("%12s %7s %9s  %s\n", FormatBytes(report.total_bytes),
                         share(report.total_bytes), FormatCount(report.total_count), "total");
}

Json GroupToJson(const GroupReport& report, const std::vector<GroupRow>& rows) {
  Json j;
  j["by"] = std::string(analysis::GroupByName(report.options.by));
  j["depth"] = report.options.depth;
  Json devs = Json::array();
  for (const analysis::DeviceMoment& d : report.devices) {
    devs.push_back({{"device", d.device},
                    {"event_index", d.event},
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
  Json arr = Json::array();
  for (const GroupRow& r : rows) {
    Json row;
    row["key"] = r.key;
    row["bytes"] = r.bytes;
    row["rounded_bytes"] = r.rounded_bytes;
    row["count"] = r.count;
    row["share"] = report.total_bytes > 0 ? static_cast<double>(r.bytes) / report.total_bytes : 0.0;
    row["synthetic"] = r.synthetic;
    if (report.options.by == analysis::GroupBy::kStack && !r.synthetic) row["frames"] = r.frames;
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
