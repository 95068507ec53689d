// memsnap check [thresholds] [--baseline BASE --tolerance 5%] FILE...: a CI gate (docs/ci.md).
// Exit 0 when every check holds, 1 when one fails, 2 when an input cannot be used. Several files
// (one per rank) are checked in parallel, each against the same thresholds; the baseline is one
// file for all of them, or a directory holding a baseline of the same name for each.
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/check.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/parse/reader.h"
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

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec);
}

// The baseline of `file`: --baseline itself, or in a baseline directory the file of the same name.
absl::StatusOr<std::string> BaselineFor(const std::string& baseline, const std::string& file) {
  if (!IsDirectory(baseline)) return baseline;
  std::string path = (std::filesystem::path(baseline) / FileName(file)).string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": no baseline of the same name in --baseline ", baseline));
  }
  return path;
}

// On a failed baseline check, say which sites grew (the diff engine). A failed peak comparison
// is explained by the sites live at the peaks, others by the ends.
void ExplainBaselineFailures(const Snapshot& baseline, const Snapshot& current, int top_sites,
                             bool exact_lines, analysis::CheckReport& report) {
  bool baseline_failed = false, peak_failed = false;
  for (const auto& c : report.checks) {
    bool failed = c.kind == analysis::CheckKind::kBaseline && !c.passed;
    baseline_failed |= failed;
    peak_failed |= failed && c.metric == analysis::CheckMetric::kPeak;
  }
  if (!baseline_failed || top_sites <= 0) return;
  report.sites_at_peak = peak_failed;
  auto sites = analysis::TopGrowingSites(baseline, current, top_sites, peak_failed, exact_lines);
  if (sites.ok()) {
    report.growing_sites = std::move(sites->sites);
    report.growing_kinds = sites->kinds;
  } else {
    report.notes.push_back(absl::StrCat("growing sites unavailable: ", sites.status().message()));
  }
}

