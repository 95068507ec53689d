#include "memsnap/report/replay_render.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/analysis/sites/site.h"
#include "memsnap/report/table_render.h"
#include "memsnap/util/format.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;
using analysis::ConfigResult;
using analysis::SegmentEventRecord;
using analysis::VerifyResult;

std::string EventText(const SegmentEventRecord& r) {
  const sim::SegmentEvent& e = r.event;
  std::string where = r.trace_index == analysis::kPreexistingEvent
                          ? std::string("cold start")
                          : absl::StrCat("trace #", r.trace_index);
  return absl::StrFormat("%-13s %s  %10s  (+%s in %s)  stream %d  [%s]",
                         sim::SegmentActionName(e.action), FormatAddress(e.addr),
                         FormatBytes(e.size), FormatBytes(static_cast<int64_t>(e.addr - e.base)),
                         FormatAddress(e.base), e.stream, where);
}

Json EventJson(const SegmentEventRecord& r) {
  Json j;
  j["action"] = sim::SegmentActionName(r.event.action);
  j["addr"] = r.event.addr;
  j["size"] = r.event.size;
  j["offset"] = r.event.addr - r.event.base;
  j["stream"] = r.event.stream;
  if (r.trace_index != analysis::kPreexistingEvent) j["trace_index"] = r.trace_index;
  return j;
}

double Rate(const VerifyResult& v) {
  int64_t denom = std::max(v.segment_events, v.simulated_events);
  return denom == 0 ? 1.0 : static_cast<double>(v.matched) / static_cast<double>(denom);
}

// Where the replay's device memory comes from, as the text and JSON name it.
std::string_view MemorySourceName(analysis::ReplayMemorySource source) {
  switch (source) {
    case analysis::ReplayMemorySource::kUnlimited:
      return "unlimited";
    case analysis::ReplayMemorySource::kFlag:
      return "--device-memory";
    case analysis::ReplayMemorySource::kOomEntry:
      return "oom entry (device_free + reserved)";
  }
  return "unlimited";
}

}  // namespace

std::vector<std::string> ReplayNotes(const analysis::ReplayReport& rep) {
  std::vector<std::string> notes;
  if (rep.warm_start_refused) {
    notes.push_back(
        "the recorded start needs cudaMalloc segments only (expandable segments are not rebuilt): "
        "starting cold");
  }
  if (rep.preexisting_blocks > 0) {
    notes.push_back(absl::StrCat(
        rep.preexisting_blocks, " blocks (", FormatBytes(rep.preexisting_bytes),
        ") were allocated before the trace began; ",
        rep.warm_start
            ? absl::StrCat("replay starts from the ", rep.warm_segments, " segments alive then")
            : std::string("they are allocated first, in address order")));
  }
  if (rep.ring_overflowed) {
    notes.push_back("the trace ring buffer overflowed: the oldest events are missing");
  }
  if (rep.private_pool_segments > 0) {
    notes.push_back(absl::StrCat(
        rep.private_pool_segments,
        " segments belong to private pools (CUDA graphs, MemPool); the trace does "
        "not say which allocations went there, so all are replayed into the default pools"));
  }
  for (const ConfigResult& r : rep.results) {
    if (r.gc_threshold_inert) {
      notes.push_back(absl::StrCat("configuration \"", r.config.label,
                                   "\": garbage_collection_threshold acts only under a memory "
                                   "fraction (per_process_memory_fraction); it does nothing here"));
    }
    if (r.backend_not_simulated) {
      notes.push_back(absl::StrCat(
          "configuration \"", r.config.label,
          "\" names backend:cudaMallocAsync; the simulator models the native allocator only"));
    }
  }
  return notes;
}

