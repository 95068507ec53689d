// memsnap check [thresholds] [--baseline BASE --tolerance 5%] FILE...: a CI gate (docs/ci.md).
// Exit 0 when every check holds, 1 when one fails, 2 when an input cannot be used. Several files
// (one per rank) are checked in parallel, each against the same thresholds; the baseline is one
// file for all of them, or a directory holding a baseline of the same name for each.
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/cli/allocator_flags.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/filter_flags.h"
#include "memsnap/query/check.h"
#include "memsnap/report/check_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct CheckCommandOptions {
  std::vector<std::string> files;
  std::string baseline;
  std::string max_peak, max_reserved, max_allocated, max_frag, fits;
  std::string tolerance = "0%";
  std::string junit, markdown;
  int top_sites = 5;
  bool exact_lines = false;
  std::string by = "site";
  bool json = false;
  AllocatorFlags allocator;  // --start
};

}  // namespace

RunFn SetupCheck(CLI::App& sub) {
  auto opts = std::make_shared<CheckCommandOptions>();
  sub.add_option("files", opts->files,
                 "Snapshot to check (pickle, JSON, HTML, gzip); several files (or a directory of "
                 "ranks) are each checked, with a per-rank table")
      ->check(InputPaths())
      ->required();
  sub.add_option("--max-peak", opts->max_peak,
                 "Fail when the peak of live requested bytes over the trace exceeds SIZE");
  sub.add_option("--max-reserved", opts->max_reserved,
                 "Fail when reserved bytes at the end (largest device) exceed SIZE");
  sub.add_option("--max-allocated", opts->max_allocated,
                 "Fail when allocated bytes at the end (largest device) exceed SIZE");
  sub.add_option(
      "--max-frag", opts->max_frag,
      "Fail when the stranded share (free memory empty_cache cannot release, over reserved, at the "
      "reserved peak: the figure of frag's verdict) exceeds RATIO (e.g. 5% or 0.05)");
  sub.add_option("--fits", opts->fits,
                 "Fail when replaying the trace under the recorded settings on a device of SIZE "
                 "runs out of memory; the failure says what the run needs (the smallest memory it "
                 "fits on), why, and which setting needs less (memsnap oom)");
  AddStartFlag(sub, opts->allocator);
  sub.add_option("--baseline", opts->baseline,
                 "Compare peak, reserved and allocated with this snapshot (every file against it), "
                 "or with the file of the same name in this directory (a file without one fails; "
                 "against a directory of ranks, so does each of its ranks without a new one)")
      ->check(InputPaths());
  sub.add_option("--tolerance", opts->tolerance,
                 "Growth allowed over the baseline (e.g. 5% or 0.05)")
      ->default_str("0%");
  sub.add_option("--junit", opts->junit,
                 "Also write JUnit XML (one testcase per check, one testsuite per file) here")
      ->check(OutputPath());
  sub.add_option("--markdown", opts->markdown,
                 "Also write a Markdown summary here (for a CI job summary)")
      ->check(OutputPath());
  sub.add_option("--top-sites", opts->top_sites, "Growing sites listed when a baseline check fails")
      ->check(CLI::NonNegativeNumber)
      ->default_val(5);
  sub.add_flag(
      "--exact-lines", opts->exact_lines,
      "Growing sites: a site whose lines moved (an edit above it) is a gone site and a new "
      "one, not one site (the default pairs them)");
  {
    const std::vector<std::string> choices = GroupByChoices();
    sub.add_option("--by", opts->by,
                   "Rows of a failed baseline check, as diff --by: " +
                       absl::StrJoin(choices, " | ") + " (site: the default)")
        ->capture_default_str()
        ->check(CLI::IsMember(choices));
  }
  sub.add_flag("--json", opts->json, "Machine-readable verdict");
  sub.footer(
      "Sizes: 512MiB, 1.5GB, 20 MiB, 4096 (KiB/MiB/GiB and K/M/G are powers of 1024, KB/MB/GB of\n"
      "1000). Byte figures are the largest over the file's devices. Definitions: docs/ci.md,\n"
      "docs/fragmentation.md. Exit codes: 0 all checks pass, 1 a check failed, 2 unusable input.\n"
      "Examples:\n"
      "  memsnap check --max-peak 20GiB --max-frag 30% snap.pickle\n"
      "  memsnap check --fits 24GiB --junit memsnap.xml run.pickle   # fits a 24 GiB GPU?\n"
      "  memsnap check --baseline main.pickle --tolerance 5% pr.pickle\n"
      "  memsnap check --baseline main.pickle --exact-lines pr.pickle   # no pairing of moved "
      "lines\n"
      "  memsnap check --baseline main.pickle --by module pr.pickle   # which modules grew\n"
      "  memsnap check --baseline base.pickle --max-reserved 70GiB --junit memsnap.xml \\\n"
      "      --markdown memsnap.md new.pickle; cat memsnap.md >> \"$GITHUB_STEP_SUMMARY\"\n"
      "  memsnap check --baseline base_ranks/ --tolerance 5% --junit memsnap.xml ranks/\n"
      "      # each ranks/F against base_ranks/F; fails when any rank fails, has no baseline,\n"
      "      # or is missing from ranks/");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    query::CheckRequest request;
    analysis::CheckOptions& options = request.options;
    ASSIGN_OR_RETURN(options.max_peak, SizeFlag("--max-peak", opts->max_peak));
    ASSIGN_OR_RETURN(options.max_reserved, SizeFlag("--max-reserved", opts->max_reserved));
    ASSIGN_OR_RETURN(options.max_allocated, SizeFlag("--max-allocated", opts->max_allocated));
    ASSIGN_OR_RETURN(options.max_frag, RatioFlag("--max-frag", opts->max_frag));
    if (options.max_frag && (*options.max_frag < 0 || *options.max_frag > 1)) {
      // Fragmentation is a share of the free memory: a limit past 100% could never fail.
      return absl::InvalidArgumentError(
          absl::StrCat("--max-frag ", opts->max_frag,
                       ": fragmentation is a share, from 0% to 100% (or 0 to 1)"));
    }
    ASSIGN_OR_RETURN(options.fits, DeviceSizeFlag("--fits", opts->fits));
    if (options.fits && *options.fits < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fits ", opts->fits, ": expected a device size such as 24GiB"));
    }
    ASSIGN_OR_RETURN(std::optional<double> tolerance, RatioFlag("--tolerance", opts->tolerance));
    options.tolerance = tolerance.value_or(0.0);
    options.start = StartOf(opts->allocator);
    options.threads = ctx.threads;  // the global -j
    request.baseline = opts->baseline;
    request.top_sites = opts->top_sites;
    request.exact_lines = opts->exact_lines;
    ASSIGN_OR_RETURN(request.group_by, analysis::ParseGroupBy(opts->by));
    // "Nothing to check" is known before reading anything.
    RETURN_IF_ERROR(query::ValidateCheckRequest(request));
    ASSIGN_OR_RETURN(std::vector<query::InputFile> inputs, query::ExpandInputs(opts->files));
    if (query::ChecksRanks(request, inputs)) {
      ASSIGN_OR_RETURN(analysis::CheckRanksReport report,
                       query::CheckRanksQuery(request, inputs, ReadSettingsOf(ctx)));
      if (!opts->junit.empty()) {
        RETURN_IF_ERROR(WriteOutputFile(opts->junit, report::CheckRanksToJunit(report), ctx));
      }
      if (!opts->markdown.empty()) {
        RETURN_IF_ERROR(WriteOutputFile(opts->markdown, report::CheckRanksToMarkdown(report), ctx));
      }
      if (opts->json) {
        PrintJson(report::CheckRanksToJson(report), ctx);
      } else {
        report::RenderCheckRanksText(report, *ctx.out);
      }
      if (!report.unreadable.empty()) {
        for (const analysis::LeftOutFile& f : report.unreadable) {
          *ctx.err << "memsnap check: cannot read " << f.path << ": " << f.reason << "\n";
        }
        return ExitCode::kBadInput;
      }
      return report.passed() ? ExitCode::kOk : ExitCode::kCheckFailed;
    }
    // The timeline's event pass (for the peak) runs beside the reader.
    ASSIGN_OR_RETURN(query::Session session, OpenSession(inputs[0].path, query::CheckNeeds(), ctx));
    ASSIGN_OR_RETURN(analysis::CheckReport report,
                     query::CheckQuery(request, session, ReadSettingsOf(ctx)));
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
