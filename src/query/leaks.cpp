#include "memsnap/query/leaks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::query {

std::string StepsNote(const analysis::StepInfo& steps) {
  using analysis::StepsFinding;
  switch (steps.finding) {
    case StepsFinding::kNone:
      return "";
    case StepsFinding::kFewerThanTwo:
      return "fewer than two steps";
    case StepsFinding::kNoEvents:
      return absl::StrCat("device ", steps.device, " has no trace events");
    case StepsFinding::kTooShort:
      return absl::StrCat("the trace has only ", steps.finding_events,
                          " events: too short to find a repeating step");
    case StepsFinding::kFlat:
      return "live bytes do not vary along the trace: no repeating step";
    case StepsFinding::kNoPattern:
      return absl::StrFormat(
          "no repeating pattern in the live-bytes curve (best autocorrelation %.2f < %.2f); "
          "use --steps N or --step-annotation NAME",
          steps.best_score, analysis::kMinPeriodScore);
    case StepsFinding::kFewerThanTwoWhole:
      return "fewer than two whole steps in the trace";
    case StepsFinding::kOneTrainingStep:
      return "the trace holds one training step";
    case StepsFinding::kOneForwardPass:
      return absl::StrCat(
          "no repeated training step: the trace holds one forward pass (what repeats every ~",
          steps.finding_events,
          " events are its layers); give --step-annotation GLOB or --steps N to choose the step");
    case StepsFinding::kRepeatsInsideCalls:
      if (steps.finding_calls == 0) {
        return absl::StrCat(
            "no repeated training step: no backward pass, optimizer step or call of the model "
            "repeats with what repeats every ~",
            steps.finding_events,
            " events; give --step-annotation GLOB or --steps N to choose the step");
      }
      return absl::StrCat(
          "no repeated training step: what repeats every ~", steps.finding_events,
          " events lies inside the trace's ", steps.finding_calls,
          " calls of the model (their layers), and no backward pass or optimizer step repeats; "
          "give --step-annotation GLOB or --steps N to choose the step");
  }
  return "";
}

absl::StatusOr<analysis::LeakReport> LeaksQuery(const LeaksRequest& request, Session& session) {
  analysis::LeakOptions options = request.options;
  options.group.categories = session.categories();
  auto r = analysis::AnalyzeTraceLeaks(session.snapshot(), options, request.steps);
  if (!r.ok()) return WithPath(session.path(), r.status());
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
                         analysis::LeakOptions options = request.options;
                         options.group.categories = s.categories();
                         auto p = analysis::SeriesPointOf(s.snapshot(), options);
                         if (!p.ok()) return WithPath(s.path(), p.status());
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
  analysis::LeakOptions options = request.options;
  options.group.categories = settings.categories;  // every file was read with these
  r.report = analysis::AnalyzeSeries(std::move(points), options);
  r.skipped = std::move(left_out.skipped);
  return r;
}

}  // namespace memsnap::query
