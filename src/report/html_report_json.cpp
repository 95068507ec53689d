// The JSON pieces both pages share: stacks, site tables, the file header, a device's zoomable
// timeline and its allocator states. Large arrays are packed (PackVarints); web/src/codec.js reads
// them back. The field layout is documented in docs/report.md, "The page's data".
#include <algorithm>
#include <cmath>
#include <span>
#include <tuple>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/sites/categories.h"
#include "memsnap/report/frag_render.h"
#include "memsnap/report/html_report.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/table.h"
#include "report/html_report_internal.h"
#include "report/render_util.h"

namespace memsnap::report {

namespace {

// The width of a column of `level`: "1.2 ms" as every time is written (FormatDuration), or
// "3 events" for a trace without times.
std::string LevelWidthText(const analysis::TimelineLod& lod, int level) {
  double w = lod.BucketWidth(level);
  if (!lod.has_time)
    return absl::StrCat(FormatCount(static_cast<int64_t>(std::ceil(w))), " events");
  return FormatDuration(std::max<int64_t>(1, std::llround(w)));
}

}  // namespace

std::string LodReducedNote(const analysis::TimelineLod& lod) {
  if (!lod.reduced || lod.levels < 1 || lod.complete_levels < 1) return "";
  std::string where =
      lod.levels > lod.complete_levels
          ? absl::StrCat(LevelWidthText(lod, lod.levels - 1), " per column around the peaks and ",
                         LevelWidthText(lod, lod.complete_levels - 1), " elsewhere")
          : absl::StrCat(LevelWidthText(lod, lod.levels - 1), " per column");
  return absl::StrCat("To keep the page small, zooming shows down to ", where,
                      "; closer in, a column shows the lowest and highest of its events (up to ",
                      FormatCount(lod.finest_events_per_bucket), ").");
}

std::string StatesReducedNote(const analysis::AllocatorStates& states) {
  if (states.samples >= states.even_moments) return "";
  return absl::StrCat("The allocator's state is kept at ", states.samples,
                      " evenly spaced moments (of ", states.even_moments,
                      ") and at the marked ones, to keep the page small.");
}

std::string PackVarints(const std::vector<int64_t>& values) {
  std::string bytes;
  bytes.reserve(values.size() * 2);
  for (int64_t v : values) {
    uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);  // zigzag
    while (z >= 0x80) {
      bytes.push_back(static_cast<char>((z & 0x7f) | 0x80));
      z >>= 7;
    }
    bytes.push_back(static_cast<char>(z));
  }
  return absl::Base64Escape(bytes);
}

