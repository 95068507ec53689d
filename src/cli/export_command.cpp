// memsnap export --format perfetto|folded|csv FILE [-o OUT]: the snapshot in the formats other
// tools read. A normalized JSON of the whole snapshot is `memsnap convert FILE OUT.json`.
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/export.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/report/perfetto.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"
#include "memsnap/writer/snapshot_writer.h"

namespace memsnap::cli {

namespace {
struct ExportCommandOptions {
  std::string file;
  std::string format;
  std::string output = "-";
  std::string at = "peak";
  int device = -1;
  report::PerfettoOptions perfetto;
  int top_slices = 500;
  GroupFlags group;
  bool no_streams = false;
  bool json = false;
  OutputLimitFlags limit;
};
}  // namespace

RunFn SetupExport(CLI::App& sub) {
  auto opts = std::make_shared<ExportCommandOptions>();
  sub.add_option("--format,-f", opts->format,
                 "perfetto: Chrome trace-event JSON (ui.perfetto.dev, chrome://tracing), slices "
                 "named by site; folded: folded stacks of live memory; csv: one row per block "
                 "lifetime with its site and category; json: the whole snapshot, normalized, in "
                 "PyTorch's own schema (as convert writes it)")
      ->required()
      ->check(CLI::IsMember({"perfetto", "folded", "csv", "json"}));
  sub.add_option("file", opts->file, "Snapshot file")->check(InputPaths())->required();
  sub.add_option("-o,--output", opts->output, "Output file ('-' = stdout)")
      ->check(OutputPath())
      ->capture_default_str();
  sub.add_option("--at", opts->at,
                 "folded: peak | end | event:N | a time since the trace began (+25ms, 1.5s) | a "
                 "time_us as recorded")
      ->capture_default_str();
  sub.add_option("--device", opts->device, "Only this device (default: all)");
  sub.add_option("--top", opts->top_slices,
                 "perfetto: the largest lifetimes drawn as slices (0 = all)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000000));
  sub.add_flag("--no-streams", opts->no_streams,
               "perfetto: no per-stream counters, only per device");
  AddGroupFlags(sub, opts->group, /*grouping=*/false);
  sub.add_flag("--json", opts->json, "Print what was written (format, counts) as JSON on stdout");
  AddOutputLimitFlags(sub, opts->limit);
  sub.footer(
      "-f json writes the whole snapshot as `memsnap convert FILE OUT.json` does; for a pickle "
      "the\n"
      "official viewer opens, or a slice of the trace, use `memsnap convert`.\n\n"
      "Examples:\n"
      "  memsnap export --format perfetto snap.pickle -o trace.json   # open in ui.perfetto.dev\n"
      "  memsnap export --format folded --at peak snap.pickle | flamegraph.pl > peak.svg\n"
      "  memsnap export --format csv snap.pickle -o lifetimes.csv\n"
      "  memsnap export --format json snap.pickle -o snap.json");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    if (opts->json && opts->output == "-") {
      return absl::InvalidArgumentError("--json: needs -o FILE (the export itself goes to stdout)");
    }
    opts->perfetto.per_stream = !opts->no_streams;
    ASSIGN_OR_RETURN(analysis::GroupOptions group, opts->group.Resolve());
    ASSIGN_OR_RETURN(query::MomentArg at, MomentFlag("--at", opts->at));
    ProgressOptions popts = ProgressOptions::Default();
    popts.enabled = !ctx.quiet;
    Context quiet_ctx = ctx;
    quiet_ctx.progress = false;  // this command draws its own progress line
    ProgressBar bar(absl::StrCat("export: reading ", opts->file), 0, popts);
    bar.StartTicker();
    // The formats but json need the timeline; its event pass runs beside the reader.
    analysis::TimelineOptions to;
    to.device = DeviceFlag(opts->device);
    ASSIGN_OR_RETURN(
        query::Session session,
        OpenSession(opts->file, opts->format == "json" ? query::Needs{} : query::NeedsTimeline(to),
                    quiet_ctx));
    const Snapshot& snap = session.snapshot();
    if (opts->format == "json") {
      // The whole snapshot, normalized, in PyTorch's schema: what `convert OUT.json` writes.
      RETURN_IF_ERROR(CheckOutputSize(opts->output, writer::JsonBytes(snap, {}), opts->file,
                                      snap.source.file_bytes, false, opts->limit, ctx.force));
      bar.SetLabel(absl::StrCat("export: writing ", opts->output));
      RETURN_IF_ERROR(WriteOutput(opts->output, ctx, [&](std::ostream& out) {
        return writer::WriteSnapshotJson(snap, {}, out);
      }));
      bar.Finish();
      if (opts->json) {
        PrintJson({{"format", "json"},
                   {"output", opts->output},
                   {"trace_entries", snap.events.size()},
                   {"segments", snap.segments.size()}},
                  ctx);
      }
      return ExitCode::kOk;
    }
    bar.SetLabel("export: analyzing");
    ASSIGN_OR_RETURN(const analysis::Timeline* timeline, session.timeline());
    query::ExportRequest request;
    request.format = opts->format == "perfetto" ? query::ExportFormat::kPerfetto
                     : opts->format == "folded" ? query::ExportFormat::kFolded
                                                : query::ExportFormat::kCsv;
    request.group = group;
    request.at = at;
    request.top_slices = opts->top_slices;
    ASSIGN_OR_RETURN(query::ExportResult lifetimes, query::ExportQuery(request, session));
    bar.SetLabel(absl::StrCat("export: writing ", opts->output));
    ScopedTimer timer("export");
    nlohmann::ordered_json info;
    info["format"] = opts->format;
    info["output"] = opts->output;
    absl::Status st;
    if (request.format == query::ExportFormat::kPerfetto) {
      st = WriteOutput(opts->output, ctx, [&](std::ostream& out) -> absl::Status {
        ASSIGN_OR_RETURN(
            report::PerfettoStats stats,
            report::WritePerfettoTrace(snap, *timeline, lifetimes, opts->perfetto, out));
        info["counter_events"] = stats.counter_events;
        info["slice_events"] = stats.slice_events;
        info["annotation_events"] = stats.annotation_events;
        info["instant_events"] = stats.instant_events;
        info["lanes"] = stats.lanes;
        return absl::OkStatus();
      });
    } else if (request.format == query::ExportFormat::kFolded) {
      const analysis::GroupReport& rep = *lifetimes.folded;
      info["rows"] = rep.rows.size();
      info["total_bytes"] = rep.total_bytes;
      st = WriteOutput(opts->output, ctx, [&](std::ostream& out) {
        report::RenderFolded(rep.rows, out);
        return absl::OkStatus();
      });
    } else {
      info["rows"] = lifetimes.lifetimes.site.size();
      st = WriteOutput(opts->output, ctx, [&](std::ostream& out) {
        report::WriteLifetimesCsv(snap, *timeline, lifetimes.lifetimes, out);
        return absl::OkStatus();
      });
    }
    bar.Finish();
    RETURN_IF_ERROR(st);
    if (opts->json) PrintJson(info, ctx);
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
