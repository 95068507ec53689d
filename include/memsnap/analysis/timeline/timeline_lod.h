// A level-of-detail summary of one device's timeline, for charts that zoom (the HTML report): the
// live and reserved curves cut into buckets at several resolutions, and at each resolution the
// largest lifetimes of every stretch of the trace, so that a chart zoomed into any step can be
// redrawn from the summary alone, never from the raw events.
//
// clang-format off
//   DeviceTimeline ──BuildTimelineLod──> TimelineLod
//                                        ├── tiles[]   (level, tile): buckets + band lifetimes
//                                        ├── bands[]   lifetimes drawn as their own band
//                                        └── counted   which lifetimes the curve sums, and why
// clang-format on
//
// Level k cuts the x range into columns * 4^k equal buckets; tile t of level k is buckets
// [t*columns, (t+1)*columns). Coarse levels are stored whole; deeper levels only for the tiles
// the byte budget allows (those around the peaks first). docs/report.md describes the page.
//
// The curve is the sum of the *counted* lifetimes: every lifetime, except those the trace cannot
// place: allocations whose free is missing and whose block is not live at the end (the final state
// proves they were freed, the trace does not say when), and, when counting them would put more
// memory live than was reserved, blocks freed in the trace but allocated before it. So the curve
// is never negative, and on a consistent trace it is DeviceTimeline::LiveAt exactly.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

struct LodOptions {
  int columns = 2000;  // buckets of level 0 (the whole trace), and of every tile
  int bands = 1000;    // band lifetimes per tile: 3/4 by bytes x duration, 1/4 by bytes
  /// Buckets stored in all (a bucket costs about 10 bytes in the page): levels are added while
  /// they fit whole, then single tiles of the next levels, those holding a peak first.
  int64_t max_buckets = 200000;
  /// Distinct band lifetimes in all tiles; tiles of deep levels get fewer bands past it.
  int64_t max_band_lifetimes = 40000;
  /// Zoomed in, the bands must show what builds a peak, not a grey band (issue 36 §2): at
  /// cover_points moments of every stored tile (the highest of each stretch of it), the largest
  /// lifetimes live there become bands until they make up cover_share of the live bytes, at most
  /// cover_per_point of them; these come on top of `bands`, up to max_cover_lifetimes in all.
  int cover_points = 4;
  double cover_share = 0.95;
  int64_t cover_per_point = 2000;
  int64_t max_cover_lifetimes = 40000;
  /// Points whose tiles are refined first (an OOM, say), after the peaks.
  std::vector<TimelinePoint> focus_events;
};

/// One non-empty bucket. The curve between two stored buckets is the state after the earlier
/// one's last event (nothing happened in the buckets between them).
struct LodBucket {
  int64_t index = 0;           // within its level
  TimelinePoint sample_event;  // the point with the most live bytes
  TimelinePoint last_event;    // the bucket's last point (the start: only the initial state)
  int64_t live_min = 0, live_max = 0, live_last = 0;  // counted live requested bytes
  int64_t reserved_max = 0, reserved_last = 0;
};

struct LodTile {
  int level = 0;
  int64_t tile = 0;
  std::vector<LodBucket> buckets;  // ascending index
  std::vector<uint32_t> bands;     // indices into TimelineLod::bands, ascending (stacking order)
};

/// A lifetime drawn as its own band. Bands stack in allocation order (the order of `bands`).
struct LodBand {
  uint32_t lifetime = 0;  // index into DeviceTimeline::blocks
  double alloc_x = 0;     // x of its alloc (x_lo when allocated before the trace)
  double free_x = 0;      // x of its free_completed (x_hi when live at the end)
};

/// The lifetimes the drawn curve counts (every one: the timeline's one model), and how far from
/// possible that model is on a trace that contradicts itself.
struct CountedLifetimes {
  std::vector<bool> counted;  // per DeviceTimeline::blocks entry
  /// The live curve at its lowest, reserved at its lowest, and the most live exceeds reserved by.
  int64_t timeline_min_live = 0;
  int64_t timeline_min_reserved = 0;
  int64_t timeline_max_over_reserved = 0;
};

