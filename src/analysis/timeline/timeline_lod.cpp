// The level-of-detail summary of a device's timeline (timeline_lod.h): buckets at several
// resolutions and the largest lifetimes of each stretch of the trace.
#include "memsnap/analysis/timeline/timeline_lod.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <numeric>
#include <optional>
#include <queue>
#include <span>
#include <tuple>
#include <type_traits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/util/format.h"
#include "memsnap/util/timer.h"

namespace memsnap::analysis {

namespace {

constexpr int kMaxLevels = 12;

// The changes the lifetimes `keep` accepts make to the live curve: on_change(e, +bytes) at each
// one's alloc and on_change(e, -bytes) at its free; returns the bytes live before the first event
// (those allocated before the trace).
template <typename Keep, typename OnChange>
int64_t ForEachLiveChange(const DeviceTimeline& dt, Keep keep, OnChange on_change) {
  int64_t start = 0;
  for (size_t i = 0; i < dt.blocks.size(); ++i) {
    const BlockLifetime& b = dt.blocks[i];
    if (!keep(i)) continue;
    if (std::optional<uint32_t> a = b.alloc_event.index()) {
      on_change(*a, b.requested_size);
    } else {
      start += b.requested_size;
    }
    if (std::optional<uint32_t> f = b.free_completed_event.index())
      on_change(*f, -b.requested_size);
  }
  return start;
}

// Per-event deltas of the lifetimes `keep` accepts: curve[i] is the value after event i.
template <typename Keep>
std::vector<int64_t> CurveOf(const DeviceTimeline& dt, Keep keep, int64_t& start) {
  std::vector<int64_t> curve(dt.num_events, 0);
  start = ForEachLiveChange(dt, keep, [&](uint32_t e, int64_t delta) { curve[e] += delta; });
  int64_t v = start;
  for (int64_t& c : curve) {
    v += c;
    c = v;
  }
  return curve;
}

// Integer x of the events (microseconds since the first time, or the event index), made
// non-decreasing: a bucket is then a contiguous run of events, so tiles and bands cover runs.
// Not stored when the times never decrease (x is then the event's own time less t0) or there are
// none (x is the event index); else stored, in 32 bits when the span fits (a trace shorter than
// 71 minutes). On the 19.5 M-event benchmark file a stored 64-bit axis was 156 MB of the report's
// peak (docs/BENCHMARKS.md, "`report` and `oom` within the file's size").
struct XAxis {
  bool has_time = false;
  int64_t t0 = kNoTime;
  int64_t span = 0;
  int64_t n = 0;
  const TraceEvent* sorted = nullptr;  // the device's events, when their times never decrease
  std::vector<uint32_t> x32;           // per event, running maximum, when the span fits 32 bits
  std::vector<int64_t> x64;            // the same when it does not; all empty: x is the event index