namespace internal {

using analysis::DeviceTimeline;
using analysis::TimelinePoint;

namespace {

// What a frame is to attribution (docs/attribution.md), one character in "frame_kinds": '0' the
// user's Python code, '1' library Python, '2' native code that can own memory (an autograd node,
// an operator, a kernel), '3' machinery (allocator, dispatcher, interpreter...), '4' unknown (a
// text added without its frame).
char FrameKind(const Snapshot& snap, FrameId id) {
  const Frame& f = snap.frames.Get(id);
  std::string_view file = snap.strings.Get(f.filename);
  analysis::FrameClass c = analysis::ClassifyFrame(snap.strings.Get(f.name), file);
  if (c == analysis::FrameClass::kPython) return analysis::IsLibraryPath(file) ? '1' : '0';
  return analysis::IsMachinery(c) ? '3' : '2';
}

}  // namespace

int StackTableJson::Add(StackId stack) {
  // An empty stack (a block allocated before recording began) has no frames to filter out: the
  // page says "no stack recorded", not "every frame filtered out".
  if (!stack.valid() || snap_.stacks.Get(stack).empty()) return -1;
  auto it = stack_index_.find(stack.v);
  if (it != stack_index_.end()) return it->second;
  std::vector<int> frames;
  for (FrameId f : filter_.Filtered(stack)) {
    int text = AddText(analysis::DisplayFrameText(snap_, f));
    frame_kinds_[text] = FrameKind(snap_, f);
    frames.push_back(text);
  }
  int id = static_cast<int>(stacks_.size());
  stacks_.push_back(std::move(frames));
  stack_index_.emplace(stack.v, id);
  return id;
}

int StackTableJson::AddText(const std::string& text) {
  auto [it, inserted] = text_index_.try_emplace(text, static_cast<int>(frame_texts_.size()));
  if (inserted) {
    frame_texts_.push_back(text);
    frame_kinds_.push_back('4');
  }
  return it->second;
}

Json StackTableJson::Indices(const std::vector<std::string>& texts) {
  Json out = Json::array();
  for (const std::string& t : texts) out.push_back(AddText(t));
  return out;
}

Json StackTableJson::FramesJson() const { return Json(frame_texts_); }
Json StackTableJson::FrameKindsJson() const { return Json(frame_kinds_); }
Json StackTableJson::StacksJson() const { return Json(stacks_); }

Json BandSitesJson(const analysis::ReportAnalysis& a) { return Json(a.band_sites); }

Json CategoryNamesJson(const analysis::CategoryNames& names) {
  Json j = Json::array();
  for (int k = 0; k < names.size(); ++k) {
    j.push_back(std::string(names.Name(static_cast<analysis::Category>(k))));
  }
  return j;
}

Json CategoryRulesJson() {
  Json j = Json::array();
  for (int k = 0; k < analysis::kNumCategoryRules; ++k) {
    j.push_back(std::string(analysis::CategoryRuleName(static_cast<analysis::CategoryRule>(k))));
  }
  return j;
}

Json SiteTableJson(const analysis::SiteTable& table, const analysis::CategoryNames& names,
                   StackTableJson& stacks) {
  Json j;
  if (!table.moment.empty()) j["moment"] = table.moment;
  j["total_bytes"] = table.total_bytes;
  j["total_count"] = table.total_count;
  Json rows = Json::array();
  for (const analysis::GroupRow& r : table.rows) {
    Json row;
    row["key"] = r.key;
    row["site"] = r.site.empty() ? r.key : r.site;
    row["category"] = std::string(names.Name(r.category()));
    row["category_rule"] = std::string(analysis::CategoryRuleName(r.rule()));
    row["frames"] = stacks.Indices(r.frames);
    row["bytes"] = r.bytes;
    row["rounded"] = r.rounded_bytes;
    row["count"] = r.count;
    if (r.synthetic) row["synthetic"] = true;
    rows.push_back(std::move(row));
  }
  j["rows"] = std::move(rows);
  return j;
}

Json FileJson(const Snapshot& snap) {
  Json j;
  j["path"] = snap.source.path;
  j["file_bytes"] = snap.source.file_bytes;
  j["segments"] = snap.segments.size();
  j["blocks"] = snap.blocks.size();
  j["events"] = snap.events.size();
  int64_t reserved = 0, active = 0;
  for (const Segment& s : snap.segments) reserved += s.total_size;
  for (const Block& b : snap.blocks) {
    if (b.is_active()) active += b.requested_size;
  }
  j["reserved_bytes"] = reserved;
  j["live_bytes"] = active;
  if (snap.settings.present) j["alloc_conf"] = snap.settings.conf;
  return j;
}

namespace {

// The page's encoding of a lifetime's event: its index, -1 when the trace did not see it.
int64_t EventOrNone(analysis::LocalEvent e) { return e.PointOr(TimelinePoint::Start()).index(); }

// One tile's buckets, 8 varints each, deltas against the previous bucket (docs/report.md).
std::string PackTile(const analysis::LodTile& t, int columns) {
  std::vector<int64_t> v;
  v.reserve(t.buckets.size() * 8);
  int64_t index = t.tile * columns, last = -1, live = 0, reserved = 0;
  for (const analysis::LodBucket& b : t.buckets) {
    v.push_back(b.index - index);
    v.push_back(b.sample_event.index() - last);
    v.push_back(b.last_event.index() - b.sample_event.index());
    v.push_back(b.live_max - live);
    v.push_back(b.live_max - b.live_min);
    v.push_back(b.live_max - b.live_last);
    v.push_back(b.reserved_max - reserved);
    v.push_back(b.reserved_max - b.reserved_last);
    index = b.index;
    last = b.last_event.index();
    live = b.live_max;
    reserved = b.reserved_max;
  }
  return PackVarints(v);
}

std::string PackAscending(const std::vector<uint32_t>& ids) {
  std::vector<int64_t> v;
  int64_t prev = 0;
  for (uint32_t id : ids) {
    v.push_back(static_cast<int64_t>(id) - prev);
    prev = id;
  }
  return PackVarints(v);
}

int ClassCode(analysis::LifetimeClass c) { return static_cast<int>(c); }

// The cached segment timeline (issue 36 §3): every segment and expandable mapping the timeline
// analysis found (`memsnap timeline`'s reserved curve sums the ones not left out), 8 varints each
// in order of their first event (docs/report.md).
Json SegmentLifetimesJson(const Snapshot& snap, const DeviceTimeline& dt,
                          const analysis::TimelineLod& lod) {
  std::vector<size_t> order(dt.segments.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto begin_of = [&](size_t i) { return EventOrNone(dt.segments[i].begin_event); };
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return begin_of(a) < begin_of(b); });
  std::vector<int64_t> v;
  v.reserve(order.size() * 8);
  int64_t prev_begin = -1, prev_x = 0;
  for (size_t i : order) {
    const analysis::SegmentLifetime& s = dt.segments[i];
    const int64_t begin = EventOrNone(s.begin_event), end = EventOrNone(s.end_event);
    const auto bx = static_cast<int64_t>(
        begin < 0 ? 0.0 : lod.EventX(snap, dt, TimelinePoint::FromIndex(begin)));
    const auto ex =
        static_cast<int64_t>(end < 0 ? static_cast<double>(lod.x_span)
                                     : lod.EventX(snap, dt, TimelinePoint::FromIndex(end)));
    v.push_back(begin - prev_begin);
    v.push_back(end < 0 ? -1 : end - begin);
    v.push_back(bx - prev_x);
    v.push_back(ex - bx);
    v.push_back(s.size);
    v.push_back(static_cast<int64_t>(s.address));
    v.push_back(s.stream);
    v.push_back((s.mapping ? 1 : 0) | (s.left_out ? 2 : 0) | (s.split ? 4 : 0));
    prev_begin = begin;
    prev_x = bx;
  }
  // Negative when the trace releases more than the reserved curve, anchored at the final state,
  // can have held before it: the lifetimes then add up to more than the curve, and the page says
  // so. (It is never positive: final segments the trace does not explain are ghost lifetimes.)
  return Json{{"n", order.size()},
              {"data", PackVarints(v)},
              {"unreconciled_bytes", dt.unreconciled_reserved_bytes}};
}

}  // namespace

