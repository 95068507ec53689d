// Timeline reconstruction: one pass over each device's events with an address table, then a
// reconciliation with the final state (ghosts, open blocks, anchoring).
#include "memsnap/analysis/timeline/timeline.h"

#include <algorithm>
#include <cassert>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/timeline/addr_table.h"
#include "memsnap/sim/sizes.h"
#include "memsnap/util/format.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::analysis {

namespace {

constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();  // no open lifetime
// A free the timeline leaves out (DeviceTimeline::unplaced_frees) was requested at this address
// and its completion is still to come: that completion is left out too.
constexpr uint32_t kSkipped = kNone - 1;

struct AddrState {
  uint32_t open = kNone;  // index of the open lifetime at this address
  uint32_t next_version = 0;
  // DeviceTimeline::TraceCounts, by address (block addresses only): allocs not yet matched by a
  // free_completed, and free_completed entries that found none. A device has fewer than 2^32
  // events, so neither overflows.
  uint32_t allocs = 0;
  uint32_t unmatched = 0;
};

using BlockAddrTable = AddrTable<AddrState>;

// The final state of one device: active blocks by address, segments sorted by address.
struct FinalState {
  AddrMap<uint32_t> active;        // address -> BlockId
  std::vector<uint32_t> segments;  // SegmentIds, ascending address
  int64_t requested = 0, rounded = 0, reserved = 0;
};

FinalState CollectFinal(const Snapshot& snap, const SegmentsByDevice& by_device, int32_t device) {
  FinalState f;
  for (uint32_t s : by_device.Of(device)) {
    const Segment& seg = snap.segments[s];
    f.segments.push_back(s);
    f.reserved += seg.total_size;
    for (uint32_t b = seg.first_block; b < seg.first_block + seg.num_blocks; ++b) {
      const Block& blk = snap.blocks[b];
      if (!blk.is_active()) continue;
      f.active.emplace(blk.address, b);
      f.requested += blk.requested_size;
      f.rounded += blk.size;
    }
  }
  std::sort(f.segments.begin(), f.segments.end(), [&](uint32_t a, uint32_t b) {
    return snap.segments[a].address < snap.segments[b].address;
  });
  return f;
}

// Final segment containing `addr`, or -1.
int64_t FindSegment(const Snapshot& snap, const FinalState& f, uint64_t addr) {
  auto it = std::upper_bound(f.segments.begin(), f.segments.end(), addr,
                             [&](uint64_t a, uint32_t s) { return a < snap.segments[s].address; });
  if (it == f.segments.begin()) return -1;
  const Segment& seg = snap.segments[*(it - 1)];
  if (addr - seg.address < static_cast<uint64_t>(seg.total_size)) return *(it - 1);
  return -1;
}

// The point of a moment known before the pass (end, event:N, a time). The peak is found during
// the pass instead.
TimelinePoint ResolveFixedMoment(std::span<const TraceEvent> ev, bool has_time,
                                 const Moment& moment) {
  const int64_t last = static_cast<int64_t>(ev.size()) - 1;
  auto clamped = [&](int64_t e) {
    return TimelinePoint::FromIndex(std::clamp<int64_t>(e, -1, last));
  };
  switch (moment.kind) {
    case Moment::Kind::kPeak:  // not known before the pass; callers handle it
    case Moment::Kind::kEnd:
      return clamped(last);
    case Moment::Kind::kEvent:
      return clamped(moment.value < 0 ? last + 1 + moment.value : moment.value);
    case Moment::Kind::kTime:
    case Moment::Kind::kSinceStart:
    case Moment::Kind::kBeforeEnd: {
      if (!has_time) return clamped(moment.kind == Moment::Kind::kTime ? moment.value : last);
      const int64_t t = moment.kind == Moment::Kind::kTime ? moment.value
                        : moment.kind == Moment::Kind::kSinceStart
                            ? ev.front().time_us + moment.value
                            : ev.back().time_us - moment.value;
      auto it = std::upper_bound(ev.begin(), ev.end(), t,
                                 [](int64_t x, const TraceEvent& e) { return x < e.time_us; });
      return clamped((it - ev.begin()) - 1);
    }
  }
  return clamped(last);
}

bool AllTimed(std::span<const TraceEvent> ev) {
  return !ev.empty() &&
         std::all_of(ev.begin(), ev.end(), [](const TraceEvent& e) { return e.has_time(); });
}

// The event that created a lifetime: its alloc, else the free that revealed it (ordered by
// index; every pooled lifetime saw one of them).
TimelinePoint CreationPoint(const BlockLifetime& lt) {
  return lt.alloc_event.seen()
             ? lt.alloc_event.PointOr({})
             : Earlier(lt.free_requested_event, lt.free_completed_event).PointOr({});
}

// Rebuilds one device's timeline: Feed() the device's events in order, in one span or in chunks
// (TimelineStream feeds them as the reader decodes them), then Finish() with the final state. The
// event pass is a template over what is kept and whether the curve is stored, so the per-event
// loop tests no option it does not need (and the compiler inlines all of it); what comes before
// and after the pass is shared.
class DeviceBuilder {
 public:
  /// `expected_addrs`, `expected_segments`, `expected_events`: sizing hints (0: unknown).
  DeviceBuilder(const TimelineOptions& options, DeviceTimeline& dt, size_t expected_addrs,
                size_t expected_segments, size_t expected_events)
      : options_(options), dt_(dt), addrs_(expected_addrs), seg_addrs_(expected_segments) {
    dt.kept = options.keep;
    follow_peak_ =
        options.keep == KeepLifetimes::kLiveAt && options.moment.kind == Moment::Kind::kPeak;
    if (options.curve) dt.live_net.reserve(expected_events);
    // ~one lifetime per alloc/free pair
    if (options.keep == KeepLifetimes::kAll)
      dt.blocks.reserve(expected_events / 2 + expected_addrs + 16);
  }

  /// kLiveAt at a moment other than the peak: the device-local event whose live lifetimes are
  /// kept. One past the last event may be given for "the end" when the trace's length is not known
  /// yet (Finish clamps it to the last event): the pass then keeps nothing until the end, as it
  /// would for the last event.
  void SetTarget(TimelinePoint p) {
    target_ = p;
    given_target_ = p;
  }

  /// A free without an alloc: the event that revealed a block older than the trace.
  struct PreFree {
    uint32_t event = 0;
    uint64_t address = 0;
    int64_t size = 0;
  };

  /// The frees without an alloc that lie in no segment the file records: those blocks cannot have
  /// been live from the start of the trace, and nothing says when they were. Empty when the trace
  /// records no segment event (then nothing places a block). Called after every event was fed,
  /// before Finish.

