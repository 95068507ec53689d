#include "memsnap/writer/trace_slice.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/strings.h"

namespace memsnap::writer {

namespace {

absl::Status BadBound(std::string_view text) {
  return absl::InvalidArgumentError(absl::StrCat(
      "bad range bound '", Sv(text),
      "': use event:N (event index, negative from the end), a time offset like 1500 (µs), 250ms, "
      "2s or -5s (from the end), or abs:T (a time_us value)"));
}

bool ParseInt(std::string_view text, int64_t* out) {
  return !text.empty() && absl::SimpleAtoi(Sv(text), out);
}

}  // namespace

absl::StatusOr<SliceBound> ParseSliceBound(std::string_view text) {
  SliceBound b;
  if (text.empty()) return b;
  if (text.starts_with("event:")) {
    b.kind = SliceBound::Kind::kEvent;
    if (!ParseInt(text.substr(6), &b.value)) return BadBound(text);
    return b;
  }
  if (text.starts_with("abs:")) {
    b.kind = SliceBound::Kind::kAbsTime;
    if (!ParseInt(text.substr(4), &b.value)) return BadBound(text);
    return b;
  }
  struct Unit {
    std::string_view suffix;
    int64_t us;
  };
  static constexpr Unit kUnits[] = {{"us", 1}, {"µs", 1}, {"ms", 1000}, {"min", 60'000'000},
                                    {"s", 1'000'000}};
  int64_t scale = 1;
  std::string_view number = text;
  for (const Unit& u : kUnits) {
    if (text.ends_with(u.suffix)) {
      number = text.substr(0, text.size() - u.suffix.size());
      scale = u.us;
      break;
    }
  }
  double v = 0;
  if (number.empty() || !absl::SimpleAtod(Sv(number), &v) || !(v == v)) return BadBound(text);
  b.kind = SliceBound::Kind::kTimeOffset;
  b.value = static_cast<int64_t>(v * static_cast<double>(scale));
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
  TraceSlice out;
  if (timed) {
    if (from.kind == Kind::kTimeOffset || from.kind == Kind::kAbsTime) out.min_time_us = to_time(from);
    if (to.kind == Kind::kTimeOffset || to.kind == Kind::kAbsTime) out.max_time_us = to_time(to) - 1;
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
          // time_us is monotonic within a device (snapshot-format.md §4.10); events without a
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
    int64_t e = std::max(b, index(to, n));
    out.ranges.push_back({t.begin + static_cast<uint32_t>(b), t.begin + static_cast<uint32_t>(e)});
    out.events += static_cast<uint64_t>(e - b);
    if (!timed) {  // event bounds: the time window is that of the events kept
      for (int64_t i = b; i < e; ++i) {
        const TraceEvent& ev = snap.events[t.begin + i];
        if (!ev.has_time()) continue;
        if (out.min_time_us == kNoTime || ev.time_us < out.min_time_us) out.min_time_us = ev.time_us;
        if (out.max_time_us == kNoTime || ev.time_us > out.max_time_us) out.max_time_us = ev.time_us;
      }
    }
  }
  return out;
}

}  // namespace memsnap::writer