  [[gnu::always_inline]] int64_t X(int64_t i) const {
    if (sorted != nullptr) return sorted[i].time_us - t0;
    if (!x32.empty()) return x32[static_cast<size_t>(i)];
    if (!x64.empty()) return x64[static_cast<size_t>(i)];
    return i;
  }
  // First event with x >= x_value (n when none).
  int64_t FirstAtX(int64_t x_value) const {
    if (sorted != nullptr) {  // x is time - t0
      const std::span<const TraceEvent> events(sorted, static_cast<size_t>(n));
      return std::ranges::lower_bound(events, x_value + t0, {}, &TraceEvent::time_us) -
             events.begin();
    }
    if (!x32.empty()) {
      if (x_value > UINT32_MAX) return n;
      return std::lower_bound(x32.begin(), x32.end(),
                              static_cast<uint32_t>(std::max<int64_t>(x_value, 0))) -
             x32.begin();
    }
    if (!x64.empty()) return std::lower_bound(x64.begin(), x64.end(), x_value) - x64.begin();
    return std::clamp<int64_t>(x_value, 0, n);
  }
};

XAxis MakeXAxis(const Snapshot& snap, const DeviceTimeline& dt) {
  XAxis a;
  const uint32_t n = dt.num_events;
  a.n = n;
  if (dt.has_time) {
    int64_t lo = snap.events[dt.event_begin].time_us, hi = lo;
    bool sorted = true;
    for (uint32_t i = 0; i < n; ++i) {
      int64_t t = snap.events[dt.event_begin + i].time_us;
      sorted = sorted && t >= hi;
      lo = std::min(lo, t);
      hi = std::max(hi, t);
    }
    if (hi > lo) {
      a.has_time = true;
      a.t0 = lo;
      a.span = hi - lo;
      if (sorted) {  // the running maximum of time - lo is time - lo itself
        a.sorted = snap.events.data() + dt.event_begin;
        return a;
      }
      // Every x lies in [0, span].
      auto fill = [&](auto& x) {
        x.resize(n);
        int64_t run = 0;
        for (uint32_t i = 0; i < n; ++i) {
          run = std::max(run, snap.events[dt.event_begin + i].time_us - lo);
          x[i] = static_cast<std::remove_reference_t<decltype(x[0])>>(run);
        }
      };
      if (a.span <= UINT32_MAX) {
        fill(a.x32);
      } else {
        fill(a.x64);
      }
      return a;
    }
  }
  a.span = n;  // event i sits at x = i; the last bucket ends at n
  return a;
}

int64_t BucketsAt(int columns, int level) { return int64_t{columns} << (2 * level); }

int64_t BucketOfX(int64_t x, int64_t buckets, int64_t span) {
  if (span <= 0) return 0;
  auto b = static_cast<int64_t>(static_cast<__int128>(x) * buckets / span);
  return std::clamp<int64_t>(b, 0, buckets - 1);
}

// Smallest x that falls into bucket b of a level with `buckets` buckets: x*buckets/span >= b.
int64_t BucketStartX(int64_t b, int64_t buckets, int64_t span) {
  auto num = static_cast<__int128>(b) * span;
  return static_cast<int64_t>((num + buckets - 1) / buckets);
}

// BucketOfX for non-decreasing x, dividing only when x leaves the current bucket.
class BucketCursor {
 public:
  BucketCursor(int64_t buckets, int64_t span) : buckets_(buckets), span_(span) {}
  int64_t Of(int64_t x) {
    if (x < next_ && x >= start_) return bucket_;
    bucket_ = BucketOfX(x, buckets_, span_);
    start_ = BucketStartX(bucket_, buckets_, span_);
    next_ = bucket_ + 1 >= buckets_ ? INT64_MAX : BucketStartX(bucket_ + 1, buckets_, span_);
    return bucket_;
  }

 private:
  int64_t buckets_, span_;
  int64_t bucket_ = 0, start_ = 1, next_ = 0;  // empty: the first call divides
};

// Reads reserved bytes at increasing events from any starting event.
class ReservedReader {
 public:
  ReservedReader(const ReservedCurve& r, int64_t first) : r_(r) {
    auto it = std::upper_bound(
        r.steps.begin(), r.steps.end(), first - 1,
        [](int64_t x, const ReservedStep& s) { return x < static_cast<int64_t>(s.event); });
    next_ = static_cast<size_t>(it - r.steps.begin());
    value_ = next_ == 0 ? r.start : r.steps[next_ - 1].bytes;
  }
  int64_t At(int64_t e) {
    while (next_ < r_.steps.size() && static_cast<int64_t>(r_.steps[next_].event) <= e) {
      value_ = r_.steps[next_++].bytes;
    }
    return value_;
  }

 private:
  const ReservedCurve& r_;
  size_t next_ = 0;
  int64_t value_ = 0;
};

struct Builder {
  const Snapshot& snap;
  const DeviceTimeline& dt;
  const LodOptions& options;
  XAxis axis;
  int64_t start = 0;
  ReservedCurve reserved;
  // The counted curve after event e is curve[e] + curve_offset: the timeline's own stored curve
  // when the two agree at every event (a consistent trace), else own_curve.
  std::vector<int64_t> own_curve;
  std::span<const int64_t> curve;
  int64_t curve_offset = 0;

  int64_t Live(int64_t e) const {
    return e < 0 ? start : curve[static_cast<size_t>(e)] + curve_offset;
  }

  // First event with x >= x_value.
  int64_t FirstEventAtX(int64_t x_value) const { return axis.FirstAtX(x_value); }
  int64_t BucketStartX(int64_t b, int64_t buckets) const {
    return analysis::BucketStartX(b, buckets, axis.span);
  }