  std::vector<PreFree> UnplacedFrees(const Snapshot& snap, const FinalState& fin) const {
    std::vector<PreFree> out;
    const auto& a = dt_.counts.actions;
    const int64_t segment_events =
        a[static_cast<int>(Action::kSegmentAlloc)] + a[static_cast<int>(Action::kSegmentFree)] +
        a[static_cast<int>(Action::kSegmentMap)] + a[static_cast<int>(Action::kSegmentUnmap)];
    if (pre_frees_.empty() || segment_events == 0) return out;
    std::vector<std::pair<uint64_t, uint64_t>> traced;  // [begin, end) of every traced segment
    traced.reserve(dt_.segments.size());
    for (const SegmentLifetime& s : dt_.segments)
      traced.emplace_back(s.address, s.address + static_cast<uint64_t>(s.size));
    std::sort(traced.begin(), traced.end());
    uint64_t reach = 0;  // the largest end among the intervals so far: a prefix maximum
    std::vector<uint64_t> reach_of(traced.size());
    for (size_t k = 0; k < traced.size(); ++k)
      reach_of[k] = reach = std::max(reach, traced[k].second);
    auto in_traced = [&](uint64_t addr) {
      auto it = std::upper_bound(traced.begin(), traced.end(), std::make_pair(addr, ~uint64_t{0}));
      return it != traced.begin() && reach_of[(it - traced.begin()) - 1] > addr;
    };
    for (const PreFree& f : pre_frees_) {
      if (FindSegment(snap, fin, f.address) < 0 && !in_traced(f.address)) out.push_back(f);
    }
    return out;
  }

  /// Leaves out these frees (UnplacedFrees of an earlier pass, in event order).
  void LeaveOutFrees(const std::vector<PreFree>& frees) {
    skip_.clear();
    dt_.unplaced_frees = static_cast<int64_t>(frees.size());
    dt_.unplaced_free_bytes = 0;
    for (const PreFree& f : frees) {
      skip_.push_back(f.event);
      dt_.unplaced_free_bytes += f.size;
    }
    if (!skip_.empty()) dt_.first_unplaced_free = LocalEvent(skip_.front());
  }
  std::optional<TimelinePoint> given_target() const { return given_target_; }

  /// The device's events [first, first + events.size()); `first` is the number fed so far.
  /// `streams`: the values of the streams they name (StreamTable::values), during the call.
  void Feed(std::span<const TraceEvent> events, uint32_t first, std::span<const int64_t> streams) {
    assert(first == fed_);
    streams_ = streams;
    const bool curve = options_.curve;
    switch (options_.keep) {
      case KeepLifetimes::kAll:
        curve ? Pass<KeepLifetimes::kAll, true>(events, first)
              : Pass<KeepLifetimes::kAll, false>(events, first);
        break;
      case KeepLifetimes::kLiveAt:
        curve ? Pass<KeepLifetimes::kLiveAt, true>(events, first)
              : Pass<KeepLifetimes::kLiveAt, false>(events, first);
        break;
      case KeepLifetimes::kNone:
        curve ? Pass<KeepLifetimes::kNone, true>(events, first)
              : Pass<KeepLifetimes::kNone, false>(events, first);
        break;
    }
    fed_ += static_cast<uint32_t>(events.size());
    streams_ = {};
  }
  uint32_t fed() const { return fed_; }

  /// Meets the final state of `device` (whose events were all fed; they begin at `event_begin` in
  /// Snapshot::events): open lifetimes, ghosts, segments, and the anchoring of the curves.
  void Finish(const Snapshot& snap, int32_t device, uint32_t event_begin, FinalState fin) {
    fin_ = std::move(fin);
    dt_.device = device;
    dt_.event_begin = event_begin;
    dt_.num_events = fed_;
    dt_.end_requested = fin_.requested;
    dt_.end_rounded = fin_.rounded;
    dt_.end_reserved = fin_.reserved;
    dt_.has_time = fed_ > 0 && all_time_;
    dt_.time_sorted = dt_.has_time && time_sorted_;
    target_ = std::min(target_, TimelinePoint::End(fed_));
    CountsAtEnd();
    ReconcileOpen(snap);
    AddGhosts(snap);
    ReconcileSegments(snap);
    Anchor();
  }

 private:
  // Lifetimes being built: with kAll dt.blocks itself, one slot per lifetime; otherwise a small
  // pool whose slots are recycled when a lifetime ends, so only the open ones take memory.
  std::vector<BlockLifetime>& pool() {
    return options_.keep == KeepLifetimes::kAll ? dt_.blocks : pool_;
  }