Json TimelineJson(const Snapshot& snap, const DeviceTimeline& dt,
                  const analysis::DeviceReportAnalysis& d, const analysis::CategoryNames& names,
                  StackTableJson& stacks) {
  const analysis::TimelineLod& lod = d.lod;
  Json j;
  j["device"] = dt.device;
  j["num_events"] = dt.num_events;
  j["lifetimes"] = dt.blocks.size();
  // The allocations the trace records (its alloc events, `summary`'s actions.alloc): the lifetimes
  // that start in the trace, not those older than it (ghosts, blocks only freed in it).
  j["mallocs"] = dt.by_class[static_cast<int>(analysis::LifetimeClass::kInWindow)].count +
                 dt.by_class[static_cast<int>(analysis::LifetimeClass::kOpen)].count;
  j["end_live"] = dt.end_requested;
  j["end_reserved"] = dt.end_reserved;
  if (d.workload) j["workload"] = internal::WorkloadToJson(*d.workload);
  Json counted;
  // The timeline's one model of what was live, and what it could not reconcile (docs/figures.md,
  // "When the trace does not explain the state").
  counted["timeline_min_live"] = lod.counted.timeline_min_live;
  counted["timeline_min_reserved"] = lod.counted.timeline_min_reserved;
  counted["timeline_max_over_reserved"] = lod.counted.timeline_max_over_reserved;
  counted["segments_left_out"] = dt.segments_left_out;
  counted["segments_left_out_bytes"] = dt.segments_left_out_bytes;
  counted["beyond_end"] = dt.open_without_block;
  counted["beyond_end_bytes"] = dt.beyond_end_requested_bytes;
  counted["unplaced_frees"] = dt.unplaced_frees;
  counted["unplaced_free_bytes"] = dt.unplaced_free_bytes;
  counted["unreconciled_bytes"] = dt.unreconciled_requested_bytes;
  counted["frees_without_alloc"] = dt.frees_without_alloc;
  counted["pre_window"] = dt.by_class[static_cast<int>(analysis::LifetimeClass::kPreWindow)].count;
  counted["pre_window_bytes"] =
      dt.by_class[static_cast<int>(analysis::LifetimeClass::kPreWindow)].bytes;
  counted["ghosts"] = dt.by_class[static_cast<int>(analysis::LifetimeClass::kGhost)].count;
  counted["ghost_bytes"] = dt.by_class[static_cast<int>(analysis::LifetimeClass::kGhost)].bytes;
  counted["end_live_counted"] = lod.end_live;
  j["counted"] = std::move(counted);
  if (dt.num_events == 0 || lod.tiles.empty()) return j;
  j["has_time"] = lod.has_time;
  if (lod.has_time) j["t0_us"] = lod.t0_us;
  j["x_span"] = lod.x_span;
  j["columns"] = lod.columns;
  j["levels"] = lod.levels;
  j["complete_levels"] = lod.complete_levels;
  Json peak;
  peak["bytes"] = lod.peak_bytes;
  peak["event"] = lod.peak_event.index();
  peak["x"] = lod.EventX(snap, dt, lod.peak_event);
  peak["reserved_bytes"] = lod.peak_reserved;
  peak["reserved_event"] = lod.peak_reserved_event.index();
  peak["reserved_x"] = lod.EventX(snap, dt, lod.peak_reserved_event);
  j["peak"] = std::move(peak);
  Json ooms = Json::array();
  for (TimelinePoint p : d.oom_events) {
    ooms.push_back(Json{{"event", p.index()},
                        {"x", lod.EventX(snap, dt, p)},
                        {"bytes", snap.events[dt.event_begin + *p.event()].size}});
  }
  j["ooms"] = std::move(ooms);
  Json tiles = Json::array();
  for (const analysis::LodTile& t : lod.tiles) {
    tiles.push_back(Json::array(
        {t.level, t.tile, t.buckets.size(), PackTile(t, lod.columns), PackAscending(t.bands)}));
  }
  j["tiles"] = std::move(tiles);
  // The band lifetimes, 14 varints each (docs/report.md).
  std::vector<int64_t> v;
  v.reserve(lod.bands.size() * 14);
  int64_t prev_alloc = -1, prev_x = 0;
  for (size_t k = 0; k < lod.bands.size(); ++k) {
    const analysis::LodBand& band = lod.bands[k];
    const analysis::BlockLifetime& b = dt.blocks[band.lifetime];
    int64_t alloc = EventOrNone(b.alloc_event), free = EventOrNone(b.free_completed_event);
    auto ax = static_cast<int64_t>(band.alloc_x), fx = static_cast<int64_t>(band.free_x);
    v.push_back(alloc - prev_alloc);
    v.push_back(free < 0 ? -1 : free - alloc);
    v.push_back(ax - prev_x);
    v.push_back(fx - ax);
    v.push_back(b.requested_size);
    v.push_back(b.rounded_size - b.requested_size);
    v.push_back(static_cast<int64_t>(b.address));
    v.push_back(b.stream);
    v.push_back(ClassCode(b.cls));
    v.push_back(stacks.Add(b.stack) + 1);
    v.push_back(b.version);
    v.push_back(k < d.band_site.size() ? static_cast<int64_t>(d.band_site[k]) : -1);
    v.push_back(k < d.band_category.size() ? static_cast<int64_t>(d.band_category[k])
                                           : static_cast<int64_t>(analysis::Category::kUnknown));
    v.push_back(k < d.band_rule.size() ? static_cast<int64_t>(d.band_rule[k])
                                       : static_cast<int64_t>(analysis::CategoryRule::kNoEvidence));
    prev_alloc = alloc;
    prev_x = ax;
  }
  j["bands"] = Json{{"n", lod.bands.size()}, {"data", PackVarints(v)}};
  // What the program said about the bands' allocations (user_metadata, compile_context): [band,
  // metadata or null, compile context or null] for the bands that carry one (newer PyTorch).
  if (!d.band_extras.empty()) {
    Json extras = Json::array();
    auto text = [](const std::string& s) { return s.empty() ? Json(nullptr) : Json(s); };
    for (const analysis::DeviceReportAnalysis::BandExtra& e : d.band_extras) {
      extras.push_back(Json::array({e.band, text(e.user_metadata), text(e.compile_context)}));
    }
    j["band_extras"] = std::move(extras);
  }
  const std::string lod_reduced = LodReducedNote(lod);
  j["reduced"] = lod_reduced.empty() ? Json(nullptr) : Json(lod_reduced);
  j["segment_lifetimes"] = SegmentLifetimesJson(snap, dt, lod);
  if (!d.steps.ranges.empty()) {
    Json steps = Json::array();
    // x of each step's first event, then of the event after the last step (x_span at the end).
    auto x_of = [&](int64_t e) {
      return lod.EventX(snap, dt, TimelinePoint::After(static_cast<uint32_t>(e)));
    };
    for (const analysis::StepRange& r : d.steps.ranges) steps.push_back(x_of(r.first_event()));
    steps.push_back(x_of(d.steps.ranges.back().end_event()));
    j["steps"] = Json{{"method", d.steps.method}, {"x", std::move(steps)}};
  }
  // The annotation regions: [begin x, end x, name, 1 when its END was not recorded], at most
  // kMaxAnnotationRegions (the first ones), and how many there are.
  if (!d.annotations.empty() && lod.has_time) {
    constexpr size_t kMaxAnnotationRegions = 5000;
    Json regions = Json::array();
    auto x_of = [&](int64_t t) {
      return std::clamp<int64_t>(t - lod.t0_us, 0, static_cast<int64_t>(lod.x_span));
    };
    for (size_t k = 0; k < d.annotations.size() && k < kMaxAnnotationRegions; ++k) {
      const analysis::AnnotationRegion& r = d.annotations[k];
      regions.push_back(Json::array({x_of(r.begin_us), x_of(r.end_us), r.name, r.open ? 1 : 0}));
    }
    j["annotations"] = Json{{"n", d.annotations.size()}, {"regions", std::move(regions)}};
  }
  // Memory by category over time and at the peak (parameters, gradients, optimizer state,
  // activations...): per category that holds bytes anywhere, its live bytes at each sampled column.
  if (d.categories) {
    const analysis::ReportCategories& c = *d.categories;
    Json series = Json::object();
    std::vector<int> shown;  // the categories in "series", in its order
    for (int k = 0; k < names.size(); ++k) {
      std::vector<int64_t> values;
      bool any = c.peak[k] != 0;
      for (const analysis::CategoryBytes& b : c.columns) {
        values.push_back(b[k]);
        any = any || b[k] != 0;
      }
      for (const analysis::ReportCategories::Tile& t : c.tiles) {
        for (const analysis::CategoryBytes& b : t.columns) any = any || b[k] != 0;
      }
      if (any) {
        series[std::string(names.Name(static_cast<analysis::Category>(k)))] =
            Json{{"peak", c.peak[k]}, {"bytes", PackVarints(values)}};
        shown.push_back(k);
      }
    }
    // The deeper tiles' samples, for the zoom: [level, tile, samples, packed], each sample its
    // column (delta from the previous, the first from the tile's first bucket) and the bytes of
    // each category of "series", in its order (deltas from the previous sample).
    Json tiles = Json::array();
    for (const analysis::ReportCategories::Tile& t : c.tiles) {
      std::vector<int64_t> v;
      v.reserve(t.column.size() * (shown.size() + 1));
      int64_t col = t.tile * lod.columns;
      analysis::CategoryBytes prev{};
      for (size_t i = 0; i < t.column.size(); ++i) {
        v.push_back(t.column[i] - col);
        col = t.column[i];
        for (int k : shown) {
          v.push_back(t.columns[i][k] - prev[k]);
          prev[k] = t.columns[i][k];
        }
      }
      tiles.push_back(Json::array({t.level, t.tile, t.column.size(), PackVarints(v)}));
    }
    // Column k's x is column[k] * column_width: the column indices, delta-coded.
    std::vector<int64_t> dcol;
    for (size_t i = 0; i < c.column.size(); ++i) {
      dcol.push_back(c.column[i] - (i == 0 ? 0 : c.column[i - 1]));
    }
    j["categories"] = Json{{"n", c.column.size()},
                           {"column_width", lod.BucketWidth(0)},
                           {"columns", PackVarints(dcol)},
                           {"series", std::move(series)},
                           {"group", analysis::ReportCategories::kGroup},
                           {"tiles", std::move(tiles)}};
  } else {
    j["categories"] = nullptr;
  }
  return j;
}

