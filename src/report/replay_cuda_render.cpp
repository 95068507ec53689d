#include "memsnap/report/replay_cuda_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/report/table_render.h"
#include "memsnap/sim/config.h"
#include "memsnap/util/format.h"
#include "memsnap/util/table.h"

namespace memsnap::report {

namespace {

using Json = nlohmann::ordered_json;

Json OrNull(const std::optional<int64_t>& v) { return v ? Json(*v) : Json(nullptr); }

std::string Micros(int64_t ns) { return absl::StrFormat("%.1f us", static_cast<double>(ns) / 1e3); }

std::string Millis(int64_t ns) { return absl::StrFormat("%.2f ms", static_cast<double>(ns) / 1e6); }

std::string BytesOr(const std::optional<int64_t>& v, const char* none) {
  return v ? FormatBytes(*v) : std::string(none);
}

}  // namespace

std::vector<std::string> CudaReplayNotes(const analysis::CudaReplayReport& rep) {
  std::vector<std::string> notes;
  if (rep.scale != 1.0) {
    notes.push_back(absl::StrCat("every request size was multiplied by ", rep.scale));
  }
  if (rep.warm_start_refused) {
    notes.push_back(
        "--start warm is not available on the GPU (recorded addresses may collide with this "
        "card's): starting cold");
  }
  if (rep.suggested_scale) {
    notes.push_back(absl::StrCat(
        "the trace needs at least ", FormatBytes(rep.peak_live), " live at once but this card has ",
        FormatBytes(rep.gpu_free_before), " free: expect OOMs, or shrink it with --scale ",
        absl::StrFormat("%.2g", *rep.suggested_scale)));
  }
  return notes;
}

Json CudaReplayToJson(const analysis::CudaReplayReport& rep) {
  Json j;
  j["file"] = rep.file;
  j["backend"] = "cuda";
  j["trace_device"] = rep.trace_device;
  j["events"] = rep.events;
  j["gpu"] = {{"ordinal", rep.gpu},
              {"name", rep.gpu_name},
              {"total", rep.gpu_total},
              {"free_before", rep.gpu_free_before}};
  j["scale"] = rep.scale;
  j["notes"] = CudaReplayNotes(rep);
  Json configs = Json::array();
  for (const analysis::CudaConfigResult& r : rep.results) {
    Json c;
    c["label"] = r.config.label;
    c["conf"] = sim::FormatAllocatorConf(r.config.config);
    c["allocator"] = r.allocator;
    c["driver_peak"] = r.driver_peak;
    c["driver_after"] = r.driver_after;
    c["pool_reserved_high"] = OrNull(r.pool_reserved_high);
    c["pool_used_high"] = OrNull(r.pool_used_high);
    c["peak_reserved"] = OrNull(r.peak_reserved);
    c["predicted_peak_reserved"] = OrNull(r.predicted_peak_reserved);
    c["peak_live"] = r.peak_live;
    c["allocs"] = r.allocs;
    c["ooms"] = r.ooms;
    c["predicted_ooms"] = OrNull(r.predicted_ooms);
    c["driver_ooms"] = r.driver_ooms;
    c["alloc_calls_ns"] = r.alloc_calls_ns;
    Json calls = Json::array();
    for (const sim::CallSummary& s : r.calls) {
      calls.push_back({{"name", s.name},
                       {"calls", s.calls},
                       {"total_ns", s.total_ns},
                       {"p50_ns", s.p50_ns},
                       {"p99_ns", s.p99_ns}});
    }
    c["calls"] = std::move(calls);
    c["error"] = r.error.empty() ? Json(nullptr) : Json(r.error);
    configs.push_back(std::move(c));
  }
  j["configs"] = std::move(configs);
  return j;
}

void RenderCudaReplayText(const analysis::CudaReplayReport& rep, std::ostream& out) {
  out << rep.file << ": device " << rep.trace_device << " trace, " << FormatCount(rep.events)
      << " events, replayed on GPU " << rep.gpu << " (" << rep.gpu_name << ", "
      << FormatBytes(rep.gpu_total) << ", " << FormatBytes(rep.gpu_free_before) << " free)\n";
  for (const std::string& n : CudaReplayNotes(rep)) out << "note: " << n << "\n";
  for (const analysis::CudaConfigResult& r : rep.results) {
    out << "\n"
        << r.config.label << "  [" << r.allocator << "; "
        << sim::FormatAllocatorConf(r.config.config) << "]\n";
    if (!r.error.empty()) out << "  ERROR: " << r.error << "\n";
    out << absl::StrFormat("  %-28s %s\n", "driver peak (cuMemGetInfo)",
                           FormatBytes(r.driver_peak));
    if (r.pool_reserved_high) {
      out << absl::StrFormat("  %-28s %s\n", "pool reserved high",
                             FormatBytes(*r.pool_reserved_high));
      out << absl::StrFormat("  %-28s %s\n", "pool used high", BytesOr(r.pool_used_high, "-"));
    }
    if (r.peak_reserved) {
      out << absl::StrFormat("  %-28s %s\n", "allocator peak reserved",
                             FormatBytes(*r.peak_reserved));
    }
    out << absl::StrFormat("  %-28s %s\n", "simulator predicted",
                           BytesOr(r.predicted_peak_reserved, "n/a (not modelled)"));
    out << absl::StrFormat("  %-28s %s\n", "peak live (lower bound)", FormatBytes(r.peak_live));
    out << absl::StrFormat("  %-28s %s\n", "left after replay", FormatBytes(r.driver_after));
    out << absl::StrFormat("  %-28s %s of %s allocations (predicted %s; driver OOM returns %s)\n",
                           "OOMs on this card", FormatCount(r.ooms), FormatCount(r.allocs),
                           r.predicted_ooms ? FormatCount(*r.predicted_ooms) : "n/a",
                           FormatCount(r.driver_ooms));
    out << absl::StrFormat("  %-28s %s\n", "time in allocation calls", Millis(r.alloc_calls_ns));
    if (r.calls.empty()) continue;
    Table calls;
    calls.AddColumn("call", "call", Unit::kText).min_width = 20;
    // The figures are already text ("1,234", "1.20 ms"): right-aligned, as numbers are.
    auto figure_column = [&](const char* key, int width) {
      Column& c = calls.AddColumn(key, key, Unit::kText);
      c.align = Align::kRight;
      c.min_width = width;
    };
    figure_column("count", 10);
    figure_column("total", 12);
    figure_column("p50", 10);
    figure_column("p99", 10);
    for (const sim::CallSummary& c : r.calls) {
      calls.AddRow({std::string(c.name), FormatCount(c.calls), Millis(c.total_ns), Micros(c.p50_ns),
                    Micros(c.p99_ns)});
    }
    RenderTableText(calls, out, {.indent = "    ", .header = true, .fixed_widths = true});
  }
}

}  // namespace memsnap::report
