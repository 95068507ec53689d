#include "memsnap/query/leaks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::query {

namespace {
absl::Status Prefixed(const std::string& path, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(path, ": ", Sv(ToStd(s.message()))));
}
}  // namespace

absl::StatusOr<analysis::LeakReport> LeaksQuery(const LeaksRequest& request, Session& session) {
  auto r = analysis::AnalyzeTraceLeaks(session.snapshot(), request.options, request.steps);
  if (!r.ok()) return Prefixed(session.path(), r.status());
  return r;
}

absl::StatusOr<LeaksSeriesResult> LeaksSeriesQuery(const LeaksRequest& request,
                                                   const std::vector<InputFile>& files,
                                                   const ReadSettings& settings) {
  if (!request.steps.annotation.empty() || request.steps.steps > 0) {
    return absl::InvalidArgumentError(
        "--step-annotation and --steps need a single file with a trace (single-trace mode)");
  }
  LeftOut left_out;
  ASSIGN_OR_RETURN(PerFile<analysis::SeriesPoint> results,
                   ForEachFile<analysis::SeriesPoint>(
                       files, Needs{}, settings,
                       [&](Session& s) -> absl::StatusOr<analysis::SeriesPoint> {
                         auto p = analysis::SeriesPointOf(s.snapshot(), request.options);
                         if (!p.ok()) return Prefixed(s.path(), p.status());
                         return p;
                       },
                       &left_out));
  std::vector<analysis::SeriesPoint> points;
  for (auto& [path, p] : results) {
    p.label = path;
    points.push_back(std::move(p));
  }
  if (points.size() < 2) {
    return absl::InvalidArgumentError("series mode needs at least two snapshot files");
  }
  if (request.sort_by_time) {
    for (const auto& p : points) {
      if (p.time_us == kNoTime) {
        return absl::InvalidArgumentError(
            absl::StrCat("--sort time: ", p.label, " has no trace times (time_us)"));
      }
    }
    std::stable_sort(points.begin(), points.end(),
                     [](const auto& a, const auto& b) { return a.time_us < b.time_us; });
  }
  LeaksSeriesResult r;
  r.report = analysis::AnalyzeSeries(std::move(points), request.options);
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
