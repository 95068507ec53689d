#include "memsnap/report/summary_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/device_sections.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/report/table_render.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/table.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

// Why a trace of one forward pass has no steps (analysis::HoldsOneForwardPass).
constexpr std::string_view kOneForwardPassNote =
    "no repeated training step: the trace holds one forward pass";

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

// "21.8 GiB at +1.020 s (event:1090)"; the time relative to the device's first event.
std::string PeakText(int64_t bytes, analysis::TimelinePoint event, int64_t time_us,
                     int64_t first_us) {
  std::string s = FormatBytes(bytes);
  if (event.is_start()) return s + " before the first event";
  if (time_us != kNoTime && first_us != kNoTime) {
    absl::StrAppend(&s, " at ", FormatRelativeTime(time_us - first_us));
  }
  return absl::StrCat(s, " (event:", event.index(), ")");
}

Json RelJson(int64_t time_us, int64_t first_us) {
  if (time_us == kNoTime || first_us == kNoTime) return nullptr;
  return time_us - first_us;
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

// Past kFullDeviceSections devices, one line each: what each device's section opens with.
Table DevicesTable(const analysis::SummaryReport& r) {
  Table t;
  AddDeviceColumn(t);
  t.AddColumn("segments", "segments", Unit::kCount).min_width = 9;
  t.AddColumn("reserved_bytes", "reserved", Unit::kBytes).min_width = 12;
  t.AddColumn("allocated_bytes", "allocated", Unit::kBytes).min_width = 12;
  t.AddColumn("trace_entries", "events", Unit::kCount).min_width = 9;
  t.AddColumn("peak_live_bytes", "peak live", Unit::kBytes).min_width = 12;
  t.AddColumn("peak_reserved_bytes", "peak reserved", Unit::kBytes).min_width = 14;
  t.AddColumn("ooms", "OOMs", Unit::kCount).min_width = 5;
  t.rows.reserve(r.devices.size());
  for (const analysis::DeviceSummary& d : r.devices) {
    t.AddRow({int64_t{d.device}, d.totals.segments, d.totals.reserved_bytes,
              d.totals.allocated_bytes, d.totals.trace_entries,
              d.peaks ? Cell(d.peaks->live_bytes) : Cell(std::string("-")),
              d.peaks ? Cell(d.peaks->reserved_bytes) : Cell(std::string("-")),
              static_cast<int64_t>(d.ooms.size())});
  }
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
    dj["first_time_us"] = internal::TimeToJson(d.first_time_us);
    dj["last_time_us"] = internal::TimeToJson(d.last_time_us);
    dj["frees_without_alloc"] = d.frees_without_alloc;
    dj["ghost_blocks"] = d.ghost_blocks;
    dj["ghost_bytes"] = d.ghost_bytes;
    if (d.unexplained.any()) {  // docs/figures.md, "When the trace does not explain the state"
      const analysis::DeviceSummary::Unexplained& u = d.unexplained;
      dj["unexplained"] = {{"unplaced_frees", u.unplaced_frees},
                           {"unplaced_free_bytes", u.unplaced_free_bytes},
                           {"first_unplaced_free_event", u.first_unplaced_free},
                           {"beyond_end_blocks", u.beyond_end_blocks},
                           {"beyond_end_bytes", u.beyond_end_bytes},
                           {"unreconciled_bytes", u.unreconciled_bytes},
                           {"live_over_reserved_bytes", u.live_over_reserved}};
    }
    dj["pools"] = TableToJson(PoolsTable(d));
    dj["streams"] = TableToJson(StreamsTable(d));
    if (d.peaks) {
      const analysis::TracePeaks& p = *d.peaks;
      dj["peaks"] = {{"live_bytes", p.live_bytes},
                     {"live_event", p.live_event.index()},
                     {"live_time_us", internal::TimeToJson(p.live_time_us)},
                     {"live_time_rel_us", RelJson(p.live_time_us, d.first_time_us)},
                     {"reserved_bytes", p.reserved_bytes},
                     {"reserved_event", p.reserved_event.index()},
                     {"reserved_time_us", internal::TimeToJson(p.reserved_time_us)},
                     {"reserved_time_rel_us", RelJson(p.reserved_time_us, d.first_time_us)}};
    }
    if (d.workload) dj["workload"] = internal::WorkloadToJson(*d.workload);
    if (!d.phase_peaks.empty()) {
      Json phases = Json::array();
      for (const analysis::PhasePeak& p : d.phase_peaks) {
        phases.push_back({{"phase", std::string(analysis::StepPhaseName(p.phase))},
                          {"live_bytes", p.live_bytes},
                          {"event_index", p.event.index()},
                          {"time_us", internal::TimeToJson(p.time_us)}});
      }
      dj["phase_peaks"] = phases;
    }
    if (!d.step_peaks.empty()) {
      Json steps = Json::array();
      for (const analysis::StepPeak& p : d.step_peaks) {
        steps.push_back({{"begin_event", p.range.first_event()},
                         {"end_event", p.range.end_event()},
                         {"live_bytes", p.live_bytes},
                         {"event_index", p.event.index()},
                         {"time_us", internal::TimeToJson(p.time_us)}});
      }
      dj["steps"] = {{"method", d.steps_method}, {"peaks", steps}};
    } else if (d.one_forward_pass) {
      dj["steps"] = {{"method", "none"}, {"note", kOneForwardPassNote}, {"peaks", Json::array()}};
    }
    Json ooms = Json::array();
    for (const analysis::SummaryOom& o : d.ooms) {
      ooms.push_back({{"event", o.event},
                      {"time_us", internal::TimeToJson(o.time_us)},
                      {"time_rel_us", RelJson(o.time_us, d.first_time_us)},
                      {"requested_bytes", o.requested},
                      {"device_free_bytes", o.device_free},
                      {"stream", o.stream},
                      {"site", o.site},
                      {"live_bytes", o.live_bytes ? Json(*o.live_bytes) : Json(nullptr)},
                      {"capacity_bytes", o.live_bytes ? Json(o.capacity) : Json(nullptr)},
                      {"demand", o.live_bytes ? Json(o.demand()) : Json(nullptr)}});
    }
    dj["ooms"] = ooms;
    devices.push_back(dj);
  }
  j["devices"] = devices;
  j["allocator_settings"] = SettingsToJson(r.settings);
  // The reader's warnings, as stderr shows them, then the summary's findings: every clamp,
  // reconciliation and guess is in the JSON too, not only on stderr (issue 52).
  std::vector<std::string> warnings = r.read_warnings;
  for (std::string& w : SummaryWarnings(r)) warnings.push_back(std::move(w));
  j["warnings"] = std::move(warnings);
  return j;
}

