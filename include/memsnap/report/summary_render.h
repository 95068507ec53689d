#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "memsnap/analysis/sites/categories.h"
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/query/summary.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The summary's findings worth a user's attention, in words and a fixed order: per device, where
/// the trace begins (TraceStartWarning) and the blocks still live that were allocated before it;
/// then the file's own ring-buffer flag. "warnings" in text; in JSON `warnings` is the reader's
/// warnings (SummaryReport::read_warnings, which the text leaves on stderr) and then these.
std::vector<std::string> SummaryWarnings(const analysis::SummaryReport& report);

/// Where a device's trace begins, given `blocks` freed in it but allocated before it (and their
/// bytes when known, or -1): "device 0: the trace begins mid-run (438 blocks are freed in it but
/// were allocated before it)", or the ring buffer's overflow. `summary` and `frag` (and the page,
/// through frag's warnings) write it with this one function.
std::string TraceStartWarning(int32_t device, analysis::TraceStart why, int64_t blocks,
                              int64_t bytes);

/// The `summary --json` object: segments, blocks, reserved_bytes, allocated_bytes, active_bytes,
/// requested_bytes, trace_entries, actions, unique_stacks, unique_frames, devices[...].
nlohmann::ordered_json SummaryToJson(const analysis::SummaryReport& report);

/// Human-readable summary with aligned columns.
/// `warnings` = false (-q) leaves out the warnings section.
void RenderSummaryText(const analysis::SummaryReport& report, std::ostream& out,
                       bool warnings = true);

/// The categories of the memory live at the peak (each device at its own; at the end for devices
/// without a trace), largest first, with shares of the device's live bytes; named in `names`.
void RenderCategoriesAtText(const std::vector<analysis::DeviceCategories>& devices,
                            const analysis::CategoryNames& names, std::ostream& out);
/// [{"device", "event_index" (null: before the trace), "live_bytes", "categories": {...}}].
nlohmann::ordered_json CategoriesAtJson(const std::vector<analysis::DeviceCategories>& devices,
                                        const analysis::CategoryNames& names);

/// Shared by renderers: the JSON form of allocator settings and pool ids.
/// `summary --json` of one file: SummaryToJson with "categories_at_peak".
nlohmann::ordered_json SummaryResultToJson(const query::SummaryResult& result);
/// The same in text: the summary, then the categories at the peak.
void RenderSummaryResultText(const query::SummaryResult& result, std::ostream& out);
/// `summary --json` of several files: "files" (each SummaryToJson), "ranks", "skipped"; with one
/// file left (the others skipped), that file's SummaryToJson with "skipped".
nlohmann::ordered_json SummaryRanksToJson(const query::SummaryRanksResult& result);
/// The per-rank table (and with `each`, every file's summary first); one file left: its summary.
void RenderSummaryRanksText(const query::SummaryRanksResult& result, bool each, bool warnings,
                            std::ostream& out);

nlohmann::ordered_json SettingsToJson(const AllocatorSettings& settings);
std::string PoolName(const PoolId& pool);

}  // namespace memsnap::report
