// The allocator's state at many moments of a trace (alloc_states.h): one backward pass over the
// device's events, as `frag --at` makes, materializing the layout at each wanted moment.
#include "memsnap/analysis/allocator/alloc_states.h"

#include <algorithm>
#include <array>
#include <bit>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"
#include "analysis/allocator/frag_layout.h"
#include "memsnap/sim/sizes.h"
#include "memsnap/util/format.h"

namespace memsnap::analysis {

namespace {

using frag_internal::LSegment;

// Tags the blocks live at the end with their lifetimes, found by their final block.
void TagFinal(const DeviceTimeline& dt, frag_internal::DeviceRewind& rw) {
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& b = dt.blocks[i];
    if (b.live_at_end()) rw.Tag(b.address, i);
  }
}

// A lifetime's free events in the order a table by event writes them: completed, then requested.
std::array<std::optional<uint32_t>, 2> FreeEventsOf(const BlockLifetime& b) {
  return {b.free_completed_event.index(), b.free_requested_event.index()};
}

// Undoes event i; a block it brings back is named by the lifetime the event frees.
void UndoTagged(frag_internal::DeviceRewind& rw, const TraceEvent& e, uint32_t i,
                FreedLifetimes& freed) {
  if (rw.Undo(e)) rw.Tag(e.addr, freed.At(i));
}

// The segment's runs, with free memory split the way SegmentFigures counts it.
StateSegment ToStateSegment(const LSegment& s, const FragFigures& f) {
  StateSegment out{s.address, s.size, s.stream, s.pool, s.is_small, s.is_expandable, {}};
  const bool released_whole = !s.is_expandable && f.allocated_bytes == 0;
  const int64_t page = s.is_small ? sim::kSmallBuffer : sim::kLargeBuffer;
  auto push = [&](StateSpan span) {
    if (span.size > 0) out.spans.push_back(span);
  };
  // Expandable segments: the whole pages inside each run of non-allocated blocks are releasable.
  size_t i = 0;
  while (i < s.blocks.size()) {
    const auto& b = s.blocks[i];
    if (b.state == BlockState::kActiveAllocated ||
        (b.state == BlockState::kActivePendingFree && !s.is_expandable)) {
      SpanKind kind =
          b.state == BlockState::kActiveAllocated ? SpanKind::kAllocated : SpanKind::kPendingFree;
      push({b.size, b.requested, kind, b.tag});
      ++i;
      continue;
    }
    if (!s.is_expandable) {
      push({b.size, 0, released_whole ? SpanKind::kFreeReleasable : SpanKind::kFreeStranded, -1});
      ++i;
      continue;
    }
    // A run of non-allocated blocks of an expandable segment.
    size_t j = i;
    int64_t run_begin = static_cast<int64_t>(b.address - s.address), run_end = run_begin;
    while (j < s.blocks.size() && s.blocks[j].state != BlockState::kActiveAllocated) {
      run_end += s.blocks[j].size;
      ++j;
    }
    int64_t first = sim::RoundUpSaturated(run_begin, page), last = run_end / page * page;
    if (last <= first) first = last = run_end;  // no whole page inside
    int64_t offset = run_begin;
    for (size_t k = i; k < j; ++k) {
      const auto& c = s.blocks[k];
      int64_t lo = offset, hi = offset + c.size;
      offset = hi;
      if (c.state == BlockState::kActivePendingFree) {
        push({c.size, c.requested, SpanKind::kPendingFree, c.tag});
        continue;
      }
      int64_t a = std::clamp(first, lo, hi), z = std::clamp(last, lo, hi);
      push({a - lo, 0, SpanKind::kFreeStranded, -1});
      push({z - a, 0, SpanKind::kFreeReleasable, -1});
      push({hi - z, 0, SpanKind::kFreeStranded, -1});
    }
    i = j;
  }
  return out;
}

struct SegmentHash {
  size_t operator()(const StateSegment& s) const {
    size_t h = absl::HashOf(s.address, s.size, s.stream, s.is_small, s.is_expandable);
    for (const StateSpan& p : s.spans) {
      h = absl::HashOf(h, p.size, p.requested, static_cast<int>(p.kind), p.lifetime);
    }
    return h;
  }
};

// The forward edits that turn `before` (the segments of a range before an event) into `after`
// (the same range after it), both in address order.
void AppendEdits(const std::vector<LSegment>& before, const std::vector<LSegment>& after,
                 std::vector<StateEdit>& out) {
  std::map<uint64_t, const LSegment*> old;
  for (const LSegment& s : before) old[s.address] = &s;
  for (const LSegment& s : after) {
    StateSegment now = ToStateSegment(s, frag_internal::SegmentFigures(s));
    auto it = old.find(s.address);
    if (it == old.end()) {
      out.push_back(StateEdit{StateEdit::Op::kSet, std::move(now), 0, 0});
      continue;
    }
    StateSegment was = ToStateSegment(*it->second, frag_internal::SegmentFigures(*it->second));
    old.erase(it);
    if (was.size != now.size || was.stream != now.stream || was.pool != now.pool ||
        was.is_small != now.is_small || was.is_expandable != now.is_expandable) {
      out.push_back(StateEdit{StateEdit::Op::kSet, std::move(now), 0, 0});
      continue;
    }
    if (was.spans == now.spans) continue;
    size_t front = 0;
    while (front < was.spans.size() && front < now.spans.size() &&
           was.spans[front] == now.spans[front]) {
      ++front;
    }
    size_t back = 0;
    while (back < was.spans.size() - front && back < now.spans.size() - front &&
           was.spans[was.spans.size() - 1 - back] == now.spans[now.spans.size() - 1 - back]) {
      ++back;
    }
    StateEdit e{StateEdit::Op::kSpans, now, static_cast<uint32_t>(front),
                static_cast<uint32_t>(was.spans.size() - front - back)};
    e.segment.spans.assign(now.spans.begin() + static_cast<std::ptrdiff_t>(front),
                           now.spans.end() - static_cast<std::ptrdiff_t>(back));
    out.push_back(std::move(e));
  }
  for (const auto& [address, seg] : old) {
    StateEdit e;
    e.op = StateEdit::Op::kRemove;
    e.segment.address = address;
    out.push_back(std::move(e));
  }
}

// The figures of a layout kept as its segments change: sums, and the largest free block as the
// largest of the segments' (a multiset), so that each event costs the segments it changes only.
class RunningFigures {
 public:
  void Add(uint64_t address, const FragFigures& f) {
    Remove(address);
    Apply(f, 1);
    largest_.insert(f.largest_free_bytes);
    by_segment_[address] = f;
  }
  void Remove(uint64_t address) {
    auto it = by_segment_.find(address);
    if (it == by_segment_.end()) return;
    Apply(it->second, -1);
    largest_.erase(largest_.find(it->second.largest_free_bytes));
    by_segment_.erase(it);
  }
  FragFigures Total() const {
    FragFigures t = sum_;
    t.largest_free_bytes = largest_.empty() ? 0 : *largest_.rbegin();
    return t;
  }