std::string TraceStartWarning(int32_t device, analysis::TraceStart why, int64_t blocks,
                              int64_t bytes) {
  const std::string what =
      absl::StrCat(FormatCount(blocks), blocks == 1 ? " block" : " blocks",
                   bytes >= 0 ? absl::StrCat(", ", FormatBytes(bytes), ",") : std::string(),
                   blocks == 1 ? " is freed in it but was" : " are freed in it but were",
                   " allocated before it");
  switch (why) {
    case analysis::TraceStart::kMidRun:
      return absl::StrCat("device ", device, ": the trace begins mid-run (", what, ")");
    case analysis::TraceStart::kRingOverflowed:
      return absl::StrCat("device ", device,
                          ": the trace's ring buffer overflowed and dropped its oldest events (",
                          what, ")");
    case analysis::TraceStart::kRingLikelyOverflowed:
      return absl::StrCat("device ", device,
                          ": the trace's ring buffer likely overflowed and dropped its oldest "
                          "events (the trace is as long as a full buffer, and ",
                          what, ")");
  }
  return {};
}

std::vector<std::string> SummaryWarnings(const analysis::SummaryReport& r) {
  std::vector<std::string> out;
  bool overflow_said = false;  // a device's sentence already says the ring buffer overflowed
  for (const analysis::DeviceSummary& dev : r.devices) {
    if (dev.frees_without_alloc > 0) {
      out.push_back(TraceStartWarning(dev.device, dev.trace_start, dev.frees_without_alloc, -1));
      overflow_said |= dev.trace_start == analysis::TraceStart::kRingOverflowed;
    }
    const analysis::DeviceSummary::Unexplained& u = dev.unexplained;
    if (u.unplaced_frees > 0) {
      out.push_back(absl::StrCat(
          "device ", dev.device, ": ", FormatCount(u.unplaced_frees),
          u.unplaced_frees == 1 ? " free (" : " frees (", FormatBytes(u.unplaced_free_bytes),
          ") of blocks the trace never allocates, from event:", u.first_unplaced_free,
          ", lie in no segment the file records: they cannot have been live from the start, so "
          "every figure leaves them out"));
    }
    if (u.beyond_end_bytes > 0) {
      out.push_back(absl::StrCat(
          "device ", dev.device, ": the trace leaves ", FormatBytes(u.beyond_end_bytes),
          " live at its end that the final state does not hold",
          u.beyond_end_blocks > 0
              ? absl::StrCat(" (", FormatCount(u.beyond_end_blocks),
                             u.beyond_end_blocks == 1 ? " allocation never freed)"
                                                      : " allocations never freed)")
              : std::string(),
          ": their frees were not recorded, so they count as live to the end"));
    }
    if (u.live_over_reserved > 0) {
      out.push_back(absl::StrCat(
          "device ", dev.device, ": live memory exceeds reserved memory by up to ",
          FormatBytes(u.live_over_reserved),
          ", which no allocator does: the trace contradicts itself (edited or pieced together), so "
          "its figures are the trace's reading, not the run's"));
    }
    if (u.unreconciled_bytes > 0) {
      out.push_back(absl::StrCat("device ", dev.device, ": ", FormatBytes(u.unreconciled_bytes),
                                 " of the final state is not explained by the trace: live from "
                                 "the start, of unknown kind"));
    }
    if (dev.ghost_blocks > 0 && dev.totals.trace_entries > 0) {
      out.push_back(absl::StrCat(
          "device ", dev.device, ": ", FormatCount(dev.ghost_blocks),
          dev.ghost_blocks == 1 ? " live block (" : " live blocks (", FormatBytes(dev.ghost_bytes),
          ") ", dev.ghost_blocks == 1 ? "was" : "were", " allocated before the trace began"));
    }
  }
  if (r.ring_overflowed && !overflow_said) {
    out.push_back(
        "allocator_settings.trace_alloc_overflowed is set: the trace ring buffer overflowed and "
        "lost its oldest events");
  }
  return out;
}