/// A reserved-bytes curve: its value before event 0 and one step per change.
struct ReservedCurve {
  int64_t start = 0;
  std::vector<ReservedStep> steps;
};

struct TimelineLod {
  int32_t device = 0;
  int64_t num_events = 0;
  bool has_time = false;  // x is microseconds since t0_us; else the event index
  int64_t t0_us = kNoTime;
  int64_t x_span = 0;  // x runs over [0, x_span]
  int columns = 0;
  int levels = 0;              // levels 0..levels-1 have tiles
  int complete_levels = 0;     // levels stored whole
  std::vector<LodTile> tiles;  // by level, then tile
  std::vector<LodBand> bands;  // ascending alloc event, then lifetime index
  CountedLifetimes counted;
  /// The counted curve's highest point (first event reaching it), and the timeline's reserved
  /// peak (DeviceTimeline::peak_reserved, its one definition).
  int64_t peak_bytes = 0;
  TimelinePoint peak_event;
  int64_t peak_reserved = 0;
  TimelinePoint peak_reserved_event;
  int64_t end_live = 0;  // counted live bytes after the last event
  /// Most events in one bucket of the finest stored level (1: nothing finer to show).
  int64_t finest_events_per_bucket = 0;
  /// The budget stopped the zoom before each column held one event: the finest columns are
  /// BucketWidth(levels - 1) wide around the peaks (when levels > complete_levels) and
  /// BucketWidth(complete_levels - 1) elsewhere, each showing the lowest and highest of up to
  /// finest_events_per_bucket events. The page says so (report, LodReducedNote).
  bool reduced = false;
  /// x of every kXCheckpoint-th event (EventX starts from the nearest one).
  static constexpr int64_t kXCheckpoint = 4096;
  std::vector<int64_t> x_checkpoints;

  /// x of point `p` (the start: 0; past the last event: x_span): where the buckets put its event
  /// (times are made non-decreasing, so an event never sits left of an earlier one).
  double EventX(const Snapshot& snap, const DeviceTimeline& dt, TimelinePoint p) const;
  /// Width in x of a bucket of `level`.
  double BucketWidth(int level) const;
};

/// Decides which lifetimes the drawn curve counts (see the file comment).
CountedLifetimes CountLifetimes(const DeviceTimeline& dt);

/// The timeline's reserved curve, the one `timeline` prints: the page draws no other
/// (docs/figures.md).
ReservedCurve TimelineReserved(const DeviceTimeline& dt);

/// The counted live curve, one value per event (after event i), and the value before event 0.
std::vector<int64_t> CountedCurve(const DeviceTimeline& dt, const CountedLifetimes& counted,
                                  int64_t& start);

/// Builds the summary. Needs a timeline that kept every lifetime and its curve. A device without
/// events gives an empty summary (no tiles).
TimelineLod BuildTimelineLod(const Snapshot& snap, const DeviceTimeline& dt,
                             const LodOptions& options = {});

/// BuildTimelineLod in two steps, for a caller with other work to do beside the second (the
/// bands are about half the build of a long trace): the constructor builds everything but the
/// bands; ChooseBands() picks them, reading the timeline and lod() and writing only its own
/// state, so another thread may read lod() meanwhile; Take() returns the whole summary.
/// BuildTimelineLod is the three in a row. `snap` and `dt` must outlive it.
class TimelineLodBuild {
 public:
  TimelineLodBuild(const Snapshot& snap, const DeviceTimeline& dt, const LodOptions& options);
  ~TimelineLodBuild();
  TimelineLodBuild(TimelineLodBuild&&) noexcept;
  TimelineLodBuild& operator=(TimelineLodBuild&&) noexcept;

  /// The summary so far: no bands until Take().
  const TimelineLod& lod() const { return lod_; }
  void ChooseBands();
  /// The summary with the bands ChooseBands() chose (none if it was not called).
  TimelineLod Take() &&;

 private:
  struct State;                   // what the bands read of the build: its x axis, curve, options
  std::unique_ptr<State> state_;  // null when the device has no events
  TimelineLod lod_;
  std::vector<LodBand> bands_;
  std::vector<std::vector<uint32_t>> tile_bands_;  // per tile, as LodTile::bands
};

}  // namespace memsnap::analysis