  template <KeepLifetimes kKeep, bool kCurve>
  void Pass(std::span<const TraceEvent> ev, uint32_t first) {
    constexpr bool kAllKept = kKeep == KeepLifetimes::kAll;
    constexpr bool kLiveAt = kKeep == KeepLifetimes::kLiveAt;
    const uint32_t end = first + static_cast<uint32_t>(ev.size());
    std::vector<BlockLifetime>& pool = this->pool();
    // With kLiveAt, `target_` is the event whose live lifetimes are kept. For the peak it follows
    // the running maximum, and what was kept for an earlier maximum is dropped: all of that
    // ended before the new maximum.
    const bool follow_peak = kLiveAt && follow_peak_;
    // Filled by push_back into reserved memory, neither zeroed first nor pre-faulted: in the CLI
    // it is what the reader just freed (KeepFreedMemory), already mapped, and MADV_POPULATE_WRITE
    // over mapped pages still walks them (0.8 ms of 13.6 on the benchmark). Fed in chunks, it
    // grows by doubling.
    std::vector<int64_t>& curve = dt_.live_net;
    if constexpr (kCurve) {
      if (curve.capacity() < end) curve.reserve(std::max<size_t>(end, 2 * curve.capacity()));
    }
    Prefaulter& pool_prefault = pool_prefault_;
    const int64_t* const streams = streams_.data();

    auto open = [&](const TraceEvent& e, AddrState& st) __attribute__((always_inline))
                    ->BlockLifetime& {
      if (!kAllKept && !free_slots_.empty()) {
        st.open = free_slots_.back();
        free_slots_.pop_back();
        pool[st.open] = BlockLifetime{};
      } else {
        st.open = static_cast<uint32_t>(pool.size());
        pool.emplace_back();
        if constexpr (kAllKept) pool_prefault.Touch(pool);
      }
      BlockLifetime& lt = pool[st.open];
      lt.address = e.addr;
      lt.version = st.next_version++;
      lt.requested_size = e.size;
      lt.rounded_size = sim::RoundSize(e.size, kTimelineRounding);
      lt.stream = streams[e.stream.v];
      lt.stack = e.stack;
      return lt;
    };
    // Opens the lifetime of a block older than the trace; false for a free left out
    // (LeaveOutFrees), whose completion is then left out as well.
    auto open_pre_window = [&](const TraceEvent& e, AddrState& st, uint32_t i) {
      if (!skip_.empty() && std::binary_search(skip_.begin(), skip_.end(), i)) {
        st.open = e.action == Action::kFreeRequested ? kSkipped : kNone;
        return false;
      }
      pre_frees_.push_back({i, e.addr, e.size});
      BlockLifetime& lt = open(e, st);
      lt.cls = LifetimeClass::kPreWindow;
      pre_req_ += lt.requested_size;
      pre_round_ += lt.rounded_size;
      ++dt_.frees_without_alloc;
      return true;
    };
    auto close = [&](AddrState & st, uint32_t i) __attribute__((always_inline)) {
      BlockLifetime& lt = pool[st.open];
      lt.free_completed_event = LocalEvent(i);
      cur_req_ -= lt.requested_size;
      cur_round_ -= lt.rounded_size;
      if constexpr (!kAllKept) {
        if (kLiveAt && target_ < TimelinePoint::After(i) && lt.live_from() <= target_) {
          kept_.push_back(lt);
        }
        free_slots_.push_back(st.open);
      }
      st.open = kNone;
    };
    // free_completed almost always follows free_requested at the same address: reuse that
    // lookup. The pointer stays valid because nothing is inserted between the two events.
    uint64_t last_addr = 0;
    AddrState* last_state = nullptr;
    auto state_of = [&](uint64_t addr) __attribute__((always_inline))->AddrState& {
      if (last_state == nullptr || addr != last_addr) {
        last_state = &addrs_[addr];
        last_addr = addr;
      }
      return *last_state;
    };

    // The pass's running state, in locals for the loop (members between chunks).
    int64_t peak = peak_raw_;  // of the curve before anchoring (a constant shift: the same event)
    // The most live bytes (and its first point) since the last change of reserved bytes: the
    // reserved peak's tie-break (docs/figures.md), kept per ReservedStep.
    int64_t imax = imax_;
    TimelinePoint ipoint = ipoint_;
    bool all_time = all_time_;
    bool time_sorted = time_sorted_;
    int64_t last_time = last_time_;
    int64_t min_time = min_time_, max_time = max_time_;
    std::array<int64_t, kNumActions> actions{};
    const TraceEvent* const base = ev.data() - first;  // base[i]: device-local event i
    for (uint32_t i = first; i < end; ++i) {
      const TraceEvent& e = base[i];
      // During the read the events were written on another core; the hardware prefetcher stops
      // at each 4 KiB page (-2 ms of CPU on the 2.2 M-event benchmark with two threads).
      PrefetchAhead(&e, 2048);
      all_time &= e.has_time();
      time_sorted &= e.time_us >= last_time;
      last_time = e.time_us;
      ++actions[static_cast<int>(e.action)];
      if (e.has_time()) {
        if (min_time == kNoTime || e.time_us < min_time) min_time = e.time_us;
        if (max_time == kNoTime || e.time_us > max_time) max_time = e.time_us;
      }
      switch (e.action) {
        case Action::kAlloc: {
          last_state = nullptr;  // the insert below may grow the table
          AddrState& st = addrs_[e.addr];
          ++st.allocs;
          if (st.open < kSkipped) [[unlikely]] {  // a free we never saw: end the old lifetime here
            close(st, i);
            ++dt_.allocs_without_free;
          }
          BlockLifetime& lt = open(e, st);
          lt.alloc_event = LocalEvent(i);
          cur_req_ += lt.requested_size;
          cur_round_ += lt.rounded_size;
          ++allocs_;
          alloc_bytes_ += lt.requested_size;
          break;
        }
        case Action::kFreeRequested: {
          AddrState& st = state_of(e.addr);
          if (st.open >= kSkipped) [[unlikely]] {
            if (st.open == kSkipped || !open_pre_window(e, st, i)) break;
          }
          BlockLifetime& lt = pool[st.open];
          if (!lt.free_requested_event.seen()) lt.free_requested_event = LocalEvent(i);
          break;
        }
        case Action::kFreeCompleted: {
          AddrState& st = state_of(e.addr);
          if (st.allocs == 0) {
            ++st.unmatched;
          } else {
            --st.allocs;
          }
          if (st.open >= kSkipped) [[unlikely]] {
            if (st.open == kSkipped) {
              st.open = kNone;
              break;
            }
            if (!open_pre_window(e, st, i)) break;
          }
          close(st, i);
          break;
        }
        case Action::kSegmentAlloc:
        case Action::kSegmentMap:
        case Action::kSegmentFree:
        case Action::kSegmentUnmap:
          CloseInterval(imax, ipoint);
          SegmentEvent(e, i);
          imax = cur_req_;
          ipoint = TimelinePoint::After(i);
          break;
        case Action::kOom:  // no effect on the curves; what was live then is worth keeping
          dt_.oom_moments.push_back(DeviceTimeline::OomMoment{i, cur_req_, cur_round_});
          break;
        default:  // snapshot / unknown: not terminators, no effect on the curves
          break;
      }
      if constexpr (kCurve) curve.push_back(cur_req_);
      if (cur_req_ > imax) [[unlikely]] {
        imax = cur_req_;
        ipoint = TimelinePoint::After(i);
      }
      if (cur_req_ > peak) [[unlikely]] {
        peak = cur_req_;
        dt_.peak_event = TimelinePoint::After(i);
        if (follow_peak) {
          target_ = TimelinePoint::After(i);
          kept_.clear();
        }
      }
    }
    peak_raw_ = peak;
    imax_ = imax;
    ipoint_ = ipoint;
    all_time_ = all_time;
    time_sorted_ = time_sorted;
    last_time_ = last_time;
    min_time_ = min_time;
    max_time_ = max_time;
    for (int a = 0; a < kNumActions; ++a) dt_.counts.actions[a] += actions[a];
  }

  // DeviceTimeline::counts from the pass's per-address counts (addresses in ascending order).
  void CountsAtEnd() {
    DeviceTimeline::TraceCounts& c = dt_.counts;
    c.min_time_us = min_time_;
    c.max_time_us = max_time_;
    c.unmatched_frees = 0;
    c.live_allocs.clear();
    addrs_.ForEach([&](uint64_t addr, const AddrState& st) {
      c.unmatched_frees += st.unmatched;
      if (st.allocs > 0) c.live_allocs.emplace_back(addr, st.allocs);
    });
    std::sort(c.live_allocs.begin(), c.live_allocs.end());
  }