  // Buckets of tile `tile` of `level`, from its events; the tile's first bucket always exists (the
  // state carried from before the tile when no event falls into it).
  LodTile Tile(int level, int64_t tile, int64_t* most_events) const {
    const int64_t buckets = BucketsAt(options.columns, level);
    const int64_t first_bucket = tile * options.columns;
    const int64_t end_bucket = first_bucket + options.columns;
    const int64_t n = dt.num_events;
    int64_t e = tile == 0 ? 0 : FirstEventAtX(BucketStartX(first_bucket, buckets));
    int64_t e_end = end_bucket >= buckets ? n : FirstEventAtX(BucketStartX(end_bucket, buckets));
    LodTile t;
    t.level = level;
    t.tile = tile;
    ReservedReader reserved(this->reserved, e);
    auto open = [&](int64_t index, TimelinePoint p, int64_t res) {
      LodBucket b;
      b.index = index;
      b.sample_event = b.last_event = p;
      b.live_min = b.live_max = b.live_last = Live(p.index());
      b.reserved_max = b.reserved_last = res;
      t.buckets.push_back(b);
    };
    int64_t count = 0;
    if (tile == 0) {
      open(0, TimelinePoint::Start(), this->reserved.start);  // the first bucket holds the start
    } else if (e >= e_end || BucketOfX(axis.X(e), buckets, axis.span) != first_bucket) {
      const TimelinePoint before = TimelinePoint::Before(static_cast<uint32_t>(e));  // carried in
      open(first_bucket, before, ReservedReader(this->reserved, e - 1).At(e - 1));
      count = 0;
    }
    int64_t current = t.buckets.empty() ? -1 : t.buckets.back().index;
    BucketCursor cursor(buckets, axis.span);
    for (; e < e_end; ++e) {
      int64_t b = cursor.Of(axis.X(e));
      int64_t live = Live(e), res = reserved.At(e);
      if (b != current) {
        if (most_events) *most_events = std::max(*most_events, count);
        open(b, TimelinePoint::After(static_cast<uint32_t>(e)), res);
        current = b;
        count = 1;
        continue;
      }
      ++count;
      LodBucket& k = t.buckets.back();
      k.last_event = TimelinePoint::After(static_cast<uint32_t>(e));
      k.live_last = live;
      k.reserved_last = res;
      k.reserved_max = std::max(k.reserved_max, res);
      k.live_min = std::min(k.live_min, live);
      if (live > k.live_max) {
        k.live_max = live;
        k.sample_event = k.last_event;
      }
    }
    if (most_events) *most_events = std::max(*most_events, count);
    return t;
  }

