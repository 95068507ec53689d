// memsnap leaks FILE...: memory an allocation site keeps growing and never gives back, across a
// series of snapshots of one run or across the steps of one trace (docs/leaks.md).
#include <algorithm>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/leaks.h"
#include "memsnap/report/leaks_render.h"
#include "memsnap/report/ranks_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

namespace {
struct LeaksCommandOptions {
  std::vector<std::string> files;
  GroupFlags group;
  std::string sort = "given";
  std::string min_growth = "1MiB";
  std::string device_memory;
  std::string step_annotation;
  int steps = 0;
  int device = -1;
  size_t top = 10;
  bool json = false;
  bool fail_on_leak = false;
  bool exact_lines = false;
};

}  // namespace

RunFn SetupLeaks(CLI::App& sub) {
  auto opts = std::make_shared<LeaksCommandOptions>();
  sub.add_option("files", opts->files,
                 "Two or more snapshots of one run (series mode), or one file with a trace "
                 "(single-trace mode)")
      ->check(InputPaths())
      ->required();
  AddGroupFlags(sub, opts->group, /*grouping=*/true);
  sub.add_option("--sort", opts->sort, "Series order: given | time (the trace's last time)")
      ->check(CLI::IsMember({"given", "time"}))
      ->capture_default_str();
  sub.add_option("--min-growth", opts->min_growth,
                 "Smallest total growth reported as a leak (and listed among other sites)")
      ->capture_default_str();
  sub.add_option("--device-memory", opts->device_memory,
                 "Device capacity for the 'full at' projection (default: from an OOM entry)");
  sub.add_option("--step-annotation", opts->step_annotation,
                 "Single trace: steps are the START..END ranges of the annotations this name or "
                 "glob names (ProfilerStep#*; default: ProfilerStep#* when the file has it, else "
                 "the optimizer's steps, else periodicity)");
  sub.add_option("--steps", opts->steps, "Single trace: cut the trace into N equal steps");
  sub.add_option("--device", opts->device,
                 "Single trace: the device to analyze (default: the one with most events)");
  sub.add_flag("--exact-lines", opts->exact_lines,
               "Series: match sites only when every line is the same; a site whose lines moved "
               "between two snapshots is then two rows (the default pairs them into one)");
  sub.add_option("--top", opts->top, "Non-leaking sites listed (0 = all)")->capture_default_str();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.add_flag("--fail-on-leak", opts->fail_on_leak, "Exit with code 1 when a leak is reported");
  sub.footer(
      "A leak is a site whose live bytes grow in every step (3+ snapshots or steps) by at least\n"
      "--min-growth in total. Other verdicts: growing then flat (warm-up), growing with pauses,\n"
      "fluctuating, shrinking, steady. In a series, a site whose lines moved between two\n"
      "snapshots (the script was edited) stays one row, \"div \u2190 model.py:142\u2192144 "
      "softmax\",\n"
      "as in diff (docs/leaks.md, \"Sites whose lines moved\"; --exact-lines does not "
      "pair).\n\n"
      "Examples:\n"
      "  memsnap leaks iter100.pickle iter200.pickle iter300.pickle\n"
      "  memsnap leaks --sort time --by function --device-memory 80GiB snaps/\n"
      "  memsnap leaks trace.pickle                       # steps found by periodicity\n"
      "  memsnap leaks --step-annotation train_step trace.pickle\n"
      "  memsnap leaks --step-annotation 'ProfilerStep#*' trace.pickle\n"
      "  memsnap leaks --fail-on-leak --json a.pickle b.pickle c.pickle   # CI\n"
      "  memsnap leaks --exact-lines v1.pickle v2.pickle v3.pickle   # moved lines: split rows");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::LeakOptions options;
    ASSIGN_OR_RETURN(options.group, opts->group.Resolve());
    ASSIGN_OR_RETURN(std::optional<int64_t> min_growth, SizeFlag("--min-growth", opts->min_growth));
    options.min_growth = min_growth.value_or(0);
    ASSIGN_OR_RETURN(std::optional<int64_t> memory,
                     DeviceSizeFlag("--device-memory", opts->device_memory));
    if (memory) {
      if (*memory <= 0) return absl::InvalidArgumentError("--device-memory: must be > 0");
      options.device_memory = *memory;
    }
    if (opts->steps < 0 || opts->steps == 1) {
      return absl::InvalidArgumentError("--steps: must be at least 2");
    }
    options.top = opts->top;
    options.pair_moved = !opts->exact_lines;
    query::LeaksRequest request;
    request.options = options;
    request.steps.annotation = opts->step_annotation;
    request.steps.steps = opts->steps;
    request.steps.device = DeviceFlag(opts->device);
    request.sort_by_time = opts->sort == "time";
    ASSIGN_OR_RETURN(std::vector<query::InputFile> inputs, query::ExpandInputs(opts->files));
    analysis::LeakReport report;
    std::optional<std::vector<analysis::LeftOutFile>> skipped;  // series mode
    if (inputs.size() == 1) {
      ASSIGN_OR_RETURN(query::Session session, OpenSession(inputs[0].path, query::Needs{}, ctx));
      ASSIGN_OR_RETURN(report, query::LeaksQuery(request, session));
    } else {
      ASSIGN_OR_RETURN(query::LeaksSeriesResult series,
                       query::LeaksSeriesQuery(request, inputs, ReadSettingsOf(ctx)));
      report = std::move(series.report);
      skipped = std::move(series.skipped);
    }
    if (opts->json) {
      nlohmann::ordered_json j = report::LeaksToJson(report);
      if (skipped) j["skipped"] = report::LeftOutToJson(*skipped);
      PrintJson(j, ctx);
    } else {
      report::RenderLeaksText(report, *ctx.out);
    }
    return opts->fail_on_leak && report.num_leaks > 0 ? ExitCode::kCheckFailed : ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