namespace {

// The allocator's figures of a state, serialized as `frag --json` serializes them (one function
// for both: FragFiguresToJson), with the state's external fragmentation.
Json FiguresJson(const analysis::FragSample& s) {
  Json j = FragFiguresToJson(s.figures);
  j["external_fragmentation"] = RoundRatio(s.external_fragmentation);
  return j;
}

// Every event's change to the allocator state (analysis::StateStream), packed (docs/report.md,
// `states.stream`).
template <typename PoolIndex>
Json StreamJson(const Snapshot& snap, const DeviceTimeline& dt,
                const analysis::DeviceReportAnalysis& d, std::span<const TraceEvent> events,
                StackTableJson& stacks, PoolIndex& pool_index) {
  const analysis::StateStream& s = *d.states.stream;
  const size_t n = s.figures.size();
  std::vector<int64_t> headers, edits, what, figures;
  absl::flat_hash_map<std::tuple<uint64_t, int64_t, int64_t, std::string, int64_t>, int64_t>
      header_ids;
  auto push_spans = [&](const std::vector<analysis::StateSpan>& spans) {
    edits.push_back(static_cast<int64_t>(spans.size()));
    for (const analysis::StateSpan& p : spans) {
      edits.push_back(p.size);
      edits.push_back(static_cast<int64_t>(p.kind));
      edits.push_back(p.requested);
      int stack = -1;
      if (p.lifetime >= 0) stack = stacks.Add(dt.blocks[p.lifetime].stack);
      edits.push_back(stack + 1);
    }
  };
  std::vector<std::string> actions;
  int64_t prev_addr = 0;
  double prev_x = 0;
  analysis::FragFigures prev{};
  for (size_t e = 0; e < n; ++e) {
    edits.push_back(static_cast<int64_t>(s.first_edit[e + 1] - s.first_edit[e]));
    for (uint32_t k = s.first_edit[e]; k < s.first_edit[e + 1]; ++k) {
      const analysis::StateEdit& edit = s.edits[k];
      const analysis::StateSegment& g = edit.segment;
      const std::string pool = edit.op == analysis::StateEdit::Op::kRemove ? "" : PoolName(g.pool);
      const int64_t flags = (g.is_small ? 1 : 0) | (g.is_expandable ? 2 : 0);
      auto key = std::tuple(g.address, edit.op == analysis::StateEdit::Op::kRemove ? 0 : g.size,
                            g.stream, pool, flags);
      auto [it, inserted] = header_ids.try_emplace(key, static_cast<int64_t>(header_ids.size()));
      if (inserted) {
        headers.push_back(static_cast<int64_t>(g.address));
        headers.push_back(std::get<1>(key));
        headers.push_back(g.stream);
        headers.push_back(pool.empty() ? 0 : pool_index(pool));
        headers.push_back(flags);
      }
      edits.push_back(it->second * 3 + static_cast<int64_t>(edit.op));
      if (edit.op == analysis::StateEdit::Op::kSpans) {
        edits.push_back(edit.keep);
        edits.push_back(edit.erase);
      }
      if (edit.op != analysis::StateEdit::Op::kRemove) push_spans(g.spans);
    }
    // What the event did: its action, address (delta), size, stack, x (delta).
    const TraceEvent& ev = events[e];
    const std::string name(ActionName(ev.action));
    auto a = std::find(actions.begin(), actions.end(), name);
    if (a == actions.end()) a = actions.insert(a, name);
    what.push_back(a - actions.begin());
    what.push_back(static_cast<int64_t>(ev.addr) - prev_addr);
    prev_addr = static_cast<int64_t>(ev.addr);
    what.push_back(ev.size);
    what.push_back((ev.stack.valid() ? stacks.Add(ev.stack) : -1) + 1);
    // EventX's figure, kept incrementally: the latest time so far (checked every kXCheckpoint).
    double x = static_cast<double>(e);
    if (e % analysis::TimelineLod::kXCheckpoint == 0) {
      x = d.lod.EventX(snap, dt, TimelinePoint::FromIndex(static_cast<int64_t>(e)));
    } else if (d.lod.has_time) {
      x = std::max(prev_x, static_cast<double>(ev.time_us - d.lod.t0_us));
    }
    what.push_back(static_cast<int64_t>(x - prev_x));
    prev_x = x;
    // The figures the state view shows, as deltas from the previous event's.
    const analysis::FragFigures& f = s.figures[e];
    for (auto field :
         {&analysis::FragFigures::segments, &analysis::FragFigures::blocks,
          &analysis::FragFigures::reserved_bytes, &analysis::FragFigures::allocated_bytes,
          &analysis::FragFigures::pending_free_bytes, &analysis::FragFigures::largest_free_bytes,
          &analysis::FragFigures::stranded_bytes, &analysis::FragFigures::releasable_bytes,
          &analysis::FragFigures::free_segments}) {
      figures.push_back(f.*field - prev.*field);
    }
    prev = f;
  }
  return Json{{"n", n},
              {"figure_fields",
               {"segments", "blocks", "reserved_bytes", "allocated_bytes", "pending_free_bytes",
                "largest_free_bytes", "stranded_bytes", "releasable_bytes", "free_segments"}},
              {"actions", actions},
              {"headers", PackVarints(headers)},
              {"edits", PackVarints(edits)},
              {"what", PackVarints(what)},
              {"figures", PackVarints(figures)}};
}

}  // namespace