  // Non-empty buckets of a whole level, counted without storing them.
  int64_t CountBuckets(int level) const {
    const int64_t buckets = BucketsAt(options.columns, level);
    int64_t count = 1, current = 0;  // bucket 0 holds the initial state
    BucketCursor cursor(buckets, axis.span);
    for (int64_t e = 0; e < axis.n; ++e) {
      int64_t b = cursor.Of(axis.X(e));
      if (b != current) {
        ++count;
        current = b;
      }
    }
    return count + (int64_t{1} << (2 * level));  // at most one carried bucket per tile
  }
};

// Chooses each stored tile's band lifetimes (see LodOptions::bands): the bands in stacking
// order, and per tile of lod.tiles its bands' indices into them.
void ChooseBands(const Builder& bld, const TimelineLod& lod, std::vector<LodBand>& bands,
                 std::vector<std::vector<uint32_t>>& tile_band_slots) {
  const DeviceTimeline& dt = bld.dt;
  // x of each lifetime's alloc and free: stored in 32 bits when the span fits (8 bytes a
  // lifetime; every level reads them, and reading the free's event each time cost the report a
  // tenth of its CPU), else read from the lifetimes. Four 64-bit arrays (x and event of both)
  // were 32 bytes a lifetime, 200 MB of the 19.5 M-event benchmark's peak (docs/BENCHMARKS.md).
  auto alloc_x_of = [&](uint32_t i) -> int64_t {
    std::optional<uint32_t> alloc = dt.blocks[i].alloc_event.index();
    return alloc ? bld.axis.X(*alloc) : 0;
  };
  auto free_x_of = [&](uint32_t i) -> int64_t {
    std::optional<uint32_t> free = dt.blocks[i].free_completed_event.index();
    return free ? bld.axis.X(*free) : bld.axis.span;
  };
  std::vector<uint32_t> alloc_x32, free_x32;
  if (bld.axis.span <= UINT32_MAX) {
    alloc_x32.resize(dt.blocks.size());
    free_x32.resize(dt.blocks.size());
    for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
      alloc_x32[i] = static_cast<uint32_t>(alloc_x_of(i));
      free_x32[i] = static_cast<uint32_t>(free_x_of(i));
    }
  }
  auto alloc_x = [&](uint32_t i) -> int64_t {
    return alloc_x32.empty() ? alloc_x_of(i) : alloc_x32[i];
  };
  auto free_x = [&](uint32_t i) -> int64_t {
    return free_x32.empty() ? free_x_of(i) : free_x32[i];
  };
  // Events of each lifetime as the counted curve sees them: live after event e when
  // alloc_e <= e < free_e (-1: before the trace; INT64_MAX: never freed).
  auto alloc_e = [&](uint32_t i) -> int64_t {
    std::optional<uint32_t> alloc = dt.blocks[i].alloc_event.index();
    return alloc ? static_cast<int64_t>(*alloc) : -1;
  };
  auto free_e = [&](uint32_t i) -> int64_t {
    std::optional<uint32_t> free = dt.blocks[i].free_completed_event.index();
    return free ? static_cast<int64_t>(*free) : INT64_MAX;
  };
  // The sets below hold chosen lifetimes only (a few thousand): hashed rather than tables by
  // lifetime, whose 10 bytes a lifetime were 65 MB of the 19.5 M-event benchmark's peak while
  // the report reads its sites beside this (docs/BENCHMARKS.md).
  absl::flat_hash_set<uint32_t> covered;
  int64_t cover_used = 0;
  absl::flat_hash_map<uint32_t, int32_t> slot_of;  // index into chosen
  std::vector<uint32_t> chosen;
  int64_t chosen_uncovered = 0;  // chosen lifetimes that count against max_band_lifetimes
  std::vector<std::vector<uint32_t>> tile_bands(lod.tiles.size());
  for (int level = 0; level < lod.levels; ++level) {
    // Stored tiles of this level, in tile order (lod.tiles is sorted by level, tile).
    std::vector<size_t> slots;
    for (size_t s = 0; s < lod.tiles.size(); ++s) {
      if (lod.tiles[s].level == level) slots.push_back(s);
    }
    if (slots.empty()) continue;
    const int64_t buckets = BucketsAt(lod.columns, level);
    const int64_t width = std::max<int64_t>(1, bld.axis.span / buckets);
    const int64_t k_max = bld.options.bands;
    if (k_max <= 0) break;
    std::vector<std::vector<uint32_t>> cand(slots.size());
    std::vector<int64_t> tile_ids;
    for (size_t s : slots) tile_ids.push_back(lod.tiles[s].tile);
    // Which tiles a lifetime overlaps; floating point is close enough to pick candidates.
    const double tiles_per_x = static_cast<double>(buckets / lod.columns) /
                               static_cast<double>(std::max<int64_t>(bld.axis.span, 1));
    const int64_t last_tile = buckets / lod.columns - 1;
    auto tile_of = [&](int64_t x) {
      return std::clamp<int64_t>(static_cast<int64_t>(static_cast<double>(x) * tiles_per_x), 0,
                                 last_tile);
    };
    for (uint32_t i = 0; i < dt.blocks.size(); ++i) {
      if (!lod.counted.counted[i]) continue;
      int64_t ta = tile_of(alloc_x(i));
      int64_t tb = tile_of(free_x(i));
      auto it = std::lower_bound(tile_ids.begin(), tile_ids.end(), ta);
      for (; it != tile_ids.end() && *it <= tb; ++it) cand[it - tile_ids.begin()].push_back(i);
    }
    // Per tile, its candidates ranked twice: by bytes x duration inside the tile, and by bytes.
    std::vector<std::vector<uint32_t>> by_area(slots.size()), by_size(slots.size());
    for (size_t j = 0; j < slots.size(); ++j) {
      std::vector<uint32_t>& c = cand[j];
      const int64_t tile = tile_ids[j];
      const int64_t xa = bld.BucketStartX(tile * lod.columns, buckets);
      const int64_t xb = bld.BucketStartX((tile + 1) * lod.columns, buckets);
      // The n_area best by (score descending, lifetime ascending), a total order, kept in a heap
      // of n_area rather than sorting every candidate: the whole level 0 tile's candidates are
      // every lifetime (12 bytes each with their scores and order, 78 MB on the 19.5 M-event
      // benchmark file). The same lifetimes in the same order as a partial sort of them all.
      using Scored = std::pair<double, uint32_t>;  // (score, lifetime)
      auto better = [](const Scored& a, const Scored& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
      };
      const size_t n_area = std::min<size_t>(c.size(), static_cast<size_t>(k_max) * 3 / 4);
      std::vector<Scored> heap;  // the best n_area so far, the worst of them on top
      heap.reserve(n_area);
      for (uint32_t i : c) {
        if (n_area == 0) break;
        int64_t a = std::max(alloc_x(i), xa), b = std::min(free_x(i), xb);
        const Scored s{static_cast<double>(dt.blocks[i].requested_size) *
                           static_cast<double>(std::max(b - a, width)),
                       i};
        if (heap.size() < n_area) {
          heap.push_back(s);
          std::push_heap(heap.begin(), heap.end(), better);
        } else if (better(s, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), better);
          heap.back() = s;
          std::push_heap(heap.begin(), heap.end(), better);
        }
      }
      std::sort_heap(heap.begin(), heap.end(), better);
      for (const Scored& s : heap) by_area[j].push_back(s.second);
      // The rest by size, so the short spikes that make a peak get their own band too.
      size_t n_size = std::min<size_t>(c.size(), static_cast<size_t>(k_max));
      // A total order, so selecting the n_size first and sorting them is the partial sort's
      // result; selecting is linear where the partial sort's heap was a tenth of this function.
      auto larger = [&](uint32_t a, uint32_t b) {
        int64_t sa = dt.blocks[a].requested_size, sb = dt.blocks[b].requested_size;
        return sa != sb ? sa > sb : a < b;
      };
      const auto kept = c.begin() + static_cast<std::ptrdiff_t>(n_size);
      std::nth_element(c.begin(), kept, c.end(), larger);
      std::sort(c.begin(), kept, larger);
      by_size[j].assign(c.begin(), kept);
    }
    // Per tile, the lifetimes that make up most of the live bytes at its highest moments (see
    // LodOptions::cover_share): zoomed in there, the bands are the memory, not a grey band.
    std::vector<std::vector<uint32_t>> must(slots.size());
    const int points = std::max(0, bld.options.cover_points);
    for (size_t j = 0; j < slots.size() && points > 0; ++j) {
      const LodTile& t = lod.tiles[slots[j]];
      std::vector<const LodBucket*> best(static_cast<size_t>(points), nullptr);
      for (const LodBucket& b : t.buckets) {
        int64_t g = (b.index - t.tile * lod.columns) * points / lod.columns;
        const LodBucket*& slot = best[static_cast<size_t>(std::clamp<int64_t>(g, 0, points - 1))];
        if (slot == nullptr || b.live_max > slot->live_max) slot = &b;
      }
      std::vector<uint32_t> live;
      for (const LodBucket* b : best) {
        if (b == nullptr || cover_used >= bld.options.max_cover_lifetimes) continue;
        const int64_t e = b->sample_event.index();
        // live_max is the curve at the bucket's sample event: the bands read no curve.
        const int64_t target =
            static_cast<int64_t>(static_cast<double>(b->live_max) * bld.options.cover_share);
        live.clear();
        // x never decreases with the event, so a lifetime whose x range misses e's is not live
        // there: the 4-byte x arrays answer most lifetimes without reading the lifetime itself.
        const int64_t xe = e >= 0 ? bld.axis.X(e) : -1;
        for (uint32_t i : cand[j]) {
          if (xe >= 0 && (alloc_x(i) > xe || free_x(i) < xe)) continue;
          if (alloc_e(i) <= e && free_e(i) > e) live.push_back(i);
        }
        std::sort(live.begin(), live.end(), [&](uint32_t a, uint32_t b) {
          int64_t sa = dt.blocks[a].requested_size, sb = dt.blocks[b].requested_size;
          return sa != sb ? sa > sb : a < b;
        });
        int64_t sum = 0, taken = 0;
        for (uint32_t i : live) {
          if (sum >= target || taken >= bld.options.cover_per_point) break;
          sum += dt.blocks[i].requested_size;
          ++taken;
          if (!covered.contains(i)) {
            if (cover_used >= bld.options.max_cover_lifetimes) break;
            covered.insert(i);
            ++cover_used;
          }
          must[j].push_back(i);
        }
      }
      std::sort(must[j].begin(), must[j].end());
      must[j].erase(std::unique(must[j].begin(), must[j].end()), must[j].end());
    }
    // The tiles' bands for k per tile; long-lived lifetimes repeat from tile to tile, so only the
    // new ones count against max_band_lifetimes. k halves until they fit.
    absl::flat_hash_set<uint32_t> taken;  // by the tile in hand
    auto pick = [&](size_t j, int64_t k, std::vector<uint32_t>& out) {
      taken.clear();
      for (uint32_t i : must[j]) {
        out.push_back(i);
        taken.insert(i);
      }
      const size_t limit = must[j].size() + static_cast<size_t>(k);
      size_t n_area = std::min<size_t>(by_area[j].size(), static_cast<size_t>(k) * 3 / 4);
      for (size_t q = 0; q < n_area; ++q) {
        if (taken.insert(by_area[j][q]).second) out.push_back(by_area[j][q]);
      }
      for (size_t q = 0; q < by_size[j].size() && out.size() < limit; ++q) {
        if (!taken.contains(by_size[j][q])) out.push_back(by_size[j][q]);
      }
    };
    int64_t k = k_max;
    for (;; k = std::max<int64_t>(k / 2, 16)) {
      absl::flat_hash_set<uint32_t> fresh;
      int64_t added = 0;
      for (size_t j = 0; j < slots.size(); ++j) {
        std::vector<uint32_t> out;
        pick(j, k, out);
        for (uint32_t i : out) {
          // Covered lifetimes have a budget of their own.
          if (!slot_of.contains(i) && !covered.contains(i) && fresh.insert(i).second) ++added;
        }
      }
      if (chosen_uncovered + added <= bld.options.max_band_lifetimes || k <= 16) {
        break;
      }
    }
    for (size_t j = 0; j < slots.size(); ++j) {
      std::vector<uint32_t> out;
      pick(j, k, out);
      for (uint32_t i : out) {
        if (slot_of.emplace(i, static_cast<int32_t>(chosen.size())).second) {
          chosen.push_back(i);
          if (!covered.contains(i)) ++chosen_uncovered;
        }
        tile_bands[slots[j]].push_back(i);
      }
    }
  }
  // Stacking order: allocation order (lifetimes allocated before the trace first), then index.
  auto key = [&](uint32_t i) { return std::tuple(dt.blocks[i].live_from(), i); };
  std::sort(chosen.begin(), chosen.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  for (size_t q = 0; q < chosen.size(); ++q) slot_of[chosen[q]] = static_cast<int32_t>(q);
  bands.reserve(chosen.size());
  for (uint32_t i : chosen) {
    bands.push_back(LodBand{i, static_cast<double>(alloc_x(i)), static_cast<double>(free_x(i))});
  }
  tile_band_slots.assign(lod.tiles.size(), {});
  for (size_t s = 0; s < lod.tiles.size(); ++s) {
    for (uint32_t i : tile_bands[s]) {
      tile_band_slots[s].push_back(static_cast<uint32_t>(slot_of.at(i)));
    }
    std::sort(tile_band_slots[s].begin(), tile_band_slots[s].end());
  }
}

}  // namespace