Json ReplayToJson(const analysis::ReplayReport& rep, const Snapshot& /*snap*/) {
  Json j;
  j["file"] = rep.file;
  j["device"] = rep.device;
  j["events"] = rep.events;
  if (rep.device_memory) {
    j["device_memory"] = *rep.device_memory;
  } else {
    j["device_memory"] = nullptr;
  }
  j["device_memory_source"] = std::string(MemorySourceName(rep.device_memory_source));
  j["preexisting_blocks"] = rep.preexisting_blocks;
  j["preexisting_bytes"] = rep.preexisting_bytes;
  j["inferred_empty_cache"] = rep.inferred_empty_cache;
  j["start"] = rep.warm_start ? "warm" : "cold";
  j["notes"] = ReplayNotes(rep);
  j["recorded"] = {{"peak_reserved", rep.recorded.peak_reserved},
                   {"final_reserved", rep.recorded.final_reserved},
                   {"cuda_malloc", rep.recorded.segment_allocs},
                   {"cuda_free", rep.recorded.segment_frees},
                   {"segment_map", rep.recorded.maps},
                   {"segment_unmap", rep.recorded.unmaps},
                   {"ooms", rep.recorded.ooms}};
  Json configs = Json::array();
  for (const ConfigResult& r : rep.results) {
    Json c;
    c["label"] = r.config.label;
    c["conf"] = sim::FormatAllocatorConf(r.config.config);
    c["peak_reserved"] = r.peak_reserved;
    c["peak_allocated"] = r.peak_allocated;
    c["peak_active"] = r.peak_active;
    c["peak_requested"] = r.peak_requested;
    c["final_reserved"] = r.final_reserved;
    c["final_allocated"] = r.final_allocated;
    c["cuda_malloc"] = r.cuda_mallocs;
    c["cuda_free"] = r.cuda_frees;
    c["segment_map"] = r.maps;
    c["segment_unmap"] = r.unmaps;
    c["alloc_retries"] = r.alloc_retries;
    c["fragmentation_at_peak"] = r.FragmentationAtPeak();
    c["allocated_at_peak"] = r.allocated_at_peak;
    c["inactive_split_at_peak"] = r.inactive_split_at_peak;
    c["peak_inactive_split"] = r.peak_inactive_split_bytes;
    Json ooms = Json::array();
    for (const analysis::ReplayOom& o : r.ooms) {
      Json oj;
      if (o.event == analysis::kPreexistingEvent) {
        oj["event"] = nullptr;
      } else {
        oj["event"] = o.event;
      }
      oj["requested"] = o.requested;
      oj["rounded"] = o.rounded;
      oj["stream"] = o.stream;
      oj["device_free"] = o.device_free;
      oj["site"] = o.site;
      ooms.push_back(oj);
    }
    c["ooms"] = ooms;
    configs.push_back(c);
  }
  j["configs"] = configs;
  if (rep.verify) {
    const VerifyResult& v = *rep.verify;
    Json vj;
    vj["segment_events"] = v.segment_events;
    vj["matched"] = v.matched;
    vj["simulated_events"] = v.simulated_events;
    vj["match_rate"] = Rate(v);
    vj["allocs"] = v.allocs;
    vj["allocs_matched"] = v.allocs_matched;
    if (v.first_alloc_mismatch) {
      vj["first_alloc_mismatch"] = {{"trace_index", *v.first_alloc_mismatch},
                                    {"real_addr", v.mismatch_real_addr},
                                    {"sim_addr", v.mismatch_sim_addr}};
    }
    vj["real_final_reserved"] = v.real_final_reserved;
    vj["sim_final_reserved"] = v.sim_final_reserved;
    vj["exact"] = v.exact();
    vj["start"] = v.warm ? "warm" : "cold";
    if (v.first_real) {
      Json d;
      d["index"] = *v.first_real;
      if (*v.first_real < v.real.size()) d["real"] = EventJson(v.real[*v.first_real]);
      if (*v.first_sim < v.simulated.size()) d["simulated"] = EventJson(v.simulated[*v.first_sim]);
      vj["first_divergence"] = d;
    } else {
      vj["first_divergence"] = nullptr;
    }
    j["verify"] = vj;
  }
  return j;
}