  // Ends the interval of the reserved curve that a segment event closes.
  void CloseInterval(int64_t imax, TimelinePoint ipoint) {
    if (dt_.reserved_steps.empty()) {
      start_max_live_ = imax;
      start_max_point_ = ipoint;
    } else {
      dt_.reserved_steps.back().max_live = imax;
      dt_.reserved_steps.back().max_live_point = ipoint;
    }
  }

  void SegmentEvent(const TraceEvent& e, uint32_t i) {
    if (e.action == Action::kSegmentMap || e.action == Action::kSegmentUnmap) {
      MappingEvent(e, i);
      return;
    }
    const uint32_t open = seg_addrs_[e.addr].open;
    if (e.action == Action::kSegmentAlloc) {
      if (open != kNone) dt_.segments[open].end_event = LocalEvent(i);  // missing free
      const auto index = static_cast<uint32_t>(dt_.segments.size());
      Begin(e.addr, e.size, e.stream, false, i);
      seg_addrs_[e.addr].open = index;
      cur_res_ += e.size;
      dt_.reserved_steps.push_back(ReservedStep(i, cur_res_));
      return;
    }
    const uint32_t ended = open != kNone ? open : static_cast<uint32_t>(dt_.segments.size());
    if (open == kNone) PreWindow(e.addr, e.size, e.stream, false);
    dt_.segments[ended].end_event = LocalEvent(i);
    seg_addrs_[e.addr].open = kNone;
    cur_res_ -= e.size;
    dt_.reserved_steps.push_back(ReservedStep(i, cur_res_));
  }

  // A new segment lifetime that begins at event `i`.
  SegmentLifetime& Begin(uint64_t addr, int64_t size, StreamId stream, bool mapping, uint32_t i) {
    SegmentLifetime& s = dt_.segments.emplace_back();
    s.address = addr;
    s.version = seg_addrs_[addr].next_version++;
    s.mapping = mapping;
    s.size = size;
    s.stream = streams_[stream.v];
    s.begin_event = LocalEvent(i);
    return s;
  }
  // A segment lifetime older than the trace, released in it.
  SegmentLifetime& PreWindow(uint64_t addr, int64_t size, StreamId stream, bool mapping) {
    SegmentLifetime& s = dt_.segments.emplace_back();
    s.address = addr;
    s.version = seg_addrs_[addr].next_version++;
    s.cls = LifetimeClass::kPreWindow;
    s.mapping = mapping;
    s.size = size;
    s.stream = streams_[stream.v];
    pre_res_ += size;
    return s;
  }

  // Expandable segments map and unmap address ranges, and an unmap need not match a map: it may
  // release the end or the middle of a mapped range, or span several (PyTorch's
  // ExpandableSegment::unmapHandles releases whole pages from any offset; 12 of 16 unmaps on the
  // corpus's three-device expandable file start inside a mapping). So the open mappings are kept
  // by address range: an unmap ends every mapping it overlaps at its event, and what those
  // mappings keep mapped begins again at that event as a new lifetime (SegmentLifetime::split),
  // so the lifetimes alive after any event add up to the reserved curve. Bytes unmapped that no
  // mapping of the trace holds were mapped before it.
  void MappingEvent(const TraceEvent& e, uint32_t i) {
    const uint64_t u0 = e.addr, u1 = e.addr + static_cast<uint64_t>(e.size);
    if (e.action == Action::kSegmentMap) {
      auto it = open_maps_.find(u0);
      if (it != open_maps_.end()) {  // the same range mapped again: its unmap was not recorded
        dt_.segments[it->second].end_event = LocalEvent(i);
        open_maps_.erase(it);
      }
      open_maps_[u0] = static_cast<uint32_t>(dt_.segments.size());
      Begin(u0, e.size, e.stream, true, i);
      cur_res_ += e.size;
      dt_.reserved_steps.push_back(ReservedStep(i, cur_res_));
      return;
    }
    int64_t unexplained = e.size;
    auto it = open_maps_.upper_bound(u0);
    if (it != open_maps_.begin()) --it;
    while (it != open_maps_.end() && it->first < u1) {
      const uint32_t k = it->second;
      const uint64_t m0 = dt_.segments[k].address;
      const uint64_t m1 = m0 + static_cast<uint64_t>(dt_.segments[k].size);
      if (m1 <= u0) {
        ++it;
        continue;
      }
      const int64_t stream = dt_.segments[k].stream;
      dt_.segments[k].end_event = LocalEvent(i);
      it = open_maps_.erase(it);
      unexplained -= static_cast<int64_t>(std::min(m1, u1) - std::max(m0, u0));
      auto rest = [&](uint64_t r0, uint64_t r1) {
        open_maps_[r0] = static_cast<uint32_t>(dt_.segments.size());
        SegmentLifetime& s = Begin(r0, static_cast<int64_t>(r1 - r0), e.stream, true, i);
        s.stream = stream;
        s.split = true;
      };
      if (m0 < u0) rest(m0, u0);
      if (u1 < m1) {
        rest(u1, m1);
        break;  // the unmapped range ends inside this mapping
      }
    }
    if (unexplained > 0) PreWindow(u0, unexplained, e.stream, true).end_event = LocalEvent(i);
    cur_res_ -= e.size;
    dt_.reserved_steps.push_back(ReservedStep(i, cur_res_));
  }

  // Lifetimes still open at the end meet the final blocks: each takes its block's size; the rest
  // of the final blocks are ghosts. Pool slots not live at the end are ended (or recycled) ones.
  void ReconcileOpen(const Snapshot& snap) {
    // The blocks matched, as a set: a vector over every block of the file, per device, cost
    // devices x blocks (10^10 bytes zeroed for 100,000 devices; issue 54).
    used_.clear();
    used_.reserve(fin_.active.size());
    ClassTotals& open_totals = dt_.by_class[static_cast<int>(LifetimeClass::kOpen)];
    for (BlockLifetime& lt : pool()) {
      if (!lt.live_at_end()) continue;
      if (lt.cls == LifetimeClass::kInWindow) {
        lt.cls = LifetimeClass::kOpen;
        ++open_totals.count;
        open_totals.bytes += lt.requested_size;
      }
      auto it = fin_.active.find(lt.address);
      if (it == fin_.active.end() || !used_.insert(it->second).second) {
        ++dt_.open_without_block;
        dt_.open_without_block_bytes += lt.requested_size;
      } else {
        const Block& blk = snap.blocks[it->second];
        lt.block = BlockId(it->second);
        int64_t fix = blk.size - lt.rounded_size;
        if (fix != 0) {
          lt.rounded_size = blk.size;
          (lt.alloc_event.seen() ? cur_round_ : pre_round_) += fix;
        }
      }
      if (options_.keep == KeepLifetimes::kLiveAt && lt.live_from() <= target_) {
        kept_.push_back(lt);
      }
    }
    // Every alloc began an in-window lifetime; those still open are counted as open instead.
    // Every free without an alloc began a pre-window one.
    dt_.by_class[static_cast<int>(LifetimeClass::kInWindow)] = {allocs_ - open_totals.count,
                                                                alloc_bytes_ - open_totals.bytes};
    dt_.by_class[static_cast<int>(LifetimeClass::kPreWindow)] = {dt_.frees_without_alloc, pre_req_};
    if (options_.keep == KeepLifetimes::kLiveAt) {
      std::sort(kept_.begin(), kept_.end(), [](const BlockLifetime& a, const BlockLifetime& b) {
        return CreationPoint(a) < CreationPoint(b);
      });
      dt_.blocks = std::move(kept_);
      dt_.kept_event = target_;
    }
  }

