#include "memsnap/report/summary_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/table.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;

Json TotalsToJson(const analysis::Totals& t, bool with_trace) {
  Json j;
  j["segments"] = t.segments;
  j["blocks"] = t.blocks;
  j["reserved_bytes"] = t.reserved_bytes;
  j["allocated_bytes"] = t.allocated_bytes;
  j["active_bytes"] = t.active_bytes;
  j["requested_bytes"] = t.requested_bytes;
  j["inactive_bytes"] = t.inactive_bytes;
  if (with_trace) {
    j["trace_entries"] = t.trace_entries;
    Json actions = Json::object();
    for (int i = 0; i < kNumActions; ++i) {
      if (t.actions[i] > 0) actions[std::string(ActionName(static_cast<Action>(i)))] = t.actions[i];
    }
    j["actions"] = actions;
  }
  return j;
}

std::string ContainerName(const SourceInfo& s) {
  std::string name;
  switch (s.container) {
    case ContainerFormat::kPickle:
      name = absl::StrCat("pickle protocol ", s.pickle_protocol);
      break;
    case ContainerFormat::kJson:
      name = "JSON";
      break;
    case ContainerFormat::kHtml:
      name = absl::StrCat("HTML page (pickle protocol ", s.pickle_protocol, ")");
      break;
  }
  if (s.gzip) name += ", gzip";
  return name;
}

std::string Flavour(const SourceInfo& s) {
  if (s.bare_segment_list) return "bare segment list (torch.cuda.memory_snapshot / 1.13)";
  if (s.legacy_history) return "2.0 era (block history)";
  return "2.1+";
}

std::string TimeSpan(int64_t first, int64_t last) {
  if (first == kNoTime) return "no time_us (ordered by event index)";
  return absl::StrFormat("%.3f s", static_cast<double>(last - first) / 1e6);
}

// The columns of Totals a pool or stream row shows: the text keeps the byte figures people
// compare (cached free is the inactive bytes); the JSON has them all.
void AddTotalsColumns(Table& t) {
  auto add = [&](const char* key, const char* label, Unit unit, int width, bool in_text) {
    Column& c = t.AddColumn(key, label, unit);
    c.min_width = width;
    c.in_text = in_text;
  };
  add("segments", "segments", Unit::kCount, 9, true);
  add("blocks", "blocks", Unit::kCount, 0, false);
  add("reserved_bytes", "reserved", Unit::kBytes, 12, true);
  add("allocated_bytes", "allocated", Unit::kBytes, 12, true);
  add("active_bytes", "active", Unit::kBytes, 12, true);
  add("requested_bytes", "requested", Unit::kBytes, 0, false);
  add("inactive_bytes", "cached free", Unit::kBytes, 12, true);
}

std::vector<Cell> TotalsCells(std::vector<Cell> row, const analysis::Totals& t) {
  const int64_t figures[] = {t.segments,     t.blocks,          t.reserved_bytes, t.allocated_bytes,
                             t.active_bytes, t.requested_bytes, t.inactive_bytes};
  row.insert(row.end(), std::begin(figures), std::end(figures));
  return row;
}

Table PoolsTable(const analysis::DeviceSummary& d) {
  Table t;
  t.AddColumn("pool", "pool", Unit::kText).in_text = false;
  t.AddColumn("pool_type", "pool type", Unit::kText).in_text = false;
  Column& both = t.AddColumn("pool_and_type", "pool", Unit::kText);
  both.min_width = 22;
  both.in_data = false;
  AddTotalsColumns(t);
  for (const auto& p : d.pools) {
    std::string type = p.is_small ? "small" : "large";
    t.AddRow(
        TotalsCells({PoolName(p.pool), type, absl::StrCat(PoolName(p.pool), " ", type)}, p.totals));
  }
  return t;
}

Table StreamsTable(const analysis::DeviceSummary& d) {
  Table t;
  Column& stream = t.AddColumn("stream", "stream", Unit::kId);
  stream.min_width = 22;
  stream.align = Align::kLeft;
  AddTotalsColumns(t);
  for (const auto& s : d.streams) t.AddRow(TotalsCells({s.stream}, s.totals));
  return t;
}

}  // namespace

std::string PoolName(const PoolId& pool) {
  if (pool.is_default()) return "default";
  return absl::StrCat("(", pool.first, ",", pool.second, ")");
}