// Each setting against the recorded settings replayed, in one line: what it changes at the peak
// and, on a given capacity, whether it fits.
void RenderVerdicts(const analysis::ReplayReport& rep, std::ostream& out) {
  if (rep.results.size() < 2 || rep.results[0].config.label != "recorded") return;
  const ConfigResult& base = rep.results[0];
  out << "\n";
  for (size_t i = 1; i < rep.results.size(); ++i) {
    const ConfigResult& r = rep.results[i];
    const int64_t d = r.peak_reserved - base.peak_reserved;
    std::string text =
        d == 0 ? absl::StrCat("the same peak reserved as the recorded settings (",
                              FormatBytes(r.peak_reserved), ")")
               : absl::StrCat(
                     FormatBytes(d < 0 ? -d : d), d < 0 ? " less" : " more",
                     " reserved at the peak than the recorded settings (",
                     FormatBytes(r.peak_reserved), " vs ", FormatBytes(base.peak_reserved), ", ",
                     FormatPercent(static_cast<double>(d < 0 ? -d : d) /
                                   static_cast<double>(std::max<int64_t>(1, base.peak_reserved))),
                     ")");
    if (rep.device_memory) {
      const std::string cap = FormatBytes(*rep.device_memory);
      if (r.ooms.empty()) {
        absl::StrAppend(&text, base.ooms.empty() ? "; fits " : "; fits ", cap,
                        base.ooms.empty() ? "" : " where the recorded settings fail");
      } else {
        absl::StrAppend(&text, "; fails on ", cap, " (", r.ooms.size(),
                        r.ooms.size() == 1 ? " OOM)" : " OOMs)");
      }
    }
    out << r.config.label << ": " << text << "\n";
  }
}

