// memsnap timeline FILE: live and reserved bytes over time, per device.
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
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
  int width = 0;
  bool live_only = false;
};

// --from/--to: the window of one device, both ends checked against its trace; a window that
// ends before it starts is an error, not one event.
absl::StatusOr<report::EventWindow> Window(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                                           const std::string& from, const std::string& to) {
  report::EventWindow w{analysis::TimelinePoint::Start(),
                        analysis::TimelinePoint::End(dt.num_events)};
  if (!from.empty()) {
    ASSIGN_OR_RETURN(analysis::Moment m, analysis::ParseMoment(from, "--from"));
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, m, "--from", from));
    const bool time = m.kind != analysis::Moment::Kind::kEvent &&
                      m.kind != analysis::Moment::Kind::kPeak &&
                      m.kind != analysis::Moment::Kind::kEnd && dt.has_time;
    if (time) {
      // The first event at or after the time.
      m.value += m.kind == analysis::Moment::Kind::kBeforeEnd ? 1 : -1;
      w.from = analysis::TimelinePoint::After(analysis::ResolveMoment(snap, dt, m).next_event());
    } else {
      w.from = analysis::ResolveMoment(snap, dt, m);
    }
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(analysis::Moment m, analysis::ParseMoment(to, "--to"));
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, m, "--to", to));
    w.to = analysis::ResolveMoment(snap, dt, m);
  }
  if (w.to < w.from) {
    // "event:5 (+400 us)", or "+2s (event:12 (+2.000 s))" when the text was not the event.
    auto where = [&](const std::string& text, analysis::TimelinePoint p) {
      std::string d = analysis::DescribeEvent(snap, dt, p);
      return d.starts_with(text) ? d : absl::StrCat(text, " (", d, ")");
    };
    return absl::InvalidArgumentError(absl::StrCat(
        "--from ", where(from, w.from), " is after --to ", where(to.empty() ? "end" : to, w.to),
        " on device ", dt.device, ": the window is empty"));
  }
  return w;
}
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
               "input,unknown)");
  sub.add_option("--device", opts->device, "Only this device");
  sub.add_option("--from", opts->from,
                 "Start of the window: event:N, a time since the trace began (+25ms, 1.5s; -5s "
                 "from its end) or a time_us as recorded");
  sub.add_option("--to", opts->to, "End of the window, inclusive (same forms as --from)");
  sub.add_option("--width", opts->width, "Chart width in columns (default: terminal width)");
  sub.add_flag("--live-only", opts->live_only,
               "Chart only live bytes, scaled to them (when reserved memory dwarfs them)");
  sub.footer(
      "Live bytes are requested bytes of blocks between alloc and free_completed, as PyTorch's\n"
      "Active Memory Timeline plots them; blocks older than the trace count from t0, so the curve\n"
      "ends at the snapshot's live bytes.\n\n"
      "Examples:\n"
      "  memsnap timeline snap.pickle\n"
      "  memsnap timeline --device 0 --from event:1000 --to event:2000 snap.pickle\n"
      "  memsnap timeline --from +2s --to +2.5s snap.pickle    # half a second, 2 s in\n"
      "  memsnap timeline --json snap.pickle | jq '.devices[0].peak_bytes'\n"
      "  memsnap timeline --csv snap.pickle > curve.csv");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::TimelineOptions to;
    if (opts->device >= 0) to.device = opts->device;
    // The rounded curve (--csv, and --json's rounded bytes at a --to before the end) and the
    // categories over time (--csv, --json) are rebuilt from the lifetimes; the chart needs none.
    const bool lifetimes = opts->csv || opts->json;
    to.keep = lifetimes ? analysis::KeepLifetimes::kAll : analysis::KeepLifetimes::kNone;
    ReadAnalysisClock phases;
    ASSIGN_OR_RETURN(SnapshotTimeline loaded, LoadWithTimeline(opts->file, to, ctx, &phases));
    if (ctx.timings) phases.Print(*ctx.err, loaded.timings_note());
    const Snapshot& snap = loaded.snapshot;
    const analysis::Timeline& tl = loaded.timeline;
    const int width = opts->width > 0 ? opts->width : TerminalWidth();
    nlohmann::ordered_json devices = nlohmann::ordered_json::array();
    std::unique_ptr<analysis::GroupContext> context;
    if (lifetimes) {
      ASSIGN_OR_RETURN(context, analysis::GroupContext::Create(snap, analysis::GroupOptions{}));
    }
    if (opts->csv) report::RenderTimelineCsvHeader(*ctx.out, /*categories=*/true);
    bool first = true;
    for (const analysis::DeviceTimeline& dt : tl.devices) {
      ASSIGN_OR_RETURN(report::EventWindow w, Window(snap, dt, opts->from, opts->to));
      analysis::CategoryCurve categories;
      if (context) categories = analysis::BuildCategoryCurve(*context, dt);
      if (opts->json) {
        devices.push_back(report::DeviceTimelineToJson(snap, dt, w, &categories));
      } else if (opts->csv) {
        report::RenderTimelineCsv(snap, dt, w, &categories, *ctx.out);
      } else {
        if (!first) *ctx.out << "\n";
        report::RenderTimelineChart(snap, dt, w, width, *ctx.out, !opts->live_only);
      }
      first = false;
    }
    if (opts->json) {
      nlohmann::ordered_json j;
      j["file"] = opts->file;
      j["devices"] = devices;
      PrintJson(j, ctx);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