  void AddGhosts(const Snapshot& snap) {
    ClassTotals& ghosts = dt_.by_class[static_cast<int>(LifetimeClass::kGhost)];
    for (uint32_t s : fin_.segments) {  // address order: deterministic ghost order
      const Segment& seg = snap.segments[s];
      for (uint32_t b = seg.first_block; b < seg.first_block + seg.num_blocks; ++b) {
        const Block& blk = snap.blocks[b];
        if (!blk.is_active() || used_.contains(b)) continue;
        auto fit = fin_.active.find(blk.address);
        if (fit == fin_.active.end() || fit->second != b) continue;  // duplicate address: once
        ghost_req_ += blk.requested_size;
        ghost_round_ += blk.size;
        ++ghosts.count;
        ghosts.bytes += blk.requested_size;
        if (options_.keep == KeepLifetimes::kNone) continue;
        BlockLifetime& lt = dt_.blocks.emplace_back();  // live at every moment
        lt.address = blk.address;
        const AddrState* known = addrs_.Find(blk.address);
        lt.version = known == nullptr ? 0 : known->next_version;
        lt.cls = LifetimeClass::kGhost;
        lt.requested_size = blk.requested_size;
        lt.rounded_size = blk.size;
        lt.stream = seg.stream;
        lt.stack = blk.stack;
        lt.block = BlockId(b);
      }
    }
  }

  // Segments: match open lifetimes to final segments; uncovered final bytes existed before t0.
  void ReconcileSegments(const Snapshot& snap) {
    std::vector<int64_t> covered(fin_.segments.size(), 0);
    absl::flat_hash_map<uint32_t, size_t> seg_pos;
    for (size_t k = 0; k < fin_.segments.size(); ++k) seg_pos[fin_.segments[k]] = k;
    for (SegmentLifetime& s : dt_.segments) {
      if (s.end_event.seen()) continue;
      if (s.cls == LifetimeClass::kInWindow) s.cls = LifetimeClass::kOpen;
      int64_t seg = FindSegment(snap, fin_, s.address);
      if (seg < 0) continue;
      s.segment = SegmentId(static_cast<uint32_t>(seg));
      covered[seg_pos[static_cast<uint32_t>(seg)]] += s.size;
    }
    for (size_t k = 0; k < fin_.segments.size(); ++k) {
      const Segment& seg = snap.segments[fin_.segments[k]];
      int64_t rest = seg.total_size - covered[k];
      if (rest <= 0) continue;
      SegmentLifetime& s = dt_.segments.emplace_back();
      s.address = seg.address;
      s.cls = LifetimeClass::kGhost;
      s.mapping = seg.is_expandable;
      s.size = rest;
      s.stream = seg.stream;
      s.segment = SegmentId(fin_.segments[k]);
      ghost_res_ += rest;
    }
  }

  // Segments created in the trace and never released that the final state does not hold: their
  // release was not recorded (a trace pieced together, a ring buffer that dropped it), and nothing
  // says when it happened. Counted to the end they would hold reserved bytes no reconstructed
  // allocator state has (frag, the page's segment view rewind from the final state); they are left
  // out of the reserved curve instead. Likewise an expandable segment's mapping in no final segment
  // (one the final state holds is merged into a larger segment, and stays).
  void LeaveOutUnreleasedSegments() {
    std::vector<std::pair<uint32_t, int64_t>> removed;  // (begin event, size)
    for (SegmentLifetime& s : dt_.segments) {
      // A mapping the final state holds is merged into one of its segments (s.segment is set); one
      // in no final segment was released unrecorded, as a segment is. What an unmap left of an
      // older mapping (split) was mapped before its begin event: kept.
      if (s.end_event.seen() || !s.begin_event.seen() || s.segment.valid() || s.split) continue;
      s.left_out = true;
      ++dt_.segments_left_out;
      dt_.segments_left_out_bytes += s.size;
      removed.emplace_back(*s.begin_event.index(), s.size);
    }
    if (removed.empty()) return;
    std::sort(removed.begin(), removed.end());
    size_t next = 0;
    int64_t gone = 0;
    for (ReservedStep& step : dt_.reserved_steps) {
      while (next < removed.size() && removed[next].first <= step.event)
        gone += removed[next++].second;
      step.bytes -= gone;
    }
    cur_res_ -= dt_.segments_left_out_bytes;
  }

