#include "memsnap/query/check.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

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
// name, which may not be there.
struct BaselineOf {
  std::string path;
  bool there = true;
};
BaselineOf BaselineFor(const std::string& baseline, const std::string& file) {
  if (!IsDirectory(baseline)) return {baseline, true};
  std::string path = (std::filesystem::path(baseline) / FileName(file)).string();
  std::error_code ec;
  // A dangling link, or a name that cannot be looked at, is there: reading it fails, naming it.
  const bool there =
      std::filesystem::symlink_status(path, ec).type() != std::filesystem::file_type::not_found;
  return {std::move(path), there};
}

// The ranks of baseline directory `dir` that no input of `inputs` is named as, each with why it
// is missing. A file there that is no snapshot at all (a README; by its first bytes, as
// parse::LooksLikeSnapshot tells) is no rank; one that cannot be read as a file is.
absl::StatusOr<std::vector<analysis::LeftOutFile>> MissingRanks(
    const std::string& dir, const std::vector<InputFile>& inputs) {
  std::set<std::string> names;
  for (const InputFile& in : inputs) names.insert(FileName(in.path));
  ASSIGN_OR_RETURN(std::vector<std::string> listed, io::ListInputDirectory(dir));
  std::vector<analysis::LeftOutFile> missing;
  constexpr std::string_view kWhy = "no input of the same name";
  for (std::string& path : listed) {
    if (names.count(FileName(path)) != 0) continue;
    absl::StatusOr<std::unique_ptr<io::InputSource>> file = io::OpenFile(path);
    if (!file.ok()) {
      std::string_view m = ToStd(file.status().message());
      if (m.starts_with(path + ": ")) m.remove_prefix(path.size() + 2);
      missing.push_back(
          {std::move(path), absl::StrCat(Sv(kWhy), " (and it cannot be read: ", Sv(m), ")")});
    } else if (parse::LooksLikeSnapshot((*file)->bytes().substr(0, 64 << 10))) {
      missing.push_back({std::move(path), std::string(kWhy)});
    }
  }
  return missing;
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
    const BaselineOf base = BaselineFor(request.baseline, session.path());
    if (!base.there) return analysis::RunChecksWithoutBaseline(metrics, base.path, options);
    ASSIGN_OR_RETURN(baseline, Session::Open(base.path, CheckNeeds(), settings));
    base_metrics = analysis::MeasureForCheck(baseline->snapshot(), baseline->timeline_status());
  }
  ASSIGN_OR_RETURN(analysis::CheckReport report,
                   analysis::RunChecks(metrics, base_metrics ? &*base_metrics : nullptr, options));
  if (baseline) {
    ExplainBaselineFailures(baseline->snapshot(), current, request, report);
  }
  return report;
}

bool ChecksRanks(const CheckRequest& request, const std::vector<InputFile>& files) {
  return files.size() > 1 ||
         (files.size() == 1 && files[0].from_directory && IsDirectory(request.baseline));
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
      // A missing one fails the rank only if the input turns out to be a snapshot (see below);
      // the baseline of a file found in a directory is skipped, like the file, if not a snapshot.
      BaselineOf base = BaselineFor(request.baseline, in.path);
      if (base.there) paths.push_back(InputFile{std::move(base.path), in.from_directory});
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
                // Missing: the rank cannot be compared, and fails. Or there but skipped above as
                // not a snapshot: an error.
                const BaselineOf missing = BaselineFor(request.baseline, snap.source.path);
                if (!missing.there) {
                  ASSIGN_OR_RETURN(r.report, analysis::RunChecksWithoutBaseline(
                                                 r.metrics, missing.path, options));
                  return r;
                }
                return absl::InvalidArgumentError(absl::StrCat(snap.source.path, ": its baseline ",
                                                               missing.path, " is not a snapshot"));
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
  const bool ranks_dir =
      std::any_of(files.begin(), files.end(), [](const InputFile& f) { return f.from_directory; });
  if (base_dir && ranks_dir) {
    // The other way round: a baseline rank with no new rank of its name went missing. Only a
    // directory of ranks stands for all of them; files named one by one are the ranks asked about.
    ASSIGN_OR_RETURN(report.missing, MissingRanks(request.baseline, files));
  }
  return report;
}

}  // namespace memsnap::query
