#include "memsnap/report/blocks_render.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/site_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "report/render_util.h"

namespace memsnap::report {

using analysis::LocalEvent;
using Json = nlohmann::ordered_json;

namespace {
std::string EventText(LocalEvent e, const char* none) {
  std::optional<uint32_t> i = e.index();
  return i ? absl::StrCat(*i) : std::string(none);
}
Json EventJson(LocalEvent e) {
  std::optional<uint32_t> i = e.index();
  return i ? Json(*i) : Json(nullptr);
}
}  // namespace

void RenderBlocksText(const analysis::BlocksReport& rep, size_t limit, std::ostream& out) {
  Table t;
  t.AddColumn("device", "dev", Unit::kId).min_width = 3;
  Column& address = t.AddColumn("address", "address", Unit::kAddress);
  address.min_width = 16;
  address.align = Align::kLeft;
  t.AddColumn("size", "size", Unit::kBytes).min_width = 11;
  t.AddColumn("requested_size", "requested", Unit::kBytes).min_width = 11;
  t.AddColumn("class", "class", Unit::kText).min_width = 10;
  t.AddColumn("events", "events", Unit::kText).min_width = 15;
  Column& stream = t.AddColumn("stream", "stream", Unit::kAddress);
  stream.min_width = 10;
  stream.align = Align::kLeft;
  t.AddColumn("category", "category", Unit::kText).min_width = 15;
  t.AddColumn("site", "allocated at", Unit::kText);
  const std::string under_site(FixedColumnStart(t, "site", FixedWidths()), ' ');
  size_t n = limit == 0 ? rep.rows.size() : std::min(limit, rep.rows.size());
  for (size_t i = 0; i < n; ++i) {
    const analysis::BlockRow& r = rep.rows[i];
    const analysis::BlockLifetime& l = r.lifetime;
    t.AddRow({int64_t{r.device}, static_cast<int64_t>(l.address), l.rounded_size, l.requested_size,
              std::string(analysis::LifetimeClassName(l.cls)),
              absl::StrCat(EventText(l.alloc_event, "t0"), "..",
                           EventText(l.free_completed_event, "end")),
              static_cast<int64_t>(l.stream), std::string(rep.categories.Name(r.category.category)),
              r.head.empty() ? r.site : r.head});
  }
  bool any_differs = false;
  RenderTableText(t, out, FixedWidths(), [&](size_t i, std::ostream& os) {
    const analysis::BlockRow& r = rep.rows[i];
    for (const auto& [text, tells] : r.context) {
      os << under_site << "  " << kCallerArrow << text << (tells ? kDiffersMark : "") << "\n";
      any_differs = any_differs || tells;
    }
    // What the program said about the allocation (only entries that carry it).
    if (!r.user_metadata.empty()) {
      os << under_site << "  metadata: " << r.user_metadata << "\n";
    }
    for (const std::string& a : r.annotations) {
      os << under_site << "  annotation: " << a << "\n";
    }
    if (!r.compile_context.empty()) {
      os << under_site << "  compile context: " << r.compile_context << "\n";
    }
  });
  if (any_differs) out << kDiffersNote;
  if (n < rep.rows.size())
    out << "... " << FormatCount(rep.rows.size() - n) << " more (--limit 0 shows all)\n";
  out << FormatCount(rep.rows.size()) << " blocks, " << FormatBytes(rep.total_bytes)
      << " requested\n";
}

Json BlocksToJson(const analysis::BlocksReport& rep, size_t limit) {
  Json j;
  j["count"] = rep.rows.size();
  j["total_bytes"] = rep.total_bytes;
  Json arr = Json::array();
  std::map<int32_t, int> stack_ids;  // the report's stack index -> index in this output
  Json stacks = Json::array();
  size_t n = limit == 0 ? rep.rows.size() : std::min(limit, rep.rows.size());
  for (size_t i = 0; i < n; ++i) {
    const analysis::BlockRow& r = rep.rows[i];
    const analysis::BlockLifetime& l = r.lifetime;
    Json b;
    b["device"] = r.device;
    b["address"] = l.address;
    b["version"] = l.version;
    b["class"] = std::string(analysis::LifetimeClassName(l.cls));
    b["size"] = l.rounded_size;
    b["requested_size"] = l.requested_size;
    b["stream"] = l.stream;
    b["alloc_event"] = EventJson(l.alloc_event);
    b["free_requested_event"] = EventJson(l.free_requested_event);
    b["free_completed_event"] = EventJson(l.free_completed_event);
    b["alloc_time_us"] = internal::TimeToJson(r.alloc_time_us);
    b["free_time_us"] = internal::TimeToJson(r.free_time_us);
    b["site"] = r.site;
    b["category"] = std::string(rep.categories.Name(r.category.category));
    b["category_rule"] = std::string(analysis::CategoryRuleName(r.category.rule));
    // Only on blocks whose alloc entry carries them (newer PyTorch; docs/attribution.md).
    if (!r.user_metadata.empty()) b["user_metadata"] = r.user_metadata;
    if (!r.compile_context.empty()) b["compile_context"] = r.compile_context;
    if (!r.annotations.empty()) b["annotations"] = r.annotations;
    if (r.stack < 0) {
      b["stack"] = nullptr;
    } else {
      auto [it, inserted] = stack_ids.try_emplace(r.stack, static_cast<int>(stacks.size()));
      if (inserted) stacks.push_back(rep.stacks[r.stack]);
      b["stack"] = it->second;
    }
    arr.push_back(std::move(b));
  }
  j["blocks"] = arr;
  j["stacks"] = stacks;  // "stack" of a block indexes this: frames innermost first
  return j;
}

}  // namespace memsnap::report