void RenderSummaryText(const analysis::SummaryReport& r, std::ostream& out, bool warnings) {
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
  if (CompactDevices(r.devices.size())) {
    out << "\n" << CompactDevicesNote(r.devices.size(), "summary") << "\n";
    RenderTableText(DevicesTable(r), out, {"  ", true});
  }
  for (const auto& d : r.devices) {
    if (CompactDevices(r.devices.size())) break;
    out << "\ndevice " << d.device << "\n";
    if (d.workload) out << "  workload    " << WorkloadText(*d.workload) << "\n";
    RenderTableText(PoolsTable(d), out, {"  ", true});
    RenderTableText(StreamsTable(d), out, {"  ", true});
    if (d.totals.trace_entries > 0) {
      out << absl::StrFormat("  trace       %s %s over %s\n", FormatCount(d.totals.trace_entries),
                             d.totals.trace_entries == 1 ? "event" : "events",
                             TimeSpan(d.first_time_us, d.last_time_us));
    }
    if (d.peaks) {
      const analysis::TracePeaks& p = *d.peaks;
      out << "  peak live      "
          << PeakText(p.live_bytes, p.live_event, p.live_time_us, d.first_time_us) << "\n";
      out << "  peak reserved  "
          << PeakText(p.reserved_bytes, p.reserved_event, p.reserved_time_us, d.first_time_us)
          << "\n";
    }
    for (const analysis::PhasePeak& p : d.phase_peaks) {
      out << absl::StrFormat("  peak %-9s ", analysis::StepPhaseName(p.phase))
          << PeakText(p.live_bytes, p.event, p.time_us, d.first_time_us) << "\n";
    }
    if (d.one_forward_pass) out << "  steps          none: " << kOneForwardPassNote << "\n";
    if (!d.step_peaks.empty()) {
      // Every step's peak, on one line (the first 8, then the highest of the rest).
      constexpr size_t kShown = 8;
      std::string peaks;
      for (size_t k = 0; k < d.step_peaks.size() && k < kShown; ++k) {
        absl::StrAppend(&peaks, k == 0 ? "" : ", ", FormatBytes(d.step_peaks[k].live_bytes));
      }
      if (d.step_peaks.size() > kShown) {
        int64_t rest = 0;
        for (size_t k = kShown; k < d.step_peaks.size(); ++k) {
          rest = std::max(rest, d.step_peaks[k].live_bytes);
        }
        absl::StrAppend(&peaks, ", … (", d.step_peaks.size() - kShown, " more, up to ",
                        FormatBytes(rest), ")");
      }
      out << "  steps          " << d.step_peaks.size() << " (" << d.steps_method
          << "), peak of each: " << peaks << "\n";
    }
    for (const analysis::SummaryOom& o : d.ooms) {
      std::string when = absl::StrCat("event:", o.event);
      if (o.time_us != kNoTime && d.first_time_us != kNoTime) {
        absl::StrAppend(&when, " (", FormatRelativeTime(o.time_us - d.first_time_us), ")");
      }
      out << "  oom            " << when << ": " << FormatBytes(o.requested) << " on stream "
          << o.stream << " with " << FormatBytes(o.device_free) << " free, from " << o.site;
      if (!o.live_bytes) {
        out << "; `memsnap oom` explains it\n";
        continue;
      }
      // Whether live memory alone left no room: the one question a reader of `summary` needs
      // answered before running `oom` (docs/oom.md, "The verdicts").
      const int64_t need = *o.live_bytes + o.requested;
      out << "\n                 "
          << (o.requested > o.capacity
                  ? absl::StrCat("demand: this ", FormatBytes(o.requested),
                                 " request alone is more than the ", FormatBytes(o.capacity),
                                 " the process could use: that operation has to ask for less (a "
                                 "smaller batch or chunk), whatever else is freed")
              : o.demand()
                  ? absl::StrCat("demand: ", FormatBytes(*o.live_bytes), " live + this ",
                                 FormatBytes(o.requested), " = ", FormatBytes(need),
                                 ", more than the ", FormatBytes(o.capacity),
                                 " the process could use; no allocator setting fits it, live "
                                 "memory has to shrink (`memsnap oom` says what to cut)")
                  : absl::StrCat("placement: ", FormatBytes(*o.live_bytes), " live + this ",
                                 FormatBytes(o.requested), " fit in the ", FormatBytes(o.capacity),
                                 " the process could use, but no free block or new segment "
                                 "held it (fragmentation, or cache); `memsnap oom` finds the "
                                 "PYTORCH_CUDA_ALLOC_CONF that fits"))
          << "\n";
    }
  }
  if (r.settings.present) {
    out << "\nallocator settings\n";
    for (const analysis::SettingText& t : analysis::DescribeSettings(r.settings)) {
      // The settings that place blocks always; the others when set.
      const bool main = t.name == "PYTORCH_CUDA_ALLOC_CONF" || t.name == "max_split_size" ||
                        t.name == "expandable_segments" || t.name == "garbage_collection_threshold";
      if (main || !t.is_default) out << absl::StrFormat("  %-29s %s\n", t.name, t.value);
    }
  }
  if (const std::vector<std::string> words = SummaryWarnings(r); warnings && !words.empty()) {
    out << "\nwarnings\n";
    for (const auto& w : words) out << "  - " << w << "\n";
  }
}