 private:
  void Apply(const FragFigures& f, int64_t sign) {
    for (auto field :
         {&FragFigures::segments, &FragFigures::blocks, &FragFigures::reserved_bytes,
          &FragFigures::allocated_bytes, &FragFigures::pending_free_bytes, &FragFigures::free_bytes,
          &FragFigures::requested_bytes, &FragFigures::internal_waste_bytes,
          &FragFigures::free_blocks, &FragFigures::stranded_bytes, &FragFigures::releasable_bytes,
          &FragFigures::free_segments}) {
      sum_.*field += sign * f.*field;
    }
  }
  FragFigures sum_;
  std::multiset<int64_t> largest_;
  std::map<uint64_t, FragFigures> by_segment_;
};

// The range of segments an event's undo can change: its own bytes, the segment holding its
// address, and the segments touching them (an unmap's undo merges with its neighbours).
std::pair<uint64_t, uint64_t> TouchedRange(const frag_internal::DeviceRewind& rw,
                                           const TraceEvent& e) {
  auto [begin, end] = rw.SegmentExtent(e.addr);
  begin = std::min(begin, e.addr);
  end = std::max(end, e.addr + static_cast<uint64_t>(std::max<int64_t>(e.size, 1)));
  return {begin > 0 ? begin - 1 : 0, end + 1};
}

}  // namespace

std::pair<int64_t, int64_t> FindStatePeaks(const Snapshot& snap, const DeviceTimeline& dt) {
  const DeviceTrace* trace = snap.TraceOf(dt.device);
  if (trace == nullptr || trace->size() == 0) return {-1, -1};
  return {dt.peak_reserved_event.index(), frag_internal::FindAllocatedPeak(snap, *trace)};
}

