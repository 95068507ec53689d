#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/analysis/compose/rank_tables.h"
#include "memsnap/query/frag.h"
#include "memsnap/report/answer.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// Output options of `memsnap frag` (kept apart from the analysis options).
struct FragRenderOptions {
  int top = 20;           // segment-map rows; 0 = every segment
  int bar_width = 40;     // characters per segment bar
  bool timeline = false;  // print the timeline table instead of the report
};

/// The `frag --json` object: totals, devices, groups, what_fits, histogram, segments (all of
/// them), peaks, timeline, warnings. Byte figures end in _bytes.
nlohmann::ordered_json FragToJson(const analysis::FragReport& report);

/// A device's reconstruction caveats in words (0 to 2 sentences): `frag`'s warnings and the
/// page's "Reconstruction:" notes.
std::vector<std::string> RewindWarnings(const analysis::RewindCaveats& caveats);

/// The events a rewind could not undo consistently, in words ("3 alloc(s) of a block not live,
/// ..."): frag's warning and convert's, when a slice's state is approximate.
std::string UndoProblemsText(const analysis::UndoProblems& problems);

/// Every device's RewindWarnings, in device order: `warnings` in `frag --json`, text and ranks.
std::vector<std::string> FragWarnings(const analysis::FragReport& report);

/// The human-readable report: totals, free space per pool and stream, what fits, peaks, the
/// free-block histogram and the segment map (`options.top` largest segments).
void RenderFragText(const analysis::FragReport& report, const FragRenderOptions& options,
                    std::ostream& out);

/// The fragmentation timeline as an aligned table.
void RenderFragTimelineText(const analysis::FragReport& report, std::ostream& out);

/// The fragmentation timeline as CSV with a header row.
void RenderFragTimelineCsv(const analysis::FragReport& report, std::ostream& out);

/// The answer that opens a device's report, in the user's terms (docs/fragmentation.md, "The
/// answer"): `answer` (what fragmentation costs at the reserved peak, and the verdict), `free`
/// (what held no live tensor: stranded vs releasable), `fix` (the allocator setting that lowers
/// the peak, proven by a replay, or why none is given) and, when the verdict is moderate or
/// large, `pinned by` (the sites whose live blocks keep the stranded space).
std::vector<AnswerLine> FragAnswer(const analysis::FragReport& report,
                                   const analysis::FragCost& cost);

/// One device's answer as JSON: the figures, verdict, pins, fix and the text lines.
nlohmann::ordered_json FragAnswerToJson(const analysis::FragReport& report,
                                        const analysis::FragCost& cost);

/// The figures object shared by JSON renderers (also used by `check`).
nlohmann::ordered_json FragFiguresToJson(const analysis::FragFigures& figures);

/// One rank's answer as `frag` over many files prints it: "small: 146.6 MiB (0.3%) at the peak",
/// ", device N" when the file has several; "" without an answer.
std::string FragRankVerdict(const analysis::FragRank& rank);

/// `frag` over many files: analysis::CompareFragRanks's table with its note columns, each
/// rank's verdict (FragRankVerdict) and, when a rank has reconstruction warnings, their count.
analysis::RankTable FragRanksTable(const std::vector<analysis::FragRank>& ranks);
/// `frag` over several files: the per-rank table as text (with the moment named), JSON
/// {"at", "ranks"} and CSV (one row per rank).
void RenderFragRanksText(const query::FragRanksResult& result, std::ostream& out);
nlohmann::ordered_json FragRanksToJson(const query::FragRanksResult& result);
void RenderFragRanksCsv(const query::FragRanksResult& result, std::ostream& out);

}  // namespace memsnap::report
