#include "memsnap/writer/trace_slice.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::writer {

namespace {

absl::Status BadBound(std::string_view flag, std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(
      Sv(flag), " ", Sv(text), ": ", Sv(why),
      "; use event:N (negative from the end), a time since the trace began (+250ms, 2s; -5s "
      "back from its end) or a time_us as recorded (abs:T)"));
}

bool ParseInt(std::string_view text, int64_t* out) {
  return !text.empty() && absl::SimpleAtoi(Sv(text), out);
}

}  // namespace

absl::StatusOr<SliceBound> ParseSliceBound(std::string_view text, std::string_view flag) {
  SliceBound b;
  b.flag = std::string(flag);
  b.text = std::string(text);
  if (text.empty()) return b;
  if (text.starts_with("event:")) {
    b.kind = SliceBound::Kind::kEvent;
    if (!ParseInt(text.substr(6), &b.value)) return BadBound(flag, text, "not an event index");
    return b;
  }
  std::string_view abs = text.starts_with("abs:") ? text.substr(4) : text;
  if (!abs.starts_with('+') && !abs.starts_with('-') && ParseInt(abs, &b.value)) {
    b.kind = SliceBound::Kind::kAbsTime;
    return b;
  }
  absl::StatusOr<int64_t> us = ParseDurationUs(text);
  if (!us.ok()) return BadBound(flag, text, ToStd(us.status().message()));
  b.kind = SliceBound::Kind::kTimeOffset;
  b.value = *us;
  return b;
}

absl::StatusOr<TraceSlice> ComputeSlice(const Snapshot& snap, const SliceBound& from,
                                        const SliceBound& to) {
  using Kind = SliceBound::Kind;
  bool timed = from.kind == Kind::kTimeOffset || from.kind == Kind::kAbsTime ||
               to.kind == Kind::kTimeOffset || to.kind == Kind::kAbsTime;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (const TraceEvent& e : snap.events) {
    if (!e.has_time()) continue;
    first = std::min(first, e.time_us);
    last = std::max(last, e.time_us);
  }
  if (timed && first > last) {
    return absl::InvalidArgumentError(
        "this snapshot's trace has no time_us (PyTorch < 2.2); slice by event index instead "
        "(--from event:N)");
  }
  auto to_time = [&](const SliceBound& b) -> int64_t {
    if (b.kind == Kind::kAbsTime) return b.value;
    return b.value >= 0 ? first + b.value : last + 1 + b.value;
  };
  for (const SliceBound* b : {&from, &to}) {
    const bool is_time = b->kind == Kind::kTimeOffset || b->kind == Kind::kAbsTime;
    if (!is_time) continue;
    const int64_t t = to_time(*b);
    if (t < first || t > last + 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          b->flag, " ", b->text, ": ",
          t < first ? "before the trace began" : "after the trace ended",
          ": the trace runs from time_us ", first, " to ", last, " (",
          FormatRelativeTime(last - first).substr(1), " long)",
          b->kind == Kind::kAbsTime && t < first ? "; for a time since it began write e.g. +250ms"
                                                 : ""));
    }
  }
  // An event index must fall inside at least one device's trace (devices differ in length).
  int64_t longest = 0;
  for (const DeviceTrace& t : snap.traces) longest = std::max<int64_t>(longest, t.size());
  for (const SliceBound* b : {&from, &to}) {
    if (b->kind == Kind::kEvent && longest > 0 && (b->value > longest || b->value < -longest)) {
      return absl::InvalidArgumentError(absl::StrCat(
          b->flag, " ", b->text, ": out of range: the longest device trace has ", longest,
          longest == 1 ? " event" : " events", " (event:0 to event:", longest - 1, ")"));
    }
  }
  TraceSlice out;
  if (timed) {
    if (from.kind == Kind::kTimeOffset || from.kind == Kind::kAbsTime)
      out.min_time_us = to_time(from);
    if (to.kind == Kind::kTimeOffset || to.kind == Kind::kAbsTime)
      out.max_time_us = to_time(to) - 1;
  }
  for (const DeviceTrace& t : snap.traces) {
    int64_t n = t.size();
    // Resolves one bound to an index in [0, n] of this trace.
    auto index = [&](const SliceBound& b, int64_t open) -> int64_t {
      switch (b.kind) {
        case Kind::kNone:
          return open;
        case Kind::kEvent:
          return std::clamp<int64_t>(b.value >= 0 ? b.value : n + b.value, 0, n);
        case Kind::kTimeOffset:
        case Kind::kAbsTime: {
          // time_us is monotonic within a device (docs/snapshot-format.md §4.10); events without a
          // time take the time of the event before them.
          int64_t limit = to_time(b);
          int64_t i = 0;
          while (i < n && (!snap.events[t.begin + i].has_time() ||
                           snap.events[t.begin + i].time_us < limit)) {
            ++i;
          }
          return i;
        }
      }
      return open;
    };
    int64_t b = index(from, 0);
    int64_t e = index(to, n);
    if (b > e) {
      auto where = [](const SliceBound& x, int64_t i) {
        const std::string ev = absl::StrCat("event:", i);
        return x.text == ev ? ev : absl::StrCat(x.text, " (", ev, ")");
      };
      return absl::InvalidArgumentError(absl::StrCat(from.flag, " ", where(from, b), " is after ",
                                                     to.flag, " ", where(to, e), " on device ",
                                                     t.device, ": nothing would be kept"));
    }
    out.ranges.push_back({t.begin + static_cast<uint32_t>(b), t.begin + static_cast<uint32_t>(e)});
    out.events += static_cast<uint64_t>(e - b);
    if (!timed) {  // event bounds: the time window is that of the events kept
      for (int64_t i = b; i < e; ++i) {
        const TraceEvent& ev = snap.events[t.begin + i];
        if (!ev.has_time()) continue;
        if (out.min_time_us == kNoTime || ev.time_us < out.min_time_us)
          out.min_time_us = ev.time_us;
        if (out.max_time_us == kNoTime || ev.time_us > out.max_time_us)
          out.max_time_us = ev.time_us;
      }
    }
  }
  return out;
}

}  // namespace memsnap::writer
