// Renderers of `memsnap oom` (and of the OOM explanation `check --fits` prints on failure).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/allocator/oom.h"
#include "memsnap/report/answer.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

/// The `oom --json` object: {"file", "device_memory_bytes", "ooms": [{"device", "event_index",
/// "time_us", "requested_bytes", "device_free_bytes", "reserved_bytes", "allocated_bytes",
/// "verdict", "largest_free_block_bytes", "holders": [{"site", "category", "bytes"}],
/// "remedies": [{"conf", "fits", "peak_reserved_bytes"}], "shortfall_bytes"}, ...]} plus the
/// fields docs/oom.md lists (relative time, rounded size, pool, the retry, "devices").
nlohmann::ordered_json OomToJson(const analysis::OomReport& report);

/// The whole explanation: per device its capacity, each OOM (request, state, retry, verdict,
/// holders, shortfall and levers) and the remedies table.
void RenderOomText(const analysis::OomReport& report, std::ostream& out);

/// One line of a device's answer: "answer" (why it fails), "fix" (the setting that fits, or the
/// memory the run needs) and "cut" (what has to shrink when no setting fits).
using OomAnswerLine = AnswerLine;

/// The device's answer (analysis::OomDevice::answer) in those lines, ahead of the evidence
/// (RenderOomText opens each device with them; the HTML report shows them above the timeline).
/// Empty when nothing fails on the device.
std::vector<OomAnswerLine> OomAnswerLines(const analysis::OomReport& report,
                                          const analysis::OomDevice& device);

/// The verdict of one failure as a sentence with the figures that prove it ("demand: the live
/// blocks (60.0 MiB) plus this request (10.0 MiB) come to ..."): `oom`'s verdict line and JSON
/// `verdict_text`.
std::string OomVerdictText(const analysis::OomExplanation& oom);

/// What a holder of memory of this kind could do about it in a run of `workload`, as one short
/// phrase ("activation checkpointing or a smaller batch"); empty where analysis::HasLever is
/// false. A run without a backward pass gets no lever that works through one (checkpointing),
/// and its weights are quantized or offloaded rather than sharded for training.
std::string_view CategoryLever(analysis::Category category,
                               analysis::Workload workload = analysis::Workload::kTraining);

/// One OOM in a few lines (verdict, holders, what fits): the failure text of `check --fits`.
std::string OomBrief(const analysis::OomReport& report);

/// "event:1117 (+0.912 s)", "event:3", or "before the trace (re-creating the blocks alive then)".
std::string OomWhere(const analysis::OomExplanation& oom);
// The notes of a report (devices left out) and of one device (blocks from before the trace,
// failures not explained), one sentence each.
std::vector<std::string> OomReportNotes(const analysis::OomReport& report);
std::vector<std::string> OomDeviceNotes(const analysis::OomDevice& device);
// "--device-memory" or "oom entry (device_free + reserved)", as JSON's capacity_source.
std::string_view CapacitySourceName(analysis::CapacitySource source);
// OomWhere with its preposition: "at event:12 (+1.5 s)", or "before the trace (...)".
std::string OomWhereAt(const analysis::OomExplanation& oom);

}  // namespace memsnap::report
