// memsnap timeline FILE: live and reserved bytes over time, per device.
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/timeline.h"
#include "memsnap/report/device_sections.h"
#include "memsnap/report/timeline_render.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

namespace {
struct TimelineCommandOptions {
  std::string file;
  bool json = false, csv = false;
  int device = -1;
  std::string from, to;
  StepFlags steps;
  int width = 0;
  bool live_only = false;
};

}  // namespace

RunFn SetupTimeline(CLI::App& sub) {
  auto opts = std::make_shared<TimelineCommandOptions>();
  sub.add_option("file", opts->file, "Snapshot file")->check(InputPaths())->required();
  sub.add_flag("--json", opts->json,
               "Machine-readable output (start/peak/end per device, categories at each and over "
               "time)");
  sub.add_flag("--csv", opts->csv,
               "One CSV row per event: device,event,time_us,live,rounded,reserved and the live "
               "bytes of each category (parameter,gradient,optimizer_state,activation,temporary,"
               "input,kv_cache,autocast_cache,state,unknown)");
  sub.add_option("--device", opts->device, "Only this device");
  sub.add_option("--from", opts->from,
                 "Start of the window: event:N, a time since the trace began (+25ms, 1.5s; -5s "
                 "from its end), a time_us as recorded, or step:N (where training step N "
                 "begins, from 0)");
  sub.add_option("--to", opts->to,
                 "End of the window, inclusive (same forms as --from; step:M: where step M ends)");
  AddStepFlags(sub, opts->steps);
  sub.add_option("--width", opts->width, "Chart width in columns (default: terminal width)");
  sub.add_flag("--live-only", opts->live_only,
               "Chart only live bytes, scaled to them (when reserved memory dwarfs them)");
  sub.footer(
      "Live bytes are requested bytes of blocks between alloc and free_completed, as PyTorch's\n"
      "Active Memory Timeline plots them; blocks older than the trace count from t0, so the curve\n"
      "ends at the snapshot's live bytes. Past 64 devices the chart of each is one line (events,\n"
      "live at the start, peak and end, reserved peak); --device N charts that device.\n\n"
      "Examples:\n"
      "  memsnap timeline snap.pickle\n"
      "  memsnap timeline --device 0 --from event:1000 --to event:2000 snap.pickle\n"
      "  memsnap timeline --from +2s --to +2.5s snap.pickle    # half a second, 2 s in\n"
      "  memsnap timeline --from step:2 --to step:3 snap.pickle  # training steps 2 and 3\n"
      "  memsnap timeline --json snap.pickle | jq '.devices[0].peak_bytes'\n"
      "  memsnap timeline --csv snap.pickle > curve.csv");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    query::TimelineRequest request;
    request.device = DeviceFlag(opts->device);
    if (!opts->from.empty()) {
      ASSIGN_OR_RETURN(request.from, MomentFlag("--from", opts->from, &opts->steps));
    }
    if (!opts->to.empty()) {
      ASSIGN_OR_RETURN(request.to, MomentFlag("--to", opts->to, &opts->steps));
    }
    // The rounded curve (--csv, and --json's rounded bytes at a --to before the end) and the
    // categories over time (--csv, --json) are rebuilt from the lifetimes; the chart needs none.
    request.categories = opts->csv || opts->json;
    ReadAnalysisClock phases;
    ASSIGN_OR_RETURN(query::Session session,
                     OpenSession(opts->file, query::TimelineNeeds(request), ctx, &phases));
    ASSIGN_OR_RETURN(query::TimelineResult result, query::TimelineQuery(request, session));
    if (ctx.timings) phases.Print(*ctx.err, session.timings_note());
    const Snapshot& snap = session.snapshot();
    const int width = opts->width > 0 ? opts->width : TerminalWidth();
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    if (opts->csv) report::RenderTimelineCsvHeader(*ctx.out, &result.category_names);
    if (!opts->json && !opts->csv && report::CompactDevices(result.devices.size())) {
      std::vector<std::pair<const analysis::DeviceTimeline*, report::EventWindow>> rows;
      rows.reserve(result.devices.size());
      for (const query::TimelineDevice& d : result.devices) rows.emplace_back(d.timeline, d.window);
      report::RenderTimelineDevicesTable(rows, *ctx.out);
      return ExitCode::kOk;
    }
    bool first = true;
    for (const query::TimelineDevice& d : result.devices) {
      if (opts->json) {
        devices.push_back(report::DeviceTimelineToJson(snap, *d.timeline, d.window, &d.categories));
      } else if (opts->csv) {
        report::RenderTimelineCsv(snap, *d.timeline, d.window, &d.categories, *ctx.out);
      } else {
        if (!first) *ctx.out << "\n";
        report::RenderTimelineChart(snap, *d.timeline, d.window, width, *ctx.out, !opts->live_only);
      }
      first = false;
    }
    if (opts->json) {
      nlohmann::ordered_json j;
      j["file"] = result.file;  // the snapshot's name: a label for one in memory
      j["devices"] = devices;
      PrintJson(j, ctx);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
