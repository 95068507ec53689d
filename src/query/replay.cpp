#include "memsnap/query/replay.h"

#include "memsnap/util/status_macros.h"

namespace memsnap::query {

absl::StatusOr<std::vector<analysis::ReplayConfig>> ReplayConfigs(const ReplayRequest& request,
                                                                  const Snapshot& snap) {
  sim::AllocatorConfig recorded = sim::ConfigFromSettings(snap.settings);
  std::vector<analysis::ReplayConfig> out = {{"recorded", recorded}};
  std::vector<std::string> confs;
  if (request.allocator == "native") confs.push_back("expandable_segments:False");
  if (request.allocator == "expandable") confs.push_back("expandable_segments:True");
  if (request.allocator == "cudaMallocAsync") confs.push_back("backend:cudaMallocAsync");
  confs.insert(confs.end(), request.confs.begin(), request.confs.end());
  for (const std::string& sweep : request.sweeps) {
    ASSIGN_OR_RETURN(std::vector<std::string> expanded, analysis::ExpandSweep(sweep));
    confs.insert(confs.end(), expanded.begin(), expanded.end());
  }
  RETURN_IF_ERROR(analysis::AppendConfs(recorded, confs, out));
  return out;
}

absl::StatusOr<analysis::ReplayReport> ReplayQuery(const ReplayRequest& request, Session& session) {
  const Snapshot& snap = session.snapshot();
  ASSIGN_OR_RETURN(std::vector<analysis::ReplayConfig> configs, ReplayConfigs(request, snap));
  absl::StatusOr<analysis::ReplayReport> rep = analysis::Replay(snap, configs, request.options);
  if (!rep.ok()) {
    return WithPath(session.path(), rep.status());
  }
  return rep;
}

absl::StatusOr<analysis::ReportAnalysis> ReportQuery(const analysis::ReportAnalysisOptions& options,
                                                     Session& session) {
  analysis::ReportAnalysisOptions with = options;
  with.group.categories = session.categories();
  return analysis::AnalyzeForReport(session.snapshot(), with);
}

absl::StatusOr<analysis::DiffReportAnalysis> DiffReportQuery(
    const analysis::ReportAnalysisOptions& options, Session& before, Session& after) {
  analysis::ReportAnalysisOptions with = options;
  with.group.categories = before.categories();  // both read with the same settings
  return analysis::AnalyzeDiffForReport(before.snapshot(), after.snapshot(), with);
}

}  // namespace memsnap::query
