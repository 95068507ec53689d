// `memsnap export --format perfetto`: the Chrome trace-event JSON that ui.perfetto.dev and
// chrome://tracing open
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
//
//   {"traceEvents":[
//     {"ph":"M","name":"process_name","pid":1,"tid":0,"args":{"name":"cuda:0"}},
//     {"ph":"C","name":"live","pid":1,"tid":0,"ts":0,"args":{"bytes":4000000}},      counters
//     {"ph":"C","name":"reserved","pid":1,"tid":0,"ts":0,"args":{"bytes":20971520}},
//     {"ph":"X","name":"3.8 MiB model.py:20 forward","pid":1,"tid":100,"ts":10,"dur":30,...},
//     {"ph":"X","name":"train_step","pid":1,"tid":10,"ts":0,"dur":60},                 annotation
//     {"ph":"i","name":"OOM","pid":1,"tid":0,"ts":50,"s":"p","args":{...}}],
//    "displayTimeUnit":"ms","otherData":{...}}
//
// One process per device (pid = device + 1). Counter tracks: "live" (requested bytes of live
// blocks, the same curve as `memsnap timeline`) and "reserved", plus "live stream S" and
// "reserved stream S" when the device used more than one stream. The device counters end at the
// snapshot's live and reserved bytes. Slices: the largest lifetimes, greedily packed into lanes
// (tid 100 + lane) so that slices on one lane never overlap; their args carry size, address,
// stream, site, category and the allocation stack. Annotations (record_function / external
// annotations) are slices on tids 10+. ts is microseconds since the first event (every device on
// one clock); a trace without times uses the event index as ts.
#pragma once

#include <cstdint>
#include <ostream>

#include "absl/status/statusor.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/query/export.h"

namespace memsnap::report {

struct PerfettoOptions {
  bool per_stream = true;     // per-stream counters when a device used several streams
  int max_stack_frames = 64;  // frames kept in a slice's "stack" arg
};

/// What was written (for --json and tests).
struct PerfettoStats {
  int64_t counter_events = 0;
  int64_t slice_events = 0;
  int64_t annotation_events = 0;
  int64_t instant_events = 0;
  int lanes = 0;  // allocation lanes used, all devices together
};

/// Streams the trace to `out`. `lifetimes` (query::ExportQuery, kPerfetto, over `timeline`) says
/// which lifetimes are slices, their sites (labels distinct among a device's slices), categories
/// and the frames their stacks keep. Errors: a failed stream.
absl::StatusOr<PerfettoStats> WritePerfettoTrace(const Snapshot& snap,
                                                 const analysis::Timeline& timeline,
                                                 const query::ExportResult& lifetimes,
                                                 const PerfettoOptions& options, std::ostream& out);

}  // namespace memsnap::report