Json SettingsToJson(const AllocatorSettings& s) {
  if (!s.present) return nullptr;
  Json j;
  j["PYTORCH_CUDA_ALLOC_CONF"] = s.conf;
  j["max_split_size"] = s.max_split_size;
  j["garbage_collection_threshold"] = s.garbage_collection_threshold;
  j["expandable_segments"] = s.expandable_segments;
  j["release_lock_on_cudamalloc"] = s.release_lock_on_cudamalloc;
  j["roundup_power2_divisions"] = s.roundup_power2_divisions;
  if (s.trace_alloc_overflowed) j["trace_alloc_overflowed"] = *s.trace_alloc_overflowed;
  if (s.trace_alloc_max_entries) j["trace_alloc_max_entries"] = *s.trace_alloc_max_entries;
  return j;
}

Json SummaryToJson(const analysis::SummaryReport& r) {
  Json j = TotalsToJson(r.totals, true);
  j["file"] = r.source.path;
  j["format"] = ContainerName(r.source);
  j["flavour"] = Flavour(r.source);
  j["unique_stacks"] = r.unique_stacks;
  j["unique_frames"] = r.unique_frames;
  j["annotations"] = r.annotations;
  Json devices = Json::array();
  for (const auto& d : r.devices) {
    Json dj;
    dj["device"] = d.device;
    dj.update(TotalsToJson(d.totals, true));
    dj["first_time_us"] = d.first_time_us == kNoTime ? Json(nullptr) : Json(d.first_time_us);
    dj["last_time_us"] = d.last_time_us == kNoTime ? Json(nullptr) : Json(d.last_time_us);
    dj["frees_without_alloc"] = d.frees_without_alloc;
    dj["ghost_blocks"] = d.ghost_blocks;
    dj["ghost_bytes"] = d.ghost_bytes;
    dj["pools"] = TableToJson(PoolsTable(d));
    dj["streams"] = TableToJson(StreamsTable(d));
    devices.push_back(dj);
  }
  j["devices"] = devices;
  j["allocator_settings"] = SettingsToJson(r.settings);
  j["warnings"] = r.warnings;
  return j;
}

void RenderSummaryText(const analysis::SummaryReport& r, std::ostream& out) {
  const auto& t = r.totals;
  out << r.source.path << "\n";
  out << absl::StrFormat("  format      %s, %s\n", ContainerName(r.source), Flavour(r.source));
  out << absl::StrFormat("  segments    %s    blocks %s    trace entries %s\n",
                         FormatCount(t.segments), FormatCount(t.blocks),
                         FormatCount(t.trace_entries));
  out << absl::StrFormat("  stacks      %s unique    frames %s unique    annotations %s\n",
                         FormatCount(r.unique_stacks), FormatCount(r.unique_frames),
                         FormatCount(r.annotations));
  out << absl::StrFormat("  reserved    %12s\n", FormatBytes(t.reserved_bytes));
  out << absl::StrFormat("  allocated   %12s\n", FormatBytes(t.allocated_bytes));
  out << absl::StrFormat("  active      %12s\n", FormatBytes(t.active_bytes));
  out << absl::StrFormat("  requested   %12s\n", FormatBytes(t.requested_bytes));
  out << absl::StrFormat("  cached free %12s\n", FormatBytes(t.inactive_bytes));
  if (t.trace_entries > 0) {
    out << "  actions    ";
    for (int i = 0; i < kNumActions; ++i) {
      if (t.actions[i] > 0) {
        out << " " << ActionName(static_cast<Action>(i)) << "=" << FormatCount(t.actions[i]);
      }
    }
    out << "\n";
  }
  for (const auto& d : r.devices) {
    out << "\ndevice " << d.device << "\n";
    RenderTableText(PoolsTable(d), out, {"  ", true});
    RenderTableText(StreamsTable(d), out, {"  ", true});
    if (d.totals.trace_entries > 0) {
      out << absl::StrFormat("  trace       %s events over %s\n", FormatCount(d.totals.trace_entries),
                             TimeSpan(d.first_time_us, d.last_time_us));
    }
  }
  if (r.settings.present) {
    out << "\nallocator settings\n";
    out << "  PYTORCH_CUDA_ALLOC_CONF  \"" << r.settings.conf << "\"\n";
    out << "  max_split_size           "
        << (r.settings.max_split_size < 0 ? std::string("unlimited")
                                          : FormatBytes(r.settings.max_split_size))
        << "\n";
    out << "  expandable_segments      " << (r.settings.expandable_segments ? "true" : "false")
        << "\n";
    out << absl::StrFormat("  gc threshold             %g\n",
                           r.settings.garbage_collection_threshold);
  }
  if (!r.warnings.empty()) {
    out << "\nwarnings\n";
    for (const auto& w : r.warnings) out << "  - " << w << "\n";
  }
}

}  // namespace memsnap::report
