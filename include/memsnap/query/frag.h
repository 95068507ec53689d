// `frag`: fragmentation of the allocator's segments at a moment, the answer (what it costs at the
// reserved peak) and the setting that lowers the peak, found by replay. Over several files: each
// rank's headline figures, with the outliers.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/query/session.h"

namespace memsnap::query {

struct FragRequest {
  analysis::FragOptions options;        // the moment (and its text), timeline samples
  bool replay = true;                   // search the setting behind the answer's `fix` line
  std::vector<std::string> candidates;  // empty: the default candidates
  analysis::FitStart start = analysis::FitStart::kRecorded;  // where the replays start (fit.h)
  int threads = 0;                                           // replays at once; 0: all cores
};

/// Frag reads only the timeline's peaks and moments: no lifetimes are kept.
Needs FragNeeds();
/// The report, with `fixes` filled when request.replay and the file has a trace (not for a
/// fragmentation timeline).
absl::StatusOr<analysis::FragReport> FragQuery(const FragRequest& request, Session& session);

struct FragRanksResult {
  std::string at;  // the moment as asked ("end", "peak", "event:12")
  analysis::FragMoment moment = analysis::FragMoment::kEnd;
  analysis::RankTable table;
  std::vector<analysis::FragRank> ranks;  // in input order: their answers are the verdict notes
};
absl::StatusOr<FragRanksResult> FragRanksQuery(const FragRequest& request,
                                               const std::vector<InputFile>& files,
                                               const ReadSettings& settings);

}  // namespace memsnap::query