FreedLifetimes::FreedLifetimes(const DeviceTimeline& dt)
    : dt_(&dt), last_free_((dt.num_events + 63) / 64, 0) {
  auto last_free = [](const BlockLifetime& b) {
    std::optional<uint32_t> f = b.free_completed_event.index();
    return f ? f : b.free_requested_event.index();
  };
  for (const BlockLifetime& b : dt.blocks) {
    if (std::optional<uint32_t> f = last_free(b)) last_free_[*f / 64] |= uint64_t{1} << (*f % 64);
  }
  rank_.reserve(last_free_.size());
  uint32_t set = 0;
  for (uint64_t word : last_free_) {
    rank_.push_back(set);
    set += static_cast<uint32_t>(std::popcount(word));
  }
  lifetime_.assign(set, -1);
  // In the order a table by event would be written (each lifetime's completed free, then its
  // requested one), so that where lifetimes claim the same event the same one is named.
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    for (std::optional<uint32_t> f : FreeEventsOf(dt.blocks[i])) {
      if (f && IsLastFree(*f)) lifetime_[Rank(*f)] = static_cast<int32_t>(i);
    }
  }
}

uint32_t FreedLifetimes::Rank(uint32_t e) const {
  const uint64_t below = last_free_[e / 64] & ((uint64_t{1} << (e % 64)) - 1);
  return rank_[e / 64] + static_cast<uint32_t>(std::popcount(below));
}

int32_t FreedLifetimes::At(uint32_t e) {
  if (e < dt_->num_events && IsLastFree(e)) return lifetime_[Rank(e)];
  if (by_event_.empty()) {
    by_event_.assign(dt_->num_events, -1);
    for (uint32_t i = 0; i < dt_->blocks.size(); ++i) {
      for (std::optional<uint32_t> f : FreeEventsOf(dt_->blocks[i])) {
        if (f) by_event_[*f] = static_cast<int32_t>(i);
      }
    }
  }
  return e < by_event_.size() ? by_event_[e] : -1;
}

AllocatorStates ReconstructAllocatorStates(const Snapshot& snap, const DeviceTimeline& dt,
                                           const AllocatorStatesOptions& options) {
  return ReconstructAllocatorStates(snap, dt, options, FreedLifetimes(dt));
}

