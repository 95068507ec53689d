// memsnap diff A B: live memory by site before/after, totals per device/pool/stream, settings.
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/diff.h"
#include "memsnap/report/diff_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct DiffCommandOptions {
  std::string before, after;
  std::string at = "auto";
  std::string min_delta;
  GroupFlags group;
  StepFlags steps;
  std::string step;
  int top = 20;
  bool exact_lines = false;
  bool json = false;
  std::string folded;
  int device = -1;  // --device N (DeviceFlag)
};
}  // namespace

RunFn SetupDiff(CLI::App& sub) {
  auto opts = std::make_shared<DiffCommandOptions>();
  // Not ->required(): CLI11 would say "before is required" to `memsnap diff A`, which names the
  // wrong file; the run says that diff needs two snapshots instead.
  sub.add_option("before", opts->before, "Baseline snapshot, BEFORE (required)")
      ->check(InputPaths());
  sub.add_option("after", opts->after, "New snapshot, AFTER (required)")->check(InputPaths());
  sub.add_option("--at", opts->at,
                 "auto (the peak when both files have a trace, else the end) | peak | end")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "peak", "end"}));
  sub.add_option("--step", opts->step,
                 "Compare the same training step of the two runs: each file at the peak of its "
                 "own step N (from 0, as `leaks` lists them; -1: the last)");
  AddStepFlags(sub, opts->steps);
  sub.add_option("--min-delta", opts->min_delta,
                 "Hide sites whose |delta| is below SIZE (e.g. 1MiB)");
  AddGroupFlags(sub, opts->group, /*grouping=*/true);
  sub.add_flag("--ignore-lines", opts->group.ignore_lines,
               "Match frames by function and file only (scripts edited between runs)");
  sub.add_flag("--exact-lines", opts->exact_lines,
               "Match sites only when every line is the same: a site whose lines moved is a [gone] "
               "row and a [new] one (the default pairs them into one row)");
  sub.add_option("--top", opts->top, "Sites to show (0 = all)")->capture_default_str();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.add_option("--device", opts->device,
                 "Only this device's totals (reserved, allocated, pools, streams, peak); the sites "
                 "are every device's. Past 64 devices the text prints one totals line per device");
  sub.add_option("--folded", opts->folded,
                 "Write differential folded stacks 'stack before after' to FILE ('-' = stdout) for "
                 "difffolded.pl / flamegraph.pl")
      ->check(OutputPath());
  sub.footer(
      "Sites are matched by their identity (the user's frames, the autograd node and the "
      "operator;\n"
      "docs/attribution.md), never by address or native frames, so different runs, PyTorch builds\n"
      "and device counts compare. Positive delta = growth. A site whose lines moved (an edit "
      "above\n"
      "it) is one row, \"linear \u2190 model.py:118\u2192120 forward\", when it is the only "
      "candidate\n"
      "on each side (docs/attribution.md, \"Sites whose lines moved\"; --exact-lines does not\n"
      "pair). A line one file ran eagerly and the other under torch.compile is one row too,\n"
      "\"mul, sigmoid \u2192 torch.compile \u2190 model.py:12 forward [compiled]\", when the "
      "user's\n"
      "frames match exactly (docs/attribution.md, \"Sites torch.compile replaced\").\n\n"
      "Examples:\n"
      "  memsnap diff base.pickle new.pickle            # at each file's peak when both have a "
      "trace\n"
      "  memsnap diff --at peak --by function --min-delta 10MiB base.pickle new.pickle\n"
      "  memsnap diff --exact-lines v1.pickle v2.pickle   # moved lines: a gone and a new row\n"
      "  memsnap diff --step 2 fp32.pickle amp.pickle    # the peak of training step 2 in each\n"
      "  memsnap diff --folded - a.pickle b.pickle | flamegraph.pl > diff.svg");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::DiffOptions o;
    o.auto_moment = opts->at == "auto";
    if (!o.auto_moment) {
      ASSIGN_OR_RETURN(query::MomentArg at, MomentFlag("--at", opts->at));
      o.at = at.moment;
      if (o.at.kind != analysis::Moment::Kind::kPeak && o.at.kind != analysis::Moment::Kind::kEnd) {
        return absl::InvalidArgumentError(
            absl::StrCat("--at ", opts->at, ": diff accepts auto, peak or end"));
      }
    }
    ASSIGN_OR_RETURN(o.group, opts->group.Resolve());
    if (opts->before.empty() || opts->after.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "diff needs two snapshots, BEFORE and AFTER (memsnap diff before.pickle after.pickle)",
          opts->before.empty() ? "; none was given"
                               : absl::StrCat("; only one was given: ", opts->before)));
    }
    o.pair_moved = !opts->exact_lines;
    ASSIGN_OR_RETURN(std::optional<int64_t> min_delta, SizeFlag("--min-delta", opts->min_delta));
    o.min_delta = min_delta.value_or(0);
    if (opts->top < 0) return absl::InvalidArgumentError("--top: must be >= 0");
    // Both files read side by side, each timeline's event pass during its read.
    query::DiffRequest request;
    request.options = o;
    request.device = DeviceFlag(opts->device);
    if (!opts->step.empty()) {
      if (opts->at != "auto") {
        return absl::InvalidArgumentError(
            absl::StrCat("--step ", opts->step, " and --at ", opts->at,
                         ": give one (--step N compares each file at the peak of its step N)"));
      }
      ASSIGN_OR_RETURN(request.step, MomentFlag("--step", "step:" + opts->step, &opts->steps));
      request.step->text = opts->step;
    }
    request.folded = !opts->folded.empty();
    const query::Needs needs = query::DiffNeeds(request);
    ASSIGN_OR_RETURN(
        std::vector<query::Session> sessions,
        query::OpenAll({opts->before, opts->after}, {needs, needs}, ReadSettingsOf(ctx)));
    ASSIGN_OR_RETURN(query::DiffResult result, query::DiffQuery(request, sessions[0], sessions[1]));
    const analysis::DiffReport& rep = result.report;
    if (request.folded) {
      std::ostringstream folded;
      report::RenderDiffFolded(*result.stacks, folded);
      RETURN_IF_ERROR(WriteOutputFile(opts->folded, folded.str(), ctx));
      if (opts->folded == "-") return ExitCode::kOk;
    }
    if (opts->json) {
      PrintJson(report::DiffToJson(rep), ctx);
    } else {
      report::RenderDiffText(rep, static_cast<size_t>(opts->top), *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
