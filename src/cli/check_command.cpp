// memsnap check [thresholds] [--baseline BASE --tolerance 5%] FILE: a CI gate (docs/ci.md).
// Exit 0 when every check holds, 1 when one fails, 2 when an input cannot be used.
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/check.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/report/check_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct CheckCommandOptions {
  std::string file;
  std::string baseline;
  std::string max_peak, max_reserved, max_allocated, max_frag;
  std::string tolerance = "0%";
  std::string junit, markdown;
  int top_sites = 5;
  bool json = false;
};

// Parses an optional flag value with `parse`; errors name the flag.
template <typename T, typename Parse>
absl::StatusOr<std::optional<T>> ParseFlag(const std::string& flag, const std::string& text,
                                           Parse parse) {
  if (text.empty()) return std::optional<T>();
  auto v = parse(text);
  if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", v.status().message()));
  return std::optional<T>(*v);
}
}  // namespace

RunFn SetupCheck(CLI::App& sub) {
  auto opts = std::make_shared<CheckCommandOptions>();
  sub.add_option("file", opts->file, "Snapshot to check (pickle, JSON, HTML, gzip)")->required();
  sub.add_option("--max-peak", opts->max_peak,
                 "Fail when the peak of live requested bytes over the trace exceeds SIZE");
  sub.add_option("--max-reserved", opts->max_reserved,
                 "Fail when reserved bytes at the end (largest device) exceed SIZE");
  sub.add_option("--max-allocated", opts->max_allocated,
                 "Fail when allocated bytes at the end (largest device) exceed SIZE");
  sub.add_option("--max-frag", opts->max_frag,
                 "Fail when external fragmentation at the end exceeds RATIO (e.g. 30% or 0.3)");
  sub.add_option("--baseline", opts->baseline,
                 "Compare peak, reserved and allocated with this snapshot");
  sub.add_option("--tolerance", opts->tolerance,
                 "Growth allowed over the baseline (e.g. 5% or 0.05)")
      ->default_str("0%");
  sub.add_option("--junit", opts->junit, "Also write JUnit XML (one testcase per check) here");
  sub.add_option("--markdown", opts->markdown,
                 "Also write a Markdown summary here (for a CI job summary)");
  sub.add_option("--top-sites", opts->top_sites,
                 "Growing sites listed when a baseline check fails")
      ->check(CLI::NonNegativeNumber)
      ->default_val(5);
  sub.add_flag("--json", opts->json, "Machine-readable verdict");
  sub.footer(
      "Sizes: 512MiB, 1.5GB, 20 MiB, 4096 (KiB/MiB/GiB and K/M/G are powers of 1024, KB/MB/GB of\n"
      "1000). Byte figures are the largest over the file's devices. Definitions: docs/ci.md,\n"
      "docs/fragmentation.md. Exit codes: 0 all checks pass, 1 a check failed, 2 unusable input.\n"
      "Examples:\n"
      "  memsnap check --max-peak 20GiB --max-frag 30% snap.pickle\n"
      "  memsnap check --baseline main.pickle --tolerance 5% pr.pickle\n"
      "  memsnap check --baseline base.pickle --max-reserved 70GiB --junit memsnap.xml \\\n"
      "      --markdown memsnap.md new.pickle; cat memsnap.md >> \"$GITHUB_STEP_SUMMARY\"");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::CheckOptions options;
    ASSIGN_OR_RETURN(options.max_peak,
                     ParseFlag<int64_t>("--max-peak", opts->max_peak, ParseSize));
    ASSIGN_OR_RETURN(options.max_reserved,
                     ParseFlag<int64_t>("--max-reserved", opts->max_reserved, ParseSize));
    ASSIGN_OR_RETURN(options.max_allocated,
                     ParseFlag<int64_t>("--max-allocated", opts->max_allocated, ParseSize));
    ASSIGN_OR_RETURN(options.max_frag,
                     ParseFlag<double>("--max-frag", opts->max_frag, ParseRatio));
    ASSIGN_OR_RETURN(std::optional<double> tolerance,
                     ParseFlag<double>("--tolerance", opts->tolerance, ParseRatio));
    options.tolerance = tolerance.value_or(0.0);

    ASSIGN_OR_RETURN(Snapshot current, LoadSnapshot(opts->file, ctx));
    analysis::CheckMetrics metrics = analysis::MeasureForCheck(current);
    std::optional<Snapshot> baseline;
    std::optional<analysis::CheckMetrics> base_metrics;
    if (!opts->baseline.empty()) {
      ASSIGN_OR_RETURN(baseline, LoadSnapshot(opts->baseline, ctx));
      base_metrics = analysis::MeasureForCheck(*baseline);
    }
    ASSIGN_OR_RETURN(analysis::CheckReport report,
                     analysis::RunChecks(metrics, base_metrics ? &*base_metrics : nullptr,
                                         options));
    // On a failed baseline check, say which sites grew (the diff engine).
    // A failed peak comparison is explained by the sites live at the peaks, others by the ends.
    bool baseline_failed = false, peak_failed = false;
    for (const auto& c : report.checks) {
      bool failed = c.kind == analysis::CheckKind::kBaseline && !c.passed;
      baseline_failed |= failed;
      peak_failed |= failed && c.metric == "peak";
    }
    if (baseline_failed && opts->top_sites > 0) {
      report.sites_at_peak = peak_failed;
      auto sites = analysis::TopGrowingSites(*baseline, current, opts->top_sites, peak_failed);
      if (sites.ok()) {
        report.growing_sites = std::move(*sites);
      } else {
        report.notes.push_back(
            absl::StrCat("growing sites unavailable: ", sites.status().message()));
      }
    }
    if (!opts->junit.empty()) {
      RETURN_IF_ERROR(WriteOutputFile(opts->junit, report::CheckToJunit(report), ctx));
    }
    if (!opts->markdown.empty()) {
      RETURN_IF_ERROR(WriteOutputFile(opts->markdown, report::CheckToMarkdown(report), ctx));
    }
    if (opts->json) {
      PrintJson(report::CheckToJson(report), ctx);
    } else {
      report::RenderCheckText(report, *ctx.out);
    }
    return report.passed() ? ExitCode::kOk : ExitCode::kCheckFailed;
  };
}

}  // namespace memsnap::cli
