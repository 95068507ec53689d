#include "memsnap/report/perfetto.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"
#include "nlohmann/json.hpp"

namespace memsnap::report {

using analysis::DeviceTimeline;
using analysis::TimelinePoint;
using Json = nlohmann::ordered_json;

namespace {

/// Appends events to one JSON array, buffering and flushing to the stream in large chunks.
class EventSink {
 public:
  explicit EventSink(std::ostream& out) : out_(out) { buf_.reserve(kFlushAt + 4096); }
  void Add(std::string_view event) {
    buf_.append(first_ ? "\n" : ",\n");
    first_ = false;
    buf_.append(event.data(), event.size());
    if (buf_.size() >= kFlushAt) Flush();
  }
  void Raw(std::string_view text) { buf_.append(text.data(), text.size()); }
  void Flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  static constexpr size_t kFlushAt = 1 << 20;
  std::ostream& out_;
  std::string buf_;
  bool first_ = true;
};

std::string Quote(std::string_view s) {
  return Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string Counter(std::string_view name, int pid, int64_t ts, int64_t value) {
  return absl::StrCat("{\"ph\":\"C\",\"name\":", Quote(name), ",\"pid\":", pid,
                      ",\"tid\":0,\"ts\":", ts, ",\"args\":{\"bytes\":", value, "}}");
}

std::string Meta(std::string_view what, int pid, int tid, std::string_view name) {
  return absl::StrCat("{\"ph\":\"M\",\"name\":\"", Sv(what), "\",\"pid\":", pid, ",\"tid\":", tid,
                      ",\"args\":{\"name\":", Quote(name), "}}");
}

std::string StreamName(int64_t stream) {
  return stream == 0 ? "0 (default)" : FormatAddress(static_cast<uint64_t>(stream));
}

/// Packs intervals [begin, end] into lanes where slices on one lane are disjoint or, with
/// `nest`, properly nested (what trace viewers need of "X" events on one thread): each goes to the
/// first lane whose innermost open interval ends before it starts (or contains it). Annotations
/// nest; allocations do not, as nesting would read as "allocated inside". `intervals` must be
/// sorted by begin; returns the lane of each.
std::vector<int> PackLanes(const std::vector<std::pair<int64_t, int64_t>>& intervals, bool nest,
                           int& lanes) {
  std::vector<int> lane(intervals.size());
  std::vector<std::vector<int64_t>> open;  // per lane: ends of the open (nested) intervals
  for (size_t i = 0; i < intervals.size(); ++i) {
    const auto [begin, end] = intervals[i];
    size_t l = 0;
    for (; l < open.size(); ++l) {
      std::vector<int64_t>& ends = open[l];
      while (!ends.empty() && ends.back() <= begin) ends.pop_back();
      if (ends.empty() || (nest && end <= ends.back())) break;
    }
    if (l == open.size()) open.emplace_back();
    open[l].push_back(end);
    lane[i] = static_cast<int>(l);
  }
  lanes = static_cast<int>(open.size());
  return lane;
}

struct Clock {
  bool has_time = false;
  int64_t t0 = 0;
  /// ts of point `p`: its event's, the first event's for the start.
  int64_t Ts(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p) const {
    const uint32_t e = p.event().value_or(0);
    if (!has_time) return e;
    return snap.events[dt.event_begin + e].time_us - t0;
  }
};

/// Writes "live stream S" / "reserved stream S" counters of one device from its lifetimes.
int64_t WriteStreamCounters(const Snapshot& snap, const DeviceTimeline& dt, const Clock& clock,
                            int pid, EventSink& sink) {
  struct Change {
    uint32_t event;
    int64_t stream;
    int64_t delta;
    bool reserved;
  };
  std::vector<Change> changes;
  std::map<std::pair<bool, int64_t>, int64_t> value;  // (reserved, stream) -> bytes
  for (const auto& b : dt.blocks) {
    if (std::optional<uint32_t> a = b.alloc_event.index())
      changes.push_back({*a, b.stream, b.requested_size, false});
    else
      value[{false, b.stream}] += b.requested_size;
    if (std::optional<uint32_t> f = b.free_completed_event.index()) {
      changes.push_back({*f, b.stream, -b.requested_size, false});
    }
  }
  for (const auto& s : dt.segments) {
    if (std::optional<uint32_t> begin = s.begin_event.index())
      changes.push_back({*begin, s.stream, s.size, true});
    else
      value[{true, s.stream}] += s.size;
    if (std::optional<uint32_t> end = s.end_event.index())
      changes.push_back({*end, s.stream, -s.size, true});
    value.try_emplace({false, s.stream}, 0);
  }
  std::map<int64_t, int> streams;
  for (const auto& [key, v] : value) streams[key.second] = 0;
  for (const auto& c : changes) streams[c.stream] = 0;
  if (streams.size() < 2) return 0;
  std::stable_sort(changes.begin(), changes.end(),
                   [](const Change& a, const Change& b) { return a.event < b.event; });
  auto name = [](bool reserved, int64_t stream) {
    return absl::StrCat(reserved ? "reserved stream " : "live stream ", StreamName(stream));
  };
  int64_t written = 0;
  int64_t ts0 = clock.Ts(snap, dt, TimelinePoint::Start());
  for (const auto& [key, v] : value) {
    sink.Add(Counter(name(key.first, key.second), pid, ts0, v));
    ++written;
  }
  for (size_t i = 0; i < changes.size(); ++i) {
    const Change& c = changes[i];
    int64_t& v = value[{c.reserved, c.stream}];
    v += c.delta;
    // Only the last change of a (event, track) pair is visible; write once per event and track.
    bool last_here = true;
    for (size_t k = i + 1; k < changes.size() && changes[k].event == c.event; ++k) {
      if (changes[k].stream == c.stream && changes[k].reserved == c.reserved) last_here = false;
    }
    if (!last_here) continue;
    sink.Add(Counter(name(c.reserved, c.stream), pid,
                     clock.Ts(snap, dt, TimelinePoint::After(c.event)), v));
    ++written;
  }
  return written;
}

Json StackArg(const Snapshot& snap, const analysis::LifetimeSites& sites, StackId stack,
              int max_frames) {
  Json frames = Json::array();
  if (!stack.valid()) return frames;
  auto it = sites.stacks.find(stack.v);
  if (it == sites.stacks.end()) return frames;
  for (FrameId f : it->second) {
    if (static_cast<int>(frames.size()) >= max_frames) {
      frames.push_back("...");
      break;
    }
    frames.push_back(analysis::DisplayFrameText(snap, f));
  }
  return frames;
}

void WriteSlices(const Snapshot& snap, const DeviceTimeline& dt, const Clock& clock, int pid,
                 const query::DeviceSlices& slices, const PerfettoOptions& options, EventSink& sink,
                 PerfettoStats& stats) {
  if (dt.num_events == 0) return;
  const std::vector<uint32_t>& order = slices.lifetimes;  // the largest, chosen by the query
  const size_t n = order.size();
  int64_t end_ts = clock.Ts(snap, dt, TimelinePoint::End(dt.num_events));
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (uint32_t i : order) {
    const auto& b = dt.blocks[i];
    int64_t t0 = clock.Ts(snap, dt, b.live_from());
    int64_t t1 = b.free_completed_event.seen()
                     ? clock.Ts(snap, dt, b.free_completed_event.PointOr({}))
                     : end_ts;
    spans.emplace_back(t0, std::max(t0, t1));
  }
  std::vector<size_t> by_start(n);
  for (size_t k = 0; k < n; ++k) by_start[k] = k;
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](size_t a, size_t b) { return spans[a].first < spans[b].first; });
  std::vector<std::pair<int64_t, int64_t>> sorted;
  for (size_t k : by_start) sorted.push_back(spans[k]);
  int lanes = 0;
  std::vector<int> lane = PackLanes(sorted, /*nest=*/false, lanes);
  stats.lanes += lanes;
  for (int l = 0; l < lanes; ++l) {
    sink.Add(Meta("thread_name", pid, 100 + l, absl::StrCat("allocations ", l)));
  }
  for (size_t j = 0; j < n; ++j) {
    const size_t k = by_start[j];  // the slice's index in the query's order
    const auto& b = dt.blocks[order[k]];
    const auto& [t0, t1] = sorted[j];
    // Slices are named by site, distinct among this device's slices.
    const std::string& site = slices.sites.labels[slices.sites.site[k]];
    std::string name = absl::StrCat(FormatBytes(b.requested_size), " ", site);
    Json args;
    args["site"] = site;
    args["category"] = std::string(slices.sites.categories.Name(slices.sites.category[k]));
    args["requested_bytes"] = b.requested_size;
    args["rounded_bytes"] = b.rounded_size;
    args["address"] = FormatAddress(b.address);
    args["stream"] = StreamName(b.stream);
    args["class"] = std::string(analysis::LifetimeClassName(b.cls));
    // What the program said about the allocation: its entry's metadata and torch.compile region.
    if (const EventExtra* x = analysis::AllocExtraOf(snap, dt, b)) {
      if (x->user_metadata.valid()) args["user_metadata"] = snap.strings.Get(x->user_metadata);
      if (x->compile_context.valid()) {
        args["compile_context"] = snap.strings.Get(x->compile_context);
      }
    }
    // A pre-window lifetime's stack is its free's: the allocation is older than the trace.
    args[b.cls == analysis::LifetimeClass::kPreWindow ? "free_stack" : "stack"] =
        StackArg(snap, slices.sites, b.stack, options.max_stack_frames);
    sink.Add(absl::StrCat(
        "{\"ph\":\"X\",\"name\":", Quote(name), ",\"cat\":\"allocation\",\"pid\":", pid,
        ",\"tid\":", 100 + lane[j], ",\"ts\":", t0, ",\"dur\":", t1 - t0,
        ",\"args\":", Sv(args.dump(-1, ' ', false, Json::error_handler_t::replace)), "}"));
    ++stats.slice_events;
  }
}

}  // namespace