  // The curves end at the final state; what the trace cannot explain goes into the start value.
  void Anchor() {
    // Final bytes the trace leaves unexplained are live from the start (never a negative start:
    // bytes the trace leaves live beyond the final state stay live to its end instead).
    auto anchor = [](int64_t explicit_start, int64_t net, int64_t end, int64_t& start,
                     int64_t& unreconciled, int64_t& beyond) {
      const int64_t diff = end - (explicit_start + net);
      unreconciled = std::max<int64_t>(0, diff);
      beyond = std::max<int64_t>(0, -diff);
      start = explicit_start + unreconciled;
    };
    DeviceTimeline& dt = dt_;
    anchor(pre_req_ + ghost_req_, cur_req_, dt.end_requested, dt.start_requested,
           dt.unreconciled_requested_bytes, dt.beyond_end_requested_bytes);
    anchor(pre_round_ + ghost_round_, cur_round_, dt.end_rounded, dt.start_rounded,
           dt.unreconciled_rounded_bytes, dt.beyond_end_rounded_bytes);
    CloseInterval(imax_, ipoint_);
    if (dt.end_reserved != pre_res_ + ghost_res_ + cur_res_) LeaveOutUnreleasedSegments();
    anchor(pre_res_ + ghost_res_, cur_res_, dt.end_reserved, dt.start_reserved,
           dt.unreconciled_reserved_bytes, dt.beyond_end_reserved_bytes);
    if (dt.kept == KeepLifetimes::kLiveAt) {
      // Live at the kept moment: the kept lifetimes plus what the trace could not explain (it is
      // in the start value, so live throughout).
      dt.kept_live_bytes = dt.unreconciled_requested_bytes;
      for (const BlockLifetime& lt : dt.blocks) dt.kept_live_bytes += lt.requested_size;
    }
    for (DeviceTimeline::OomMoment& m : dt.oom_moments) {
      m.live_requested += dt.start_requested;
      m.live_rounded += dt.start_rounded;
    }
    dt.peak_requested = dt.start_requested + peak_raw_;
    // The reserved peak (docs/figures.md): the most reserved bytes, then the most live bytes,
    // then the first point; each interval of the reserved curve knows its most live bytes.
    dt.peak_reserved = dt.start_reserved;
    dt.peak_reserved_event = start_max_point_;
    int64_t peak_live = start_max_live_;
    for (ReservedStep& step : dt.reserved_steps) {
      step.bytes += dt.start_reserved;
      if (step.bytes > dt.peak_reserved ||
          (step.bytes == dt.peak_reserved && step.max_live > peak_live)) {
        dt.peak_reserved = step.bytes;
        dt.peak_reserved_event = step.max_live_point;
        peak_live = step.max_live;
      }
      step.max_live += dt.start_requested;
    }
  }

  const TimelineOptions& options_;
  DeviceTimeline& dt_;
  FinalState fin_;            // set by Finish
  BlockAddrTable addrs_;      // block address -> open lifetime (small: it should stay in cache)
  BlockAddrTable seg_addrs_;  // segment address -> open segment lifetime (and versions)
  std::map<uint64_t, uint32_t> open_maps_;  // open expandable mappings by address (few)
  std::vector<BlockLifetime> pool_;         // open lifetimes unless everything is kept
  std::vector<uint32_t> free_slots_;
  std::vector<BlockLifetime> kept_;  // kLiveAt: lifetimes live after target_, ended so far
  TimelinePoint target_;
  std::optional<TimelinePoint> given_target_;  // SetTarget's, for a second pass
  std::vector<PreFree> pre_frees_;
  std::vector<uint32_t> skip_;                         // LeaveOutFrees: ascending events
  absl::flat_hash_set<uint32_t> used_;                 // final blocks matched by an open lifetime
  int64_t cur_req_ = 0, cur_round_ = 0, cur_res_ = 0;  // net of the trace so far
  int64_t pre_req_ = 0, pre_round_ = 0, pre_res_ = 0;  // pre-window lifetimes
  int64_t ghost_req_ = 0, ghost_round_ = 0, ghost_res_ = 0;
  int64_t allocs_ = 0, alloc_bytes_ = 0;
  int64_t min_time_ = kNoTime, max_time_ = kNoTime;  // over the events with a time
  int64_t peak_raw_ = 0;
  // The interval of the reserved curve being passed: its most live bytes (raw) and their point;
  // the interval before the first step keeps them in start_max_*.
  int64_t imax_ = 0;
  TimelinePoint ipoint_ = TimelinePoint::Start();
  int64_t start_max_live_ = 0;
  TimelinePoint start_max_point_ = TimelinePoint::Start();
  // Between chunks: the rest of the pass's running state.
  uint32_t fed_ = 0;
  bool follow_peak_ = false;
  bool all_time_ = true;
  bool time_sorted_ = true;
  int64_t last_time_ = std::numeric_limits<int64_t>::min();
  Prefaulter pool_prefault_;
  std::span<const int64_t> streams_;  // during Feed: the values of the events' streams
};

// Finishes a device whose every event `builder` was fed. When the trace frees blocks that lie in
// no segment the file records (DeviceBuilder::UnplacedFrees), the events are passed once more
// with those frees left out: one model of what was live, which every reader of the timeline
// takes (docs/figures.md, "When the trace does not explain the state"). Only such traces pay
// for the second pass.
void FinishDevice(const Snapshot& snap, int32_t device, uint32_t begin, FinalState fin,
                  const TimelineOptions& options, DeviceBuilder& builder, DeviceTimeline& dt) {
  const std::vector<DeviceBuilder::PreFree> unplaced = builder.UnplacedFrees(snap, fin);
  if (unplaced.empty()) {
    builder.Finish(snap, device, begin, std::move(fin));
    return;
  }
  const std::optional<TimelinePoint> target = builder.given_target();
  const uint32_t n = builder.fed();
  dt = DeviceTimeline{};
  DeviceBuilder again(options, dt, fin.active.size(), fin.segments.size(), n);
  if (target) again.SetTarget(*target);
  again.LeaveOutFrees(unplaced);
  again.Feed(std::span<const TraceEvent>(snap.events.data() + begin, n), 0, snap.streams.values());
  again.Finish(snap, device, begin, std::move(fin));
}

// One device's timeline from its whole trace.
void BuildDevice(const Snapshot& snap, const SegmentsByDevice& by_device, int32_t device,
                 const TimelineOptions& options, DeviceTimeline& dt) {
  FinalState fin = CollectFinal(snap, by_device, device);
  std::span<const TraceEvent> ev;
  uint32_t begin = 0;
  if (const DeviceTrace* trace = snap.TraceOf(device); trace != nullptr) {
    ev = snap.EventsOf(*trace);
    begin = trace->begin;
  }
  DeviceBuilder builder(options, dt, fin.active.size(), fin.segments.size(), ev.size());
  if (options.keep == KeepLifetimes::kLiveAt && options.moment.kind != Moment::Kind::kPeak) {
    builder.SetTarget(ResolveFixedMoment(ev, AllTimed(ev), options.moment));
  }
  builder.Feed(ev, 0, snap.streams.values());
  FinishDevice(snap, device, begin, std::move(fin), options, builder, dt);
}

}  // namespace

std::pair<int64_t, TimelinePoint> DeviceTimeline::ReservedPeakIn(TimelinePoint from,
                                                                 TimelinePoint to) const {
  const std::optional<LiveCurveRef> curve = live_curve();
  ReservedCursor reserved(*this);
  int64_t best_res = reserved.At(from), best_live = curve ? curve->At(from) : 0;
  TimelinePoint best = from;
  for (int64_t e = from.index() + 1; e <= to.index(); ++e) {
    const TimelinePoint p = TimelinePoint::After(static_cast<uint32_t>(e));
    const int64_t res = reserved.At(p), live = curve ? curve->At(p) : 0;
    if (res > best_res || (res == best_res && live > best_live)) {
      best_res = res;
      best_live = live;
      best = p;
    }
  }
  return {best_res, best};
}