// Many files (one per rank): every rank checked on a worker, then one verdict over all of them.
absl::StatusOr<ExitCode> RunCheckRanks(const CheckCommandOptions& opts,
                                       const std::vector<InputFile>& inputs,
                                       const analysis::CheckOptions& options, Context& ctx) {
  // One baseline file for every rank: measured once, kept for the growing sites. A directory:
  // the baselines that match an input by name are measured in parallel first.
  const bool base_dir = IsDirectory(opts.baseline);
  std::optional<Snapshot> shared_base;
  std::optional<analysis::CheckMetrics> shared_metrics;
  std::map<std::string, analysis::CheckMetrics> base_by_name;
  if (!opts.baseline.empty() && !base_dir) {
    ASSIGN_OR_RETURN(SnapshotMaybeTimeline base,
                     LoadWithTimelineStatus(opts.baseline, analysis::CheckTimelineOptions(), ctx));
    shared_metrics = analysis::MeasureForCheck(base.snapshot, base.timeline);
    if (opts.top_sites > 0) shared_base = std::move(base.snapshot);
  }
  if (base_dir) {
    std::vector<InputFile> paths;
    for (const InputFile& in : inputs) {
      // A missing one is an error only if the input turns out to be a snapshot (see below); the
      // baseline of a file found in a directory is skipped, like the file, if not a snapshot.
      absl::StatusOr<std::string> path = BaselineFor(opts.baseline, in.path);
      if (path.ok()) paths.push_back(InputFile{*path, in.from_directory});
    }
    if (!paths.empty()) {
      ASSIGN_OR_RETURN(auto bases,
                       AnalyzeEachWithTimeline<analysis::CheckMetrics>(
                           paths, analysis::CheckTimelineOptions(), ctx,
                           [](const Snapshot& snap, const absl::StatusOr<analysis::Timeline>& tl)
                               -> absl::StatusOr<analysis::CheckMetrics> {
                             return analysis::MeasureForCheck(snap, tl);
                           }));
      for (auto& [path, m] : bases) base_by_name[FileName(path)] = std::move(m);
    }
  }
  parse::ReadOptions read;
  read.strict = ctx.strict;
  read.max_memory = ctx.max_memory;
  read.threads = ThreadsPerFile(ctx, inputs.size());  // a rank's baseline, read on its worker
  // A rank that cannot be read is reported beside the others, in every format, and fails the gate
  // (exit 2): never a pass on the ranks that could be read.
  LeftOutInputs left_out;
  left_out.keep_going = true;
  ASSIGN_OR_RETURN(
      auto results,
      AnalyzeEachWithTimeline<analysis::CheckRank>(
          inputs, analysis::CheckTimelineOptions(), ctx,
          [&](const Snapshot& snap,
              const absl::StatusOr<analysis::Timeline>& tl) -> absl::StatusOr<analysis::CheckRank> {
            analysis::CheckRank r;
            r.metrics = analysis::MeasureForCheck(snap, tl, &options);
            const analysis::CheckMetrics* base = shared_metrics ? &*shared_metrics : nullptr;
            if (base_dir) {
              auto it = base_by_name.find(FileName(snap.source.path));
              if (it == base_by_name.end()) {
                // Missing, or there but skipped above as not a snapshot.
                ASSIGN_OR_RETURN(std::string path, BaselineFor(opts.baseline, snap.source.path));
                return absl::InvalidArgumentError(
                    absl::StrCat(snap.source.path, ": its baseline ", path, " is not a snapshot"));
              }
              base = &it->second;
            }
            ASSIGN_OR_RETURN(r.report, analysis::RunChecks(r.metrics, base, options));
            if (base == nullptr || opts.top_sites <= 0 || r.report.passed()) return r;
            // Growing sites need the baseline's model: the shared one, or read again here.
            if (shared_base) {
              ExplainBaselineFailures(*shared_base, snap, opts.top_sites, opts.exact_lines,
                                      r.report);
            } else {
              absl::StatusOr<Snapshot> own = parse::ReadSnapshot(base->path, read);
              if (!own.ok()) return own.status();
              ExplainBaselineFailures(*own, snap, opts.top_sites, opts.exact_lines, r.report);
            }
            return r;
          },
          &left_out));
  std::vector<analysis::CheckRank> ranks;
  for (auto& [path, r] : results) ranks.push_back(std::move(r));
  analysis::CheckRanksReport report = analysis::CompareCheckRanks(std::move(ranks), opts.baseline);
  report.unreadable = std::move(left_out.unreadable);
  report.skipped = std::move(left_out.skipped);
  if (!opts.junit.empty()) {
    RETURN_IF_ERROR(WriteOutputFile(opts.junit, report::CheckRanksToJunit(report), ctx));
  }
  if (!opts.markdown.empty()) {
    RETURN_IF_ERROR(WriteOutputFile(opts.markdown, report::CheckRanksToMarkdown(report), ctx));
  }
  if (opts.json) {
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
                 "runs out of memory; the failure says why and which settings fit (memsnap oom)");
  sub.add_option("--baseline", opts->baseline,
                 "Compare peak, reserved and allocated with this snapshot (every file against it), "
                 "or with the file of the same name in this directory")
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
      "  memsnap check --baseline base.pickle --max-reserved 70GiB --junit memsnap.xml \\\n"
      "      --markdown memsnap.md new.pickle; cat memsnap.md >> \"$GITHUB_STEP_SUMMARY\"\n"
      "  memsnap check --baseline base_ranks/ --tolerance 5% --junit memsnap.xml ranks/\n"
      "      # each ranks/F against base_ranks/F; fails when any rank fails");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::CheckOptions options;
    ASSIGN_OR_RETURN(options.max_peak, ParseFlag<int64_t>("--max-peak", opts->max_peak, ParseSize));
    ASSIGN_OR_RETURN(options.max_reserved,
                     ParseFlag<int64_t>("--max-reserved", opts->max_reserved, ParseSize));
    ASSIGN_OR_RETURN(options.max_allocated,
                     ParseFlag<int64_t>("--max-allocated", opts->max_allocated, ParseSize));
    ASSIGN_OR_RETURN(options.max_frag, ParseFlag<double>("--max-frag", opts->max_frag, ParseRatio));
    if (options.max_frag && (*options.max_frag < 0 || *options.max_frag > 1)) {
      // Fragmentation is a share of the free memory: a limit past 100% could never fail.
      return absl::InvalidArgumentError(
          absl::StrCat("--max-frag ", opts->max_frag,
                       ": fragmentation is a share, from 0% to 100% (or 0 to 1)"));
    }
    ASSIGN_OR_RETURN(options.fits, ParseFlag<int64_t>("--fits", opts->fits, ParseSize));
    if (options.fits && *options.fits <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fits ", opts->fits, ": expected a device size such as 24GiB"));
    }
    ASSIGN_OR_RETURN(std::optional<double> tolerance,
                     ParseFlag<double>("--tolerance", opts->tolerance, ParseRatio));
    options.tolerance = tolerance.value_or(0.0);
    options.threads = ctx.threads;  // the global -j

    // "Nothing to check" is known before reading anything: ask RunChecks on a stand-in.
    analysis::CheckMetrics probe;
    probe.peak_bytes = 0;
    probe.fits.emplace();
    RETURN_IF_ERROR(
        analysis::RunChecks(probe, opts->baseline.empty() ? nullptr : &probe, options).status());
    ASSIGN_OR_RETURN(std::vector<InputFile> inputs, ExpandInputFiles(opts->files));
    if (inputs.size() > 1) return RunCheckRanks(*opts, inputs, options, ctx);
    const std::string& file = inputs[0].path;
    // The timeline's event pass (for the peak) runs beside the reader.
    ASSIGN_OR_RETURN(SnapshotMaybeTimeline loaded,
                     LoadWithTimelineStatus(file, analysis::CheckTimelineOptions(), ctx));
    const Snapshot& current = loaded.snapshot;
    analysis::CheckMetrics metrics = analysis::MeasureForCheck(current, loaded.timeline, &options);
    std::optional<Snapshot> baseline;
    std::optional<analysis::CheckMetrics> base_metrics;
    if (!opts->baseline.empty()) {
      ASSIGN_OR_RETURN(std::string base_path, BaselineFor(opts->baseline, file));
      ASSIGN_OR_RETURN(SnapshotMaybeTimeline base,
                       LoadWithTimelineStatus(base_path, analysis::CheckTimelineOptions(), ctx));
      base_metrics = analysis::MeasureForCheck(base.snapshot, base.timeline);
      baseline = std::move(base.snapshot);
    }
    ASSIGN_OR_RETURN(
        analysis::CheckReport report,
        analysis::RunChecks(metrics, base_metrics ? &*base_metrics : nullptr, options));
    if (baseline)
      ExplainBaselineFailures(*baseline, current, opts->top_sites, opts->exact_lines, report);
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