Json StatesJson(const Snapshot& snap, const DeviceTimeline& dt,
                const analysis::DeviceReportAnalysis& d, StackTableJson& stacks) {
  const analysis::AllocatorStates& st = d.states;
  Json j;
  if (st.states.empty()) return Json(nullptr);
  std::vector<std::string> pools;
  auto pool_index = [&](const std::string& name) {
    auto it = std::find(pools.begin(), pools.end(), name);
    if (it != pools.end()) return static_cast<int64_t>(it - pools.begin());
    pools.push_back(name);
    return static_cast<int64_t>(pools.size() - 1);
  };
  // Distinct segments: 6 varints of header, then 4 per span (docs/report.md).
  std::vector<int64_t> v;
  j["pools"] = nullptr;  // filled at the end: the stream's segments may add pools
  for (const analysis::StateSegment& s : st.segments) {
    v.push_back(static_cast<int64_t>(s.address));
    v.push_back(s.size);
    v.push_back(s.stream);
    v.push_back(pool_index(PoolName(s.pool)));
    v.push_back((s.is_small ? 1 : 0) | (s.is_expandable ? 2 : 0));
    v.push_back(static_cast<int64_t>(s.spans.size()));
    for (const analysis::StateSpan& p : s.spans) {
      v.push_back(p.size);
      v.push_back(static_cast<int64_t>(p.kind));
      v.push_back(p.requested);
      int stack = -1;
      if (p.lifetime >= 0) stack = stacks.Add(dt.blocks[p.lifetime].stack);
      v.push_back(stack + 1);
    }
  }
  j["segments"] = Json{{"n", st.segments.size()}, {"data", PackVarints(v)}};
  Json moments = Json::array();
  const DeviceTrace* trace = snap.TraceOf(dt.device);
  const auto events = trace != nullptr ? snap.EventsOf(*trace) : std::span<const TraceEvent>();
  for (const analysis::AllocatorState& s : st.states) {
    Json m;
    m["event"] = s.event.index();
    // What the event did, for the list of events around the cursor.
    if (const std::optional<uint32_t> i = s.event.event(); i && *i < events.size()) {
      const TraceEvent& e = events[*i];
      const int stack = e.stack.valid() ? stacks.Add(e.stack) : -1;
      m["what"] = Json{{"action", ActionName(e.action)},
                       {"addr", absl::StrCat("0x", absl::Hex(e.addr))},
                       {"size", e.size},
                       {"stack", stack}};
    }
    m["x"] = d.lod.EventX(snap, dt, s.event);
    if (s.time_us != kNoTime) m["time_us"] = s.time_us;
    if (!s.labels.empty()) m["labels"] = s.labels;
    m["figures"] = FiguresJson(s.sample);
    std::vector<int64_t> ids(s.segments.begin(), s.segments.end());
    m["segments"] = PackVarints(ids);
    moments.push_back(std::move(m));
  }
  j["moments"] = std::move(moments);
  if (st.stream) j["stream"] = StreamJson(snap, dt, d, events, stacks, pool_index);
  j["pools"] = pools;
  j["peak_reserved_event"] = st.peak_reserved_event.index();
  j["peak_allocated_event"] = st.peak_allocated_event.index();
  j["samples"] = st.samples;
  const std::string states_reduced = StatesReducedNote(st);
  j["reduced"] = states_reduced.empty() ? Json(nullptr) : Json(states_reduced);
  j["warnings"] = RewindWarnings(st.rewind);
  return j;
}

}  // namespace internal

}  // namespace memsnap::report
