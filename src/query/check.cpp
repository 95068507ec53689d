#include "memsnap/query/check.h"

#include <filesystem>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

namespace {

std::string FileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

bool IsDirectory(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::is_directory(path, ec);
}

// The baseline of `file`: the baseline itself, or in a baseline directory the file of the same
// name.
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

// On a failed baseline check, which sites grew (the diff engine). A failed peak comparison is
// explained by the sites live at the peaks, others by the ends.
void ExplainBaselineFailures(const Snapshot& baseline, const Snapshot& current,
                             const CheckRequest& request, analysis::CheckReport& report) {
  const int top_sites = request.top_sites;
  // RunChecks put the session's categories in the report: the kinds are decided in them too.
  bool baseline_failed = false, peak_failed = false;
  for (const auto& c : report.checks) {
    bool failed = c.kind == analysis::CheckKind::kBaseline && !c.passed;
    baseline_failed |= failed;
    peak_failed |= failed && c.metric == analysis::CheckMetric::kPeak;
  }
  if (!baseline_failed || top_sites <= 0) return;
  report.sites_at_peak = peak_failed;
  report.growing_by = request.group_by;
  auto sites = analysis::TopGrowingSites(baseline, current, top_sites, peak_failed,
                                         request.exact_lines, report.categories, request.group_by);
  if (sites.ok()) {
    report.growing_sites = std::move(sites->sites);
    report.growing_kinds = sites->kinds;
  } else {
    report.growing_sites_error = std::string(sites.status().message());
  }
}

}  // namespace

absl::Status ValidateCheckRequest(const CheckRequest& request) {
  // Ask RunChecks on a stand-in.
  analysis::CheckMetrics probe;
  probe.peak_bytes = 0;
  probe.fits.emplace();
  return analysis::RunChecks(probe, request.baseline.empty() ? nullptr : &probe, request.options)
      .status();
}

Needs CheckNeeds() { return NeedsTimeline(analysis::CheckTimelineOptions()); }

absl::StatusOr<analysis::CheckReport> CheckQuery(const CheckRequest& request, Session& session,
                                                 const ReadSettings& settings) {
  const Snapshot& current = session.snapshot();
  analysis::CheckOptions options = request.options;
  options.categories = session.categories();
  analysis::CheckMetrics metrics =
      analysis::MeasureForCheck(current, session.timeline_status(), &options);
  std::optional<Session> baseline;
  std::optional<analysis::CheckMetrics> base_metrics;
  if (!request.baseline.empty()) {
    ASSIGN_OR_RETURN(std::string base_path, BaselineFor(request.baseline, session.path()));
    ASSIGN_OR_RETURN(baseline, Session::Open(base_path, CheckNeeds(), settings));
    base_metrics = analysis::MeasureForCheck(baseline->snapshot(), baseline->timeline_status());
  }
  ASSIGN_OR_RETURN(analysis::CheckReport report,
                   analysis::RunChecks(metrics, base_metrics ? &*base_metrics : nullptr, options));
  if (baseline) {
    ExplainBaselineFailures(baseline->snapshot(), current, request, report);
  }
  return report;
}

absl::StatusOr<analysis::CheckRanksReport> CheckRanksQuery(const CheckRequest& request,
                                                           const std::vector<InputFile>& files,
                                                           const ReadSettings& settings) {
  // One baseline file for every rank: measured once, kept for the growing sites. A directory:
  // the baselines that match an input by name are measured in parallel first.
  const bool base_dir = IsDirectory(request.baseline);
  std::optional<Session> shared_base;
  std::optional<analysis::CheckMetrics> shared_metrics;
  std::map<std::string, analysis::CheckMetrics> base_by_name;
  if (!request.baseline.empty() && !base_dir) {
    ASSIGN_OR_RETURN(shared_base, Session::Open(request.baseline, CheckNeeds(), settings));
    shared_metrics =
        analysis::MeasureForCheck(shared_base->snapshot(), shared_base->timeline_status());
    if (request.top_sites <= 0) shared_base.reset();
  }
  if (base_dir) {
    std::vector<InputFile> paths;
    for (const InputFile& in : files) {
      // A missing one is an error only if the input turns out to be a snapshot (see below); the
      // baseline of a file found in a directory is skipped, like the file, if not a snapshot.
      absl::StatusOr<std::string> path = BaselineFor(request.baseline, in.path);
      if (path.ok()) paths.push_back(InputFile{*path, in.from_directory});
    }
    if (!paths.empty()) {
      ASSIGN_OR_RETURN(PerFile<analysis::CheckMetrics> bases,
                       ForEachFile<analysis::CheckMetrics>(
                           paths, CheckNeeds(), settings,
                           [](Session& s) -> absl::StatusOr<analysis::CheckMetrics> {
                             return analysis::MeasureForCheck(s.snapshot(), s.timeline_status());
                           }));
      for (auto& [path, m] : bases) base_by_name[FileName(path)] = std::move(m);
    }
  }
  ReadSettings rank_read = settings;  // a rank's baseline, read again on its worker
  rank_read.threads = ThreadsPerFile(settings, files.size());
  rank_read.progress = false;
  rank_read.warn = nullptr;
  rank_read.clock = nullptr;
  // A rank that cannot be read is reported beside the others, in every format, and fails the gate
  // (exit 2): never a pass on the ranks that could be read.
  LeftOut left_out;
  left_out.keep_going = true;
  ASSIGN_OR_RETURN(
      PerFile<analysis::CheckRank> results,
      ForEachFile<analysis::CheckRank>(
          files, CheckNeeds(), settings,
          [&](Session& s) -> absl::StatusOr<analysis::CheckRank> {
            const Snapshot& snap = s.snapshot();
            analysis::CheckRank r;
            analysis::CheckOptions options = request.options;
            options.categories = s.categories();
            r.metrics = analysis::MeasureForCheck(snap, s.timeline_status(), &options);
            const analysis::CheckMetrics* base = shared_metrics ? &*shared_metrics : nullptr;
            if (base_dir) {
              auto it = base_by_name.find(FileName(snap.source.path));
              if (it == base_by_name.end()) {
                // Missing, or there but skipped above as not a snapshot.
                ASSIGN_OR_RETURN(std::string path, BaselineFor(request.baseline, snap.source.path));
                return absl::InvalidArgumentError(
                    absl::StrCat(snap.source.path, ": its baseline ", path, " is not a snapshot"));
              }
              base = &it->second;
            }
            ASSIGN_OR_RETURN(r.report, analysis::RunChecks(r.metrics, base, options));
            if (base == nullptr || request.top_sites <= 0 || r.report.passed()) return r;
            // Growing sites need the baseline's model: the shared one, or read again here.
            if (shared_base) {
              ExplainBaselineFailures(shared_base->snapshot(), snap, request, r.report);
            } else {
              ASSIGN_OR_RETURN(Session own, Session::Open(base->path, Needs{}, rank_read));
              ExplainBaselineFailures(own.snapshot(), snap, request, r.report);
            }
            return r;
          },
          &left_out));
  std::vector<analysis::CheckRank> ranks;
  for (auto& [path, r] : results) ranks.push_back(std::move(r));
  analysis::CheckRanksReport report =
      analysis::CompareCheckRanks(std::move(ranks), request.baseline);
  report.unreadable = std::move(left_out.unreadable);
  report.skipped = std::move(left_out.skipped);
  return report;
}

}  // namespace memsnap::query