void RenderCategoriesAtText(const std::vector<analysis::DeviceCategories>& devices,
                            const analysis::CategoryNames& names, std::ostream& out) {
  for (const analysis::DeviceCategories& d : devices) {
    if (d.live_bytes == 0) continue;
    out << "\ndevice " << d.device << " at the "
        << (!d.has_trace         ? std::string("dump (no allocation traced)")
            : d.event.is_start() ? std::string("start")
                                 : absl::StrCat("peak (after event ", d.event.index(), ")"))
        << ": " << FormatBytes(d.live_bytes) << " live, by category (docs/attribution.md)\n";
    std::vector<int> order;
    for (int c = 0; c < names.size(); ++c) {
      if (d.bytes[c] != 0) order.push_back(c);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return d.bytes[a] > d.bytes[b]; });
    // Columns as they always were: a long user category's name pushes only its own line.
    Table t;
    t.AddColumn("category", "category", Unit::kText).min_width = 16;
    t.AddColumn("bytes", "bytes", Unit::kBytes).min_width = 12;
    t.AddColumn("share", "share", Unit::kRatio).min_width = 7;
    for (int c : order) {
      t.AddRow({std::string(names.Name(static_cast<analysis::Category>(c))), d.bytes[c],
                static_cast<double>(d.bytes[c]) / static_cast<double>(d.live_bytes)});
    }
    RenderTableText(t, out, {.indent = "  ", .header = false, .fixed_widths = true});
  }
}