namespace {

void WriteAnnotations(const Snapshot& snap, const Clock& clock, EventSink& sink,
                      PerfettoStats& stats) {
  if (!clock.has_time) return;  // annotations carry times; a trace without times has no clock
  std::map<int32_t, std::vector<const Annotation*>> by_device;
  for (const Annotation& a : snap.annotations) {
    if (a.time_us != kNoTime) by_device[a.device].push_back(&a);
  }
  for (auto& [device, list] : by_device) {
    std::stable_sort(list.begin(), list.end(), [](const Annotation* a, const Annotation* b) {
      return a->time_us < b->time_us;
    });
    int pid = device + 1;
    // START/END pairs by name (innermost open one first); an END without START is an instant.
    std::map<std::string_view, std::vector<int64_t>> open;
    struct Range {
      int64_t begin, end;
      std::string_view name;
    };
    std::vector<Range> ranges;
    int64_t last_ts = 0;
    for (const Annotation* a : list) {
      std::string_view stage = a->stage.valid() ? snap.strings.Get(a->stage) : "";
      std::string_view name = a->name.valid() ? snap.strings.Get(a->name) : "";
      int64_t ts = a->time_us - clock.t0;
      last_ts = std::max(last_ts, ts);
      if (stage == "START") {
        open[name].push_back(ts);
      } else if (auto it = open.find(name); it != open.end() && !it->second.empty()) {
        ranges.push_back({it->second.back(), ts, name});
        it->second.pop_back();
      } else {
        sink.Add(absl::StrCat("{\"ph\":\"i\",\"name\":", Quote(name),
                              ",\"cat\":\"annotation\",\"pid\":", pid, ",\"tid\":10,\"ts\":", ts,
                              ",\"s\":\"t\"}"));
        ++stats.annotation_events;
      }
    }
    for (const auto& [name, starts] : open) {
      for (int64_t b : starts) ranges.push_back({b, std::max(b, last_ts), name});
    }
    std::stable_sort(ranges.begin(), ranges.end(),
                     [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::vector<std::pair<int64_t, int64_t>> spans;
    for (const Range& r : ranges) spans.emplace_back(r.begin, r.end);
    int lanes = 0;
    std::vector<int> lane = PackLanes(spans, /*nest=*/true, lanes);
    for (int l = 0; l < std::max(lanes, 1); ++l) {
      sink.Add(Meta("thread_name", pid, 10 + l, absl::StrCat("annotations ", l)));
    }
    for (size_t i = 0; i < ranges.size(); ++i) {
      sink.Add(absl::StrCat("{\"ph\":\"X\",\"name\":", Quote(ranges[i].name),
                            ",\"cat\":\"annotation\",\"pid\":", pid, ",\"tid\":", 10 + lane[i],
                            ",\"ts\":", ranges[i].begin,
                            ",\"dur\":", ranges[i].end - ranges[i].begin, "}"));
      ++stats.annotation_events;
    }
  }
}

}  // namespace

absl::StatusOr<PerfettoStats> WritePerfettoTrace(const Snapshot& snap,
                                                 const analysis::Timeline& timeline,
                                                 const query::ExportResult& lifetimes,
                                                 const PerfettoOptions& options,
                                                 std::ostream& out) {
  PerfettoStats stats;
  // One clock for all devices: times since the earliest event, when every traced device has them.
  Clock clock;
  bool any_events = false;
  clock.has_time = true;
  clock.t0 = std::numeric_limits<int64_t>::max();
  for (const DeviceTimeline& dt : timeline.devices) {
    if (dt.num_events == 0) continue;
    any_events = true;
    if (!dt.has_time) clock.has_time = false;
    for (uint32_t i = 0; i < dt.num_events && dt.has_time; ++i) {
      clock.t0 = std::min(clock.t0, snap.events[dt.event_begin + i].time_us);
    }
  }
  // Annotations may start before the first allocator event.
  for (const Annotation& a : snap.annotations) {
    if (clock.has_time && a.time_us != kNoTime) clock.t0 = std::min(clock.t0, a.time_us);
  }
  if (!any_events) {
    clock.has_time = false;  // final state only: one counter point per device at ts 0
  }
  if (!clock.has_time) clock.t0 = 0;

  EventSink sink(out);
  sink.Raw("{\"traceEvents\":[");
  std::map<int32_t, bool> pids;
  for (const DeviceTimeline& dt : timeline.devices) pids[dt.device] = true;
  for (const Annotation& a : snap.annotations) pids[a.device] = true;
  for (const auto& [device, unused] : pids) {
    sink.Add(Meta("process_name", device + 1, 0, absl::StrCat("cuda:", device)));
    sink.Add(absl::StrCat("{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":", device + 1,
                          ",\"tid\":0,\"args\":{\"sort_index\":", device, "}}"));
  }
  for (size_t d = 0; d < timeline.devices.size(); ++d) {
    const DeviceTimeline& dt = timeline.devices[d];
    int pid = dt.device + 1;
    if (dt.num_events == 0) {
      sink.Add(Counter("live", pid, 0, dt.end_requested));
      sink.Add(Counter("reserved", pid, 0, dt.end_reserved));
      stats.counter_events += 2;
      continue;
    }
    // Device counters: the start state, then each change (several events may share one ts; the
    // last one written wins, which is the state after them).
    int64_t ts0 = clock.Ts(snap, dt, TimelinePoint::Start());
    int64_t last_live = dt.start_requested, last_res = dt.start_reserved;
    sink.Add(Counter("live", pid, ts0, last_live));
    sink.Add(Counter("reserved", pid, ts0, last_res));
    stats.counter_events += 2;
    const TraceEvent* events = snap.events.data() + dt.event_begin;
    const std::optional<analysis::LiveCurveRef> curve = dt.live_curve();
    if (!curve) return absl::InternalError("the Perfetto trace needs a timeline with its curve");
    analysis::ReservedCursor reserved(dt);
    for (uint32_t e = 0; e < dt.num_events; ++e) {
      const TimelinePoint p = TimelinePoint::After(e);
      int64_t ts = clock.Ts(snap, dt, p);
      if (curve->At(p) != last_live) {
        last_live = curve->At(p);
        sink.Add(Counter("live", pid, ts, last_live));
        ++stats.counter_events;
      }
      if (reserved.At(p) != last_res) {
        last_res = reserved.At(p);
        sink.Add(Counter("reserved", pid, ts, last_res));
        ++stats.counter_events;
      }
      if (events[e].action == Action::kOom) {
        sink.Add(absl::StrCat("{\"ph\":\"i\",\"name\":\"OOM\",\"cat\":\"oom\",\"pid\":", pid,
                              ",\"tid\":0,\"ts\":", ts,
                              ",\"s\":\"p\",\"args\":{\"requested_bytes\":", events[e].size,
                              ",\"device_free_bytes\":", events[e].addr,
                              ",\"stream\":", Quote(StreamName(snap.StreamOf(events[e]))), "}}"));
        ++stats.instant_events;
      }
    }
    if (options.per_stream) {
      stats.counter_events += WriteStreamCounters(snap, dt, clock, pid, sink);
    }
    if (d < lifetimes.slices.size()) {
      WriteSlices(snap, dt, clock, pid, lifetimes.slices[d], options, sink, stats);
    }
  }
  WriteAnnotations(snap, clock, sink, stats);
  Json other;
  other["generator"] = "memsnap";
  other["source"] = snap.source.path;
  other["clock"] = clock.has_time ? "microseconds since the first event" : "event index";
  if (clock.has_time) other["t0_us"] = clock.t0;
  sink.Raw(absl::StrCat("\n],\"displayTimeUnit\":\"ms\",\"otherData\":",
                        Sv(other.dump(-1, ' ', false, Json::error_handler_t::replace)), "}\n"));
  sink.Flush();
  if (!out) return absl::DataLossError("writing the trace failed");
  return stats;
}

}  // namespace memsnap::report