double TimelineLod::EventX(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p) const {
  if (p.is_start()) return 0.0;
  const int64_t e = p.index();
  if (e >= num_events) return static_cast<double>(x_span);
  if (!has_time) return static_cast<double>(e);
  size_t k = static_cast<size_t>(e / kXCheckpoint);
  int64_t x = x_checkpoints[k];
  for (int64_t i = static_cast<int64_t>(k) * kXCheckpoint + 1; i <= e; ++i) {
    x = std::max(x, snap.events[dt.event_begin + i].time_us - t0_us);
  }
  return static_cast<double>(x);
}

double TimelineLod::BucketWidth(int level) const {
  return static_cast<double>(x_span) / static_cast<double>(BucketsAt(columns, level));
}

namespace {

// CountLifetimes, also giving the drawn curve and its start. The page draws the timeline's one
// model of what was live (docs/figures.md, "When the trace does not explain the state"): every
// lifetime counts, and the start holds the final bytes the trace cannot explain. With the
// timeline's stored curve `same_as_timeline` is set and `curve` left empty (read the timeline's);
// a timeline built without it gets the same curve from its lifetimes.
CountedLifetimes CountLifetimesAndCurve(const DeviceTimeline& dt, std::vector<int64_t>& curve,
                                        int64_t& start, bool& same_as_timeline) {
  CountedLifetimes c;
  c.counted.assign(dt.blocks.size(), true);
  same_as_timeline = dt.live_net.size() == dt.num_events;
  if (same_as_timeline) {
    start = dt.start_requested;
    curve.clear();
  } else {
    curve = CurveOf(
        dt, [](size_t) { return true; }, start);
    for (int64_t& v : curve) v += dt.unreconciled_requested_bytes;
    start += dt.unreconciled_requested_bytes;
  }
  // How far from possible the model is: more live than reserved is what no allocator does.
  const std::span<const int64_t> values = same_as_timeline ? dt.live_net : curve;
  const int64_t offset = same_as_timeline ? dt.start_requested : 0;
  c.timeline_min_live = start;
  for (int64_t v : values) c.timeline_min_live = std::min(c.timeline_min_live, v + offset);
  const ReservedCurve reserved = TimelineReserved(dt);
  c.timeline_min_reserved = reserved.start;
  for (const ReservedStep& step : reserved.steps)
    c.timeline_min_reserved = std::min(c.timeline_min_reserved, step.bytes);
  c.timeline_max_over_reserved = dt.MaxLiveOverReserved();
  return c;
}

}  // namespace