AllocatorStates ReconstructAllocatorStates(const Snapshot& snap, const DeviceTimeline& dt,
                                           const AllocatorStatesOptions& options,
                                           FreedLifetimes freed) {
  AllocatorStates out;
  out.device = dt.device;
  const DeviceTrace* trace = snap.TraceOf(dt.device);
  const int64_t n = trace != nullptr ? trace->size() : 0;
  auto events = trace != nullptr ? snap.EventsOf(*trace) : std::span<const TraceEvent>();

  // The moments: labelled ones, then evenly spaced ones.
  std::map<int64_t, std::vector<std::string>> labelled;
  // Without the caller's peaks, the allocated peak is found during the rewind below (issue 37: a
  // rewind of its own was a tenth of `report`), and labelled when it is known.
  const bool find_peak_a = n > 0 && !options.peaks;
  int64_t peak_r = -1;
  int64_t peak_a = -1;
  if (n > 0) {
    std::tie(peak_r, peak_a) =
        options.peaks ? *options.peaks : std::pair{dt.peak_reserved_event.index(), int64_t{-1}};
    labelled[peak_r].push_back("peak reserved");
    if (!find_peak_a) labelled[peak_a].push_back("peak allocated");
  }
  for (const auto& [p, label] : options.moments) {
    if (p.index() < n) labelled[p.index()].push_back(label);
  }
  labelled[n - 1].push_back("end");
  std::set<int64_t> even;
  const int64_t k = std::min<int64_t>(std::max(options.samples, 2), n + 1);
  for (int64_t j = 0; j < k && n > 0; ++j) even.insert(-1 + j * n / (k - 1));
  // The states around each labelled moment, by their distance from the nearest one.
  std::map<int64_t, int64_t> steps;  // event -> distance
  for (const auto& [e, labels] : labelled) {
    for (int64_t d = 1; d <= options.around && n > 0; ++d) {
      for (int64_t s : {e - d, e + d}) {
        if (s < -1 || s >= n || labelled.count(s)) continue;
        auto [it, inserted] = steps.try_emplace(s, d);
        if (!inserted) it->second = std::min(it->second, d);
      }
    }
  }

  // One backward pass; states are collected from the end.
  std::vector<AllocatorState> states;
  std::vector<StateSegment> distinct;
  absl::flat_hash_map<StateSegment, uint32_t, SegmentHash> ids;
  auto capture = [&](const std::vector<LSegment>& layout, int64_t e) {
    AllocatorState st;
    st.event = TimelinePoint::FromIndex(e);
    st.time_us = e >= 0 ? events[e].time_us : kNoTime;
    auto it = labelled.find(e);
    if (it != labelled.end()) st.labels = it->second;
    st.step = st.labels.empty() && steps.count(e) > 0 && !even.count(e);
    st.sample = frag_internal::SampleOf(layout, dt.device, e, st.time_us);
    for (const LSegment& s : layout) {
      StateSegment seg = ToStateSegment(s, frag_internal::SegmentFigures(s));
      auto [pos, inserted] = ids.try_emplace(seg, static_cast<uint32_t>(distinct.size()));
      if (inserted) distinct.push_back(std::move(seg));
      st.segments.push_back(pos->second);
    }
    states.push_back(std::move(st));
  };
  // The device's segments: the caller's index, or a scan of the file's.
  std::vector<uint32_t> scanned;
  if (options.segments == nullptr) scanned = frag_internal::SegmentsOf(snap, dt.device);
  const std::span<const uint32_t> own =
      options.segments != nullptr ? options.segments->Of(dt.device) : scanned;
  if (n == 0) {
    std::vector<LSegment> layout;
    std::map<uint64_t, int64_t> final_lifetime;
    for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
      if (dt.blocks[i].live_at_end()) final_lifetime[dt.blocks[i].address] = i;
    }
    for (auto& s : frag_internal::LayoutFromSnapshot(snap, own)) {
      for (auto& b : s.blocks) {
        auto it = final_lifetime.find(b.address);
        if (it != final_lifetime.end() && b.state != BlockState::kInactive) b.tag = it->second;
      }
      layout.push_back(std::move(s));
    }
    capture(layout, -1);
    states.back().labels = {"end"};
  } else {
    frag_internal::DeviceRewind rw(snap, dt.device, own);
    TagFinal(dt, rw);
    // The moments to capture, ascending; the pass below walks them down with a cursor rather
    // than asking three ordered containers at every event.
    std::vector<int64_t> wanted_events;
    for (const auto& [e, labels] : labelled) wanted_events.push_back(e);
    wanted_events.insert(wanted_events.end(), even.begin(), even.end());
    for (const auto& [e, d] : steps) wanted_events.push_back(e);
    std::sort(wanted_events.begin(), wanted_events.end());
    wanted_events.erase(std::unique(wanted_events.begin(), wanted_events.end()),
                        wanted_events.end());
    auto wanted = [&](int64_t i) {
      return std::binary_search(wanted_events.begin(), wanted_events.end(), i);
    };
    auto next_wanted = wanted_events.rbegin();  // the largest not above the event in hand
    // The allocated peak as FindAllocatedPeak defines it: going back, each moment at or above the
    // best so far is the candidate. A candidate no other moment captures is captured aside, while
    // the candidates' layouts cost less than about one rewind; past that, a second rewind to the
    // peak captures it.
    int64_t best_a = 0;
    std::optional<AllocatorState> candidate;
    int64_t capture_budget = n + 1024;
    // Every event's edit and figures, collected backwards (issue 36 §3).
    const bool with_stream = options.stream_max_events > 0 && n <= options.stream_max_events;
    std::vector<std::vector<StateEdit>> edits_of;
    std::vector<FragFigures> figures_of;
    RunningFigures running;
    if (with_stream) {
      edits_of.resize(static_cast<size_t>(n));
      figures_of.resize(static_cast<size_t>(n));
      for (const LSegment& s : rw.Layout())
        running.Add(s.address, frag_internal::SegmentFigures(s));
    }
    for (int64_t i = n - 1; i >= -1; --i) {
      while (next_wanted != wanted_events.rend() && *next_wanted > i) ++next_wanted;
      const bool wanted_here = next_wanted != wanted_events.rend() && *next_wanted == i;
      if (find_peak_a && (i == n - 1 || rw.allocated() >= best_a)) {
        best_a = rw.allocated();
        peak_a = i;
        candidate.reset();
        if (!wanted_here && capture_budget >= 0) {
          std::vector<LSegment> layout = rw.Layout();
          for (const LSegment& seg : layout) {
            capture_budget -= 1 + static_cast<int64_t>(seg.blocks.size());
          }
          if (capture_budget >= 0) {
            capture(layout, i);
            candidate = std::move(states.back());
            states.pop_back();
          }
        }
      }
      if (wanted_here) capture(rw.Layout(), i);
      if (i >= 0 && with_stream) {
        figures_of[static_cast<size_t>(i)] = running.Total();
        auto [begin, end] = TouchedRange(rw, events[i]);
        std::vector<LSegment> after = rw.LayoutIn(begin, end);
        UndoTagged(rw, events[i], static_cast<uint32_t>(i), freed);
        std::vector<LSegment> before = rw.LayoutIn(begin, end);
        AppendEdits(before, after, edits_of[static_cast<size_t>(i)]);
        for (const LSegment& s : after) running.Remove(s.address);
        for (const LSegment& s : before) running.Add(s.address, frag_internal::SegmentFigures(s));
      } else if (i >= 0) {
        UndoTagged(rw, events[i], static_cast<uint32_t>(i), freed);
      }
    }
    if (with_stream) {
      StateStream stream;
      stream.first_edit.reserve(static_cast<size_t>(n) + 1);
      for (std::vector<StateEdit>& edits : edits_of) {
        stream.first_edit.push_back(static_cast<uint32_t>(stream.edits.size()));
        for (StateEdit& e : edits) stream.edits.push_back(std::move(e));
      }
      stream.first_edit.push_back(static_cast<uint32_t>(stream.edits.size()));
      stream.figures = std::move(figures_of);
      out.stream = std::move(stream);
    }
    out.rewind = frag_internal::CaveatsOf(rw, dt.device, snap.settings, dt.num_events);
    if (find_peak_a) {
      if (!candidate && !wanted(peak_a)) {
        frag_internal::DeviceRewind again(snap, dt.device, own);
        TagFinal(dt, again);
        for (int64_t i = n - 1; i > peak_a; --i)
          UndoTagged(again, events[i], static_cast<uint32_t>(i), freed);
        capture(again.Layout(), peak_a);
        candidate = std::move(states.back());
        states.pop_back();
      }
      if (candidate) {
        // A moment of its own: its only label. States are in descending event order here.
        candidate->labels = {"peak allocated"};
        auto at = std::find_if(states.begin(), states.end(), [&](const AllocatorState& st) {
          return st.event < TimelinePoint::FromIndex(peak_a);
        });
        states.insert(at, std::move(*candidate));
      } else {
        // Captured as another moment: its label goes where the labelled map would have put it,
        // after "peak reserved" and before the caller's moments and "end".
        for (AllocatorState& st : states) {
          if (st.event != TimelinePoint::FromIndex(peak_a)) continue;
          st.labels.insert(st.labels.begin() + (peak_r == peak_a ? 1 : 0), "peak allocated");
          break;
        }
      }
    }
    std::reverse(states.begin(), states.end());
  }
  if (n > 0) {
    out.peak_reserved_event = TimelinePoint::FromIndex(peak_r);
    out.peak_allocated_event = TimelinePoint::FromIndex(peak_a);
  }

  // Thin the evenly spaced states until the distinct segments fit the budget; first the states
  // around the labelled moments, farthest first, to a quarter of it.
  auto spans_used = [&](const std::vector<bool>& keep) {
    std::vector<bool> seen(distinct.size(), false);
    int64_t spans = 0;
    for (size_t s = 0; s < states.size(); ++s) {
      if (!keep[s]) continue;
      for (uint32_t id : states[s].segments) {
        if (!seen[id]) spans += static_cast<int64_t>(distinct[id].spans.size()) + 1;
        seen[id] = true;
      }
    }
    return spans;
  };
  std::vector<bool> keep(states.size(), true);
  auto is_step = [&](size_t s) { return states[s].step; };
  for (int64_t d = options.around; d > 0; --d) {
    std::vector<bool> only_steps(states.size(), false);
    for (size_t s = 0; s < states.size(); ++s) only_steps[s] = keep[s] && is_step(s);
    if (spans_used(only_steps) <= options.max_spans / 4) break;
    for (size_t s = 0; s < states.size(); ++s) {
      if (is_step(s) && steps[states[s].event.index()] >= d) keep[s] = false;
    }
  }
  int64_t kept_even = static_cast<int64_t>(even.size());
  for (int stride = 2; spans_used(keep) > options.max_spans && kept_even > 2; stride *= 2) {
    kept_even = 0;
    int64_t j = 0;
    for (size_t s = 0; s < states.size(); ++s) {
      if (!states[s].labels.empty() || is_step(s)) continue;
      keep[s] = j % stride == 0;
      kept_even += keep[s];
      ++j;
    }
  }
  out.even_moments = static_cast<int64_t>(even.size());
  // Renumber the distinct segments the kept states use, in first-use order.
  std::vector<int64_t> remap(distinct.size(), -1);
  for (size_t s = 0; s < states.size(); ++s) {
    if (!keep[s]) continue;
    AllocatorState st = std::move(states[s]);
    for (uint32_t& id : st.segments) {
      if (remap[id] < 0) {
        remap[id] = static_cast<int64_t>(out.segments.size());
        out.segments.push_back(std::move(distinct[id]));
      }
      id = static_cast<uint32_t>(remap[id]);
    }
    out.states.push_back(std::move(st));
  }
  out.samples = static_cast<int>(kept_even);
  return out;
}

}  // namespace memsnap::analysis