std::string_view LifetimeClassName(LifetimeClass c) {
  switch (c) {
    case LifetimeClass::kInWindow:
      return "in-window";
    case LifetimeClass::kPreWindow:
      return "pre-window";
    case LifetimeClass::kGhost:
      return "ghost";
    case LifetimeClass::kOpen:
      return "open";
  }
  return "?";
}

std::optional<int64_t> DeviceTimeline::FindLive(TimelinePoint p) const {
  if (p.is_start()) return start_requested;
  const uint32_t e = *p.event();
  if (e >= num_events) return std::nullopt;
  if (!live_net.empty()) return start_requested + live_net[e];
  if (kept == KeepLifetimes::kLiveAt && p == kept_event) return kept_live_bytes;
  if (p == peak_event) return peak_requested;
  if (p == TimelinePoint::End(num_events)) return end_requested + beyond_end_requested_bytes;
  for (const OomMoment& m : oom_moments) {
    if (TimelinePoint::After(m.event) == p) return m.live_requested;
  }
  return std::nullopt;
}

int64_t DeviceTimeline::MaxLiveOverReserved() const {
  if (reserved_steps.empty() && start_reserved == 0 && end_reserved == 0) return 0;  // no segments
  int64_t over = std::max<int64_t>(0, start_requested - start_reserved);
  if (reserved_steps.empty()) return std::max(over, peak_requested - start_reserved);
  const uint32_t first = std::min<uint32_t>(reserved_steps.front().event, live_net.size());
  for (uint32_t e = 0; e < first; ++e)
    over = std::max(over, start_requested + live_net[e] - start_reserved);
  for (const ReservedStep& step : reserved_steps) over = std::max(over, step.max_live - step.bytes);
  return over;
}

std::vector<int64_t> DeviceTimeline::LiveCurve() const {
  std::vector<int64_t> curve(live_net);
  for (int64_t& v : curve) v += start_requested;
  return curve;
}

int64_t DeviceTimeline::ReservedAt(TimelinePoint p) const {
  auto it = std::upper_bound(
      reserved_steps.begin(), reserved_steps.end(), p,
      [](TimelinePoint x, const ReservedStep& s) { return x < TimelinePoint::After(s.event); });
  return it == reserved_steps.begin() ? start_reserved : (it - 1)->bytes;
}

std::vector<int64_t> LiveRoundedCurve(const DeviceTimeline& dt) {
  std::vector<int64_t> curve(dt.num_events, 0);
  for (const BlockLifetime& lt : dt.blocks) {
    if (std::optional<uint32_t> a = lt.alloc_event.index()) curve[*a] += lt.rounded_size;
    if (std::optional<uint32_t> f = lt.free_completed_event.index()) curve[*f] -= lt.rounded_size;
  }
  int64_t value = dt.start_rounded;
  for (int64_t& v : curve) v = (value += v);
  return curve;
}

int64_t DeviceTimeline::TimeOf(const Snapshot& snap, TimelinePoint p) const {
  std::optional<uint32_t> e = p.event();
  if (!e.has_value() || *e >= num_events) return kNoTime;
  return snap.events[event_begin + *e].time_us;
}

const DeviceTimeline* Timeline::Find(int32_t device) const {
  // Devices are ascending when the timeline was built from a file (one lookup per device of
  // 100,000 must not scan them all); a hand-made timeline in another order is scanned.
  auto it = std::lower_bound(devices.begin(), devices.end(), device,
                             [](const DeviceTimeline& d, int32_t want) { return d.device < want; });
  if (it != devices.end() && it->device == device) return &*it;
  for (const DeviceTimeline& d : devices) {
    if (d.device == device) return &d;
  }
  return nullptr;
}

namespace {

// The devices a timeline covers: every device of the file, or the one asked for.
absl::StatusOr<std::vector<int32_t>> TimelineDevices(const Snapshot& snapshot,
                                                     const TimelineOptions& options) {
  std::vector<int32_t> devices = snapshot.Devices();
  if (!options.device.has_value()) return devices;
  if (std::find(devices.begin(), devices.end(), *options.device) == devices.end()) {
    std::string have;
    for (int32_t d : devices) absl::StrAppend(&have, have.empty() ? "" : ", ", d);
    return absl::InvalidArgumentError(absl::StrCat(
        "--device ", *options.device,
        ": no such device in this file (devices: ", have.empty() ? "none" : have, ")"));
  }
  return std::vector<int32_t>{*options.device};
}

}  // namespace

absl::StatusOr<Timeline> ReconstructTimeline(const Snapshot& snapshot,
                                             const TimelineOptions& options) {
  ASSIGN_OR_RETURN(std::vector<int32_t> devices, TimelineDevices(snapshot, options));
  Timeline tl;
  tl.devices.resize(devices.size());
  const SegmentsByDevice by_device(snapshot);
  for (size_t i = 0; i < devices.size(); ++i)
    BuildDevice(snapshot, by_device, devices[i], options, tl.devices[i]);
  return tl;
}

// ---- TimelineStream ----

struct TimelineStream::State {
  // `options` is the stream's own (TimelineStream neither moves nor copies).
  State(const TimelineOptions& options, size_t expected_events)
      : builder(options, dt, 0, 0, expected_events) {
    if (options.keep != KeepLifetimes::kLiveAt) return;
    // The moments that need no knowledge of the trace (Streams): event:N is N, clamped to the
    // trace at the end; the end is "after every event" until then.
    if (options.moment.kind == Moment::Kind::kEnd) {
      builder.SetTarget(TimelinePoint::After(std::numeric_limits<uint32_t>::max()));
    } else if (options.moment.kind == Moment::Kind::kEvent) {
      builder.SetTarget(TimelinePoint::FromIndex(
          std::min<int64_t>(options.moment.value, std::numeric_limits<uint32_t>::max())));
    }
  }
  DeviceTimeline dt;
  DeviceBuilder builder;
  bool broken = false;  // fed out of order
};

TimelineStream::TimelineStream(const TimelineOptions& options, size_t expected_events)
    : options_(options),
      state_(Streams(options_) ? std::make_unique<State>(options_, expected_events) : nullptr) {}

TimelineStream::~TimelineStream() = default;

bool TimelineStream::Streams(const TimelineOptions& options) {
  // Which event a time is depends on every event's time; negative event indices on the count.
  const Moment& m = options.moment;
  return options.keep != KeepLifetimes::kLiveAt ||
         (m.kind != Moment::Kind::kTime && m.kind != Moment::Kind::kSinceStart &&
          m.kind != Moment::Kind::kBeforeEnd && !(m.kind == Moment::Kind::kEvent && m.value < 0));
}