void RenderReplayText(const analysis::ReplayReport& rep, const Snapshot& /*snap*/,
                      std::ostream& out) {
  out << "replay " << rep.file << "  device " << rep.device << "  " << FormatCount(rep.events)
      << " trace events\n";
  out << "device memory: "
      << (rep.device_memory ? FormatBytes(*rep.device_memory) : std::string("unlimited"));
  if (rep.device_memory) out << " (" << MemorySourceName(rep.device_memory_source) << ")";
  out << "\n";
  if (rep.inferred_empty_cache > 0) {
    out << "inferred empty_cache() calls: " << rep.inferred_empty_cache << "\n";
  }
  for (const std::string& n : ReplayNotes(rep)) out << "note: " << n << "\n";
  out << "\n";
  // Table: metric column, the trace's own figures, then one simulated column per configuration,
  // each labelled by what it is: the recorded settings replayed are a simulation, not the
  // recorded run.
  const analysis::RecordedFigures& t = rep.recorded;
  Table table;
  table.AddColumn("metric", "", Unit::kText);
  table.AddColumn("trace", "trace (as recorded)", Unit::kText).align = Align::kRight;
  const std::string start = rep.warm_start ? "warm" : "cold";
  for (const ConfigResult& r : rep.results) {
    table
        .AddColumn(r.config.label,
                   r.config.label == "recorded" ? absl::StrCat("sim: recorded settings, ", start)
                                                : absl::StrCat("sim: ", r.config.label),
                   Unit::kText)
        .align = Align::kRight;
  }
  // One row per figure; its cells are written as they read ("12 / 3"), so the columns are text.
  auto row = [&](std::string name, std::string traced, auto fn) {
    std::vector<Cell> cells = {std::move(name), std::move(traced)};
    for (const ConfigResult& r : rep.results) cells.push_back(fn(r));
    table.AddRow(std::move(cells));
  };
  const std::string recorded_conf =
      rep.results.empty() ? std::string() : sim::FormatAllocatorConf(rep.results[0].config.config);
  row("conf",
      rep.results.empty() || rep.results[0].config.label != "recorded" ? "-" : recorded_conf,
      [](const ConfigResult& r) { return sim::FormatAllocatorConf(r.config.config); });
  row("peak reserved", FormatBytes(t.peak_reserved),
      [](const ConfigResult& r) { return FormatBytes(r.peak_reserved); });
  row("peak allocated", "-", [](const ConfigResult& r) { return FormatBytes(r.peak_allocated); });
  row("final reserved", FormatBytes(t.final_reserved),
      [](const ConfigResult& r) { return FormatBytes(r.final_reserved); });
  row("frag at peak", "-",
      [](const ConfigResult& r) { return FormatPercent(r.FragmentationAtPeak()); });
  row("inactive split @peak", "-",
      [](const ConfigResult& r) { return FormatBytes(r.inactive_split_at_peak); });
  row("cudaMalloc / cudaFree",
      absl::StrCat(FormatCount(t.segment_allocs), " / ", FormatCount(t.segment_frees)),
      [](const ConfigResult& r) {
        return absl::StrCat(FormatCount(r.cuda_mallocs), " / ", FormatCount(r.cuda_frees));
      });
  row("map / unmap", absl::StrCat(FormatCount(t.maps), " / ", FormatCount(t.unmaps)),
      [](const ConfigResult& r) {
        return absl::StrCat(FormatCount(r.maps), " / ", FormatCount(r.unmaps));
      });
  row("alloc retries", "-", [](const ConfigResult& r) { return FormatCount(r.alloc_retries); });
  row("OOMs", FormatCount(t.ooms),
      [](const ConfigResult& r) { return FormatCount(static_cast<int64_t>(r.ooms.size())); });
  TextTableOptions text;
  text.gap = 2;
  RenderTableText(table, out, text);
  RenderVerdicts(rep, out);
  for (const ConfigResult& r : rep.results) {
    if (r.ooms.empty()) continue;
    out << "\nOOMs under "
        << (r.config.label == "recorded" ? "the recorded settings (simulated)" : r.config.label)
        << ":\n";
    size_t shown = 0;
    for (const analysis::ReplayOom& o : r.ooms) {
      if (++shown > 10) {
        out << "  [" << r.ooms.size() - 10 << " others]\n";
        break;
      }
      std::string where = o.event == analysis::kPreexistingEvent ? std::string("cold start")
                                                                 : absl::StrCat("event ", o.event);
      out << "  " << where << ": " << FormatBytes(o.requested) << " (rounded "
          << FormatBytes(o.rounded) << "), device free " << FormatBytes(o.device_free);
      if (!o.site.empty()) out << "  at " << o.site;
      out << "\n";
    }
  }
  if (rep.verify) {
    const VerifyResult& v = *rep.verify;
    out << "\nverify (recorded settings, " << (v.warm ? "warm" : "cold")
        << " start, recorded addresses): " << v.matched << " of " << v.segment_events
        << " recorded segment events reproduced (" << FormatPercent(Rate(v))
        << "; simulator emitted " << v.simulated_events << ")\n";
    out << "  alloc addresses matched: " << v.allocs_matched << " of " << v.allocs;
    if (v.first_alloc_mismatch) {
      out << " (first difference: trace #" << *v.first_alloc_mismatch << " recorded at "
          << FormatAddress(v.mismatch_real_addr) << ", simulated at "
          << FormatAddress(v.mismatch_sim_addr) << ")";
    }
    out << "\n";
    out << "  final reserved: as recorded " << FormatBytes(v.real_final_reserved)
        << ", simulated (recorded settings, " << (v.warm ? "warm" : "cold") << " start) "
        << FormatBytes(v.sim_final_reserved) << "\n";
    if (v.first_real) {
      size_t i = *v.first_real;
      size_t j = *v.first_sim;
      out << "  first divergence at segment event " << i << ":\n";
      auto context = [&](const std::vector<SegmentEventRecord>& list, size_t at, const char* name) {
        out << "    " << name << ":\n";
        size_t from = at >= 2 ? at - 2 : 0;
        for (size_t k = from; k < std::min(list.size(), at + 3); ++k) {
          out << (k == at ? "    > " : "      ") << EventText(list[k]) << "\n";
        }
        if (at >= list.size()) out << "    > (no more events)\n";
      };
      context(v.real, i, "recorded");
      context(v.simulated, j, "simulated");
    } else {
      out << "  exact match\n";
    }
  }
}

std::string ReplayCurveCsv(const analysis::ReplayReport& rep) {
  std::string csv = "config,event,time_us,reserved_bytes,allocated_bytes\n";
  for (const ConfigResult& r : rep.results) {
    std::string label = r.config.label;
    if (label.find_first_of(",\"") != std::string::npos) {
      std::string q = "\"";
      for (char c : label) q += c == '"' ? std::string("\"\"") : std::string(1, c);
      label = q + "\"";
    }
    for (const analysis::CurvePoint& p : r.curve) {
      std::string ev = p.event == analysis::kPreexistingEvent ? "" : absl::StrCat(p.event);
      std::string t = p.time_us == kNoTime ? "" : absl::StrCat(p.time_us);
      absl::StrAppend(&csv, label, ",", ev, ",", t, ",", p.reserved, ",", p.allocated, "\n");
    }
  }
  return csv;
}

}  // namespace memsnap::report