Json CategoriesAtJson(const std::vector<analysis::DeviceCategories>& devices,
                      const analysis::CategoryNames& names) {
  Json arr = Json::array();
  for (const analysis::DeviceCategories& d : devices) {
    arr.push_back({{"device", d.device},
                   {"event_index", d.event.is_start() ? Json(nullptr) : Json(d.event.index())},
                   {"live_bytes", d.live_bytes},
                   {"categories", CategoriesJson(d.bytes, names)}});
  }
  return arr;
}

nlohmann::ordered_json SummaryResultToJson(const query::SummaryResult& result) {
  nlohmann::ordered_json j = SummaryToJson(result.summary);
  j["categories_at_peak"] = CategoriesAtJson(result.categories_at_peak, result.category_names);
  return j;
}

void RenderSummaryResultText(const query::SummaryResult& result, std::ostream& out) {
  RenderSummaryText(result.summary, out);
  // Past kFullDeviceSections devices the categories are in each device's section (--device N).
  if (CompactDevices(result.summary.devices.size())) return;
  RenderCategoriesAtText(result.categories_at_peak, result.category_names, out);
}

nlohmann::ordered_json SummaryRanksToJson(const query::SummaryRanksResult& result) {
  if (result.files.size() == 1) {
    nlohmann::ordered_json j = SummaryToJson(result.files[0]);
    j["skipped"] = LeftOutToJson(result.skipped);
    return j;
  }
  nlohmann::ordered_json j;
  j["files"] = nlohmann::ordered_json::array();
  for (const auto& r : result.files) j["files"].push_back(SummaryToJson(r));
  j["ranks"] = RankTableToJson(result.ranks);
  j["skipped"] = LeftOutToJson(result.skipped);
  return j;
}

void RenderSummaryRanksText(const query::SummaryRanksResult& result, bool each, bool warnings,
                            std::ostream& out) {
  if (result.files.size() == 1) {
    RenderSummaryText(result.files[0], out, warnings);
    return;
  }
  if (each) {
    for (const auto& r : result.files) {
      RenderSummaryText(r, out, warnings);
      out << "\n";
    }
  }
  RenderRankTableText(result.ranks, out);
}

}  // namespace memsnap::report