void TimelineStream::Feed(std::span<const TraceEvent> events, size_t first,
                          std::span<const int64_t> streams) {
  if (state_ == nullptr || state_->broken) return;
  if (first != state_->builder.fed() || first + events.size() > LocalEvent::kMaxEvents) {
    state_->broken = true;
    return;
  }
  state_->builder.Feed(events, static_cast<uint32_t>(first), streams);
}

const DeviceTrace* FedTrace(const Snapshot& snap, size_t fed) {
  if (fed == 0 || fed != snap.events.size()) return nullptr;
  const DeviceTrace* trace = nullptr;
  for (const DeviceTrace& t : snap.traces) {
    if (t.begin == t.end) continue;
    if (trace != nullptr) return nullptr;  // events on two devices
    trace = &t;
  }
  return trace != nullptr && trace->begin == 0 && trace->end == fed ? trace : nullptr;
}

absl::StatusOr<Timeline> TimelineStream::Finish(const Snapshot& snapshot, size_t fed) {
  used_stream_ = false;
  std::unique_ptr<State> state = std::move(state_);
  const DeviceTrace* streamed = FedTrace(snapshot, fed);
  if (state == nullptr || state->broken || fed != state->builder.fed() || streamed == nullptr) {
    return ReconstructTimeline(snapshot, options_);
  }
  ASSIGN_OR_RETURN(std::vector<int32_t> devices, TimelineDevices(snapshot, options_));
  Timeline tl;
  tl.devices.resize(devices.size());
  const SegmentsByDevice by_device(snapshot);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i] != streamed->device) {  // no events: the final state alone
      BuildDevice(snapshot, by_device, devices[i], options_, tl.devices[i]);
      continue;
    }
    FinishDevice(snapshot, streamed->device, 0, CollectFinal(snapshot, by_device, streamed->device),
                 options_, state->builder, state->dt);
    tl.devices[i] = std::move(state->dt);
    used_stream_ = true;
  }
  return tl;
}

absl::StatusOr<Moment> ParseMoment(std::string_view text, std::string_view flag) {
  Moment m;
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        Sv(flag), " ", Sv(text), ": ", Sv(why),
        "; expected peak, end, event:N, a time since the trace began (+25ms, 1.5s; -5s counts "
        "back from its end) or a time_us as the file records it"));
  };
  if (text == "peak") return m;
  if (text == "end") {
    m.kind = Moment::Kind::kEnd;
    return m;
  }
  if (text.starts_with("event:")) {
    m.kind = Moment::Kind::kEvent;
    if (!absl::SimpleAtoi(Sv(text.substr(6)), &m.value)) return bad("not an event index");
    return m;
  }
  std::string_view abs = text.starts_with("abs:") ? text.substr(4) : text;
  if (absl::SimpleAtoi(Sv(abs), &m.value) && !abs.starts_with('+') &&
      (abs == text || m.value >= 0)) {
    m.kind = Moment::Kind::kTime;
    return m;
  }
  absl::StatusOr<int64_t> us = ParseDurationUs(text);
  if (!us.ok()) return bad(ToStd(us.status().message()));
  m.kind = text.starts_with('-') ? Moment::Kind::kBeforeEnd : Moment::Kind::kSinceStart;
  m.value = *us < 0 ? -*us : *us;
  return m;
}

TimelinePoint ResolveMoment(const Snapshot& snap, const DeviceTimeline& dt, const Moment& moment) {
  if (moment.kind == Moment::Kind::kPeak) return dt.peak_event;
  return ResolveFixedMoment(
      std::span<const TraceEvent>(snap.events.data() + dt.event_begin, dt.num_events), dt.has_time,
      moment);
}

std::string DescribeEvent(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p) {
  // A file without a trace, or whose trace holds only the dump's marker, is its dumped state:
  // the start and the end are one moment.
  if (dt.num_events == 0 || !dt.RecordsMemory()) return "the dump (no allocation traced)";
  if (p.is_start()) return "the initial state";
  std::string s = absl::StrCat("event:", p.index());
  const int64_t t = dt.TimeOf(snap, p);
  const int64_t t0 = dt.TimeOf(snap, TimelinePoint::After(0));
  if (dt.has_time && t != kNoTime && t0 != kNoTime) {
    absl::StrAppend(&s, " (", FormatRelativeTime(t - t0), ")");
  }
  return s;
}

absl::Status CheckMoment(const Snapshot& snap, const DeviceTimeline& dt, const Moment& m,
                         std::string_view flag, std::string_view text) {
  if (m.kind == Moment::Kind::kPeak || m.kind == Moment::Kind::kEnd || dt.num_events == 0) {
    return absl::OkStatus();
  }
  const int64_t n = dt.num_events;
  auto error = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(flag), " ", Sv(text), ": ", why));
  };
  const std::string events =
      absl::StrCat("device ", dt.device, "'s trace has ", FormatCount(n),
                   n == 1 ? " event" : " events", " (event:0 to event:", n - 1, ")");
  const bool index =
      m.kind == Moment::Kind::kEvent || (m.kind == Moment::Kind::kTime && !dt.has_time);
  if (index) {
    if (m.value >= n || m.value < -n) return error(absl::StrCat("out of range: ", events));
    return absl::OkStatus();
  }
  if (!dt.has_time) {
    return error(absl::StrCat("device ", dt.device,
                              "'s trace records no time_us: give an event index (event:N)"));
  }
  const int64_t first = dt.TimeOf(snap, TimelinePoint::After(0));
  const int64_t last = dt.TimeOf(snap, TimelinePoint::End(dt.num_events));
  const std::string span =
      absl::StrCat("device ", dt.device, "'s trace runs from time_us ", first, " to ", last, " (",
                   FormatRelativeTime(last - first).substr(1), " long)");
  int64_t t = m.value;
  if (m.kind == Moment::Kind::kSinceStart) t = first + m.value;
  if (m.kind == Moment::Kind::kBeforeEnd) t = last - m.value;
  if (t < first) {
    return error(absl::StrCat(
        "before the trace began: ", span,
        m.kind == Moment::Kind::kTime ? "; for a time since it began write e.g. +25ms" : ""));
  }
  if (t > last) return error(absl::StrCat("after the trace ended: ", span));
  return absl::OkStatus();
}

std::vector<uint32_t> LiveBlocksAt(const DeviceTimeline& dt, TimelinePoint p) {
  std::vector<uint32_t> out;
  for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
    if (dt.blocks[i].LiveAt(p)) out.push_back(i);
  }
  return out;
}

}  // namespace memsnap::analysis