CountedLifetimes CountLifetimes(const DeviceTimeline& dt) {
  std::vector<int64_t> curve;
  int64_t start = 0;
  bool same_as_timeline = false;
  return CountLifetimesAndCurve(dt, curve, start, same_as_timeline);
}

ReservedCurve TimelineReserved(const DeviceTimeline& dt) {
  ReservedCurve r;
  r.start = dt.start_reserved;
  r.steps = dt.reserved_steps;
  return r;
}

std::vector<int64_t> CountedCurve(const DeviceTimeline& dt, const CountedLifetimes& counted,
                                  int64_t& start) {
  return CurveOf(
      dt, [&](size_t i) { return counted.counted[i]; }, start);
}

// What ChooseBands reads of the build, kept from the constructor to it.
struct TimelineLodBuild::State {
  State(const Snapshot& snap, const DeviceTimeline& dt, const LodOptions& given, int columns,
        int64_t start)
      : options(given), bld{snap, dt, options, MakeXAxis(snap, dt), start, TimelineReserved(dt),
                            {},   {}, 0} {
    options.columns = columns;
  }
  LodOptions options;
  Builder bld;  // reads `options`
};

TimelineLodBuild::TimelineLodBuild(const Snapshot& snap, const DeviceTimeline& dt,
                                   const LodOptions& options) {
  TimelineLod& lod = lod_;
  lod.device = dt.device;
  lod.num_events = dt.num_events;
  lod.columns = std::max(1, options.columns);
  // The counted curve is the timeline's stored one on a consistent trace: then it is read from
  // there, without a copy (8 bytes an event, 156 MB of the 19.5 M-event benchmark's peak).
  // Checked at every event, never assumed.
  std::vector<int64_t> counted_curve;
  int64_t counted_start = 0;
  bool same_as_timeline = false;
  std::optional<ScopedTimer> phase;
  phase.emplace("counted curve");
  lod.counted = CountLifetimesAndCurve(dt, counted_curve, counted_start, same_as_timeline);
  lod.peak_reserved = dt.peak_reserved;
  lod.peak_reserved_event = dt.peak_reserved_event;
  if (dt.num_events == 0) {
    lod.end_live = dt.end_requested;
    lod.peak_bytes = dt.end_requested;
    return;
  }
  state_ = std::make_unique<State>(snap, dt, options, lod.columns, counted_start);
  const LodOptions& opts = state_->options;
  Builder& bld = state_->bld;
  if (same_as_timeline) {
    bld.curve = dt.live_net;
    bld.curve_offset = dt.start_requested;
  } else {
    bld.own_curve = std::move(counted_curve);
    bld.curve = bld.own_curve;
  }
  lod.has_time = bld.axis.has_time;
  lod.t0_us = bld.axis.t0;
  lod.x_span = bld.axis.span;
  lod.end_live = bld.Live(static_cast<int64_t>(bld.curve.size()) - 1);
  for (int64_t i = 0; i < bld.axis.n; i += TimelineLod::kXCheckpoint) {
    lod.x_checkpoints.push_back(bld.axis.X(i));
  }
  if (same_as_timeline) {
    lod.peak_bytes = dt.peak_requested;  // the very figure `memsnap timeline` prints
    lod.peak_event = dt.peak_event;
  } else {
    lod.peak_bytes = bld.start;
    for (uint32_t e = 0; e < bld.curve.size(); ++e) {
      if (bld.Live(e) > lod.peak_bytes) {
        lod.peak_bytes = bld.Live(e);
        lod.peak_event = TimelinePoint::After(e);
      }
    }
  }

  // Whole levels while they fit, then the tiles of deeper levels that hold a focus, then others.
  phase.emplace("tiles");
  int64_t used = 0, most = 0;
  int level = 0;
  // Buckets narrower than the clock's tick (1 us, or one event) show nothing more.
  auto below_resolution = [&](int l) { return bld.axis.span < BucketsAt(lod.columns, l); };
  for (; level < kMaxLevels; ++level) {
    if (level > 0 && most <= 1) break;  // every bucket already holds at most one event
    if (level > 0 && below_resolution(level)) break;
    int64_t count = bld.CountBuckets(level);
    if (used + count > opts.max_buckets && level > 0) break;
    most = 0;
    for (int64_t t = 0; t < (int64_t{1} << (2 * level)); ++t) {
      lod.tiles.push_back(bld.Tile(level, t, &most));
      used += static_cast<int64_t>(lod.tiles.back().buckets.size());
    }
    lod.complete_levels = level + 1;
  }
  lod.levels = lod.complete_levels;
  // The start sits where the first event does.
  std::vector<int64_t> focus_x = {bld.axis.X(lod.peak_event.event().value_or(0)),
                                  bld.axis.X(lod.peak_reserved_event.event().value_or(0))};
  for (TimelinePoint p : opts.focus_events) {
    std::optional<uint32_t> e = p.event();
    if (e && *e < dt.num_events) focus_x.push_back(bld.axis.X(*e));
  }
  // Per stored tile of the level above: its id and the most live bytes over each child's range.
  struct Parent {
    int64_t tile;
    int64_t child_live[4];
  };
  auto parents_of = [&](const LodTile* begin, const LodTile* end) {
    std::vector<Parent> out;
    for (const LodTile* p = begin; p != end; ++p) {
      Parent q{p->tile, {0, 0, 0, 0}};
      for (const LodBucket& b : p->buckets) {
        int64_t child = (b.index - p->tile * lod.columns) * 4 / lod.columns;
        q.child_live[child] = std::max(q.child_live[child], b.live_max);
      }
      out.push_back(q);
    }
    return out;
  };
  std::vector<Parent> parents;
  {
    size_t first = lod.tiles.size() - (size_t{1} << (2 * (lod.complete_levels - 1)));
    parents = parents_of(lod.tiles.data() + first, lod.tiles.data() + lod.tiles.size());
  }
  std::vector<LodTile> deeper;
  for (; level < kMaxLevels && most > 1 && !parents.empty(); ++level) {
    const int64_t buckets = BucketsAt(lod.columns, level);
    if (below_resolution(level)) break;
    // Children of the stored parents: those holding a focus first (in focus order), then by the
    // most live bytes the parent saw over their x range.
    struct Cand {
      int focus;
      int64_t neg_live;
      int64_t tile;
    };
    std::vector<Cand> cands;
    for (const Parent& p : parents) {
      for (int64_t q = 0; q < 4; ++q) {
        int64_t tile = p.tile * 4 + q;
        int64_t lo = tile * lod.columns, hi = lo + lod.columns;  // the child's buckets
        int focus = static_cast<int>(focus_x.size());
        for (size_t f = 0; f < focus_x.size(); ++f) {
          int64_t b = BucketOfX(focus_x[f], buckets, bld.axis.span);
          if (b >= lo && b < hi) {
            focus = static_cast<int>(f);
            break;
          }
        }
        cands.push_back({focus, -p.child_live[q], tile});
      }
    }
    std::sort(cands.begin(), cands.end(), [](const Cand& a, const Cand& b) {
      return std::tie(a.focus, a.neg_live, a.tile) < std::tie(b.focus, b.neg_live, b.tile);
    });
    std::vector<LodTile> added;
    int64_t level_most = 0;
    for (const Cand& c : cands) {
      int64_t m = 0;
      LodTile t = bld.Tile(level, c.tile, &m);
      if (used + static_cast<int64_t>(t.buckets.size()) > opts.max_buckets) continue;
      used += static_cast<int64_t>(t.buckets.size());
      level_most = std::max(level_most, m);
      added.push_back(std::move(t));
    }
    if (added.empty()) break;
    std::sort(added.begin(), added.end(),
              [](const LodTile& a, const LodTile& b) { return a.tile < b.tile; });
    parents = parents_of(added.data(), added.data() + added.size());
    for (LodTile& t : added) deeper.push_back(std::move(t));
    most = level_most;
    lod.levels = level + 1;
  }
  for (LodTile& t : deeper) lod.tiles.push_back(std::move(t));
  lod.finest_events_per_bucket = most;
  // The bands read the buckets, not the curve: a copy of it is freed now, and the timeline's
  // own may be (the report drops it, docs/report.md "Size and speed").
  std::vector<int64_t>().swap(bld.own_curve);
  bld.curve = {};
  // The budget, not the resolution, stopped the zoom: a column still holds several events.
  lod.reduced = most > 1 && !below_resolution(lod.levels);
}

TimelineLodBuild::~TimelineLodBuild() = default;
TimelineLodBuild::TimelineLodBuild(TimelineLodBuild&&) noexcept = default;
TimelineLodBuild& TimelineLodBuild::operator=(TimelineLodBuild&&) noexcept = default;

void TimelineLodBuild::ChooseBands() {
  if (state_ == nullptr) return;
  ScopedTimer timer("bands");
  analysis::ChooseBands(state_->bld, lod_, bands_, tile_bands_);
}

TimelineLod TimelineLodBuild::Take() && {
  lod_.bands = std::move(bands_);
  for (size_t s = 0; s < tile_bands_.size() && s < lod_.tiles.size(); ++s) {
    lod_.tiles[s].bands = std::move(tile_bands_[s]);
  }
  state_.reset();
  return std::move(lod_);
}

TimelineLod BuildTimelineLod(const Snapshot& snap, const DeviceTimeline& dt,
                             const LodOptions& options) {
  TimelineLodBuild build(snap, dt, options);
  build.ChooseBands();
  return std::move(build).Take();
}

}  // namespace memsnap::analysis
