// The report's sections that do not come from the timeline: the segment map of the final state,
// and the replay curves, which need the replay analysis; without it they fail with a clear error.
#include <algorithm>
#include <array>

#include "absl/strings/str_cat.h"
#include "memsnap/report/summary_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "report/html_report_internal.h"

#if __has_include("memsnap/analysis/replay.h")
#include <cmath>

#include "memsnap/analysis/replay.h"
#include "memsnap/sim/config.h"
#define MEMSNAP_REPORT_HAS_REPLAY 1
#endif
#if __has_include("memsnap/analysis/frag.h")
#include "memsnap/analysis/frag.h"
#define MEMSNAP_REPORT_HAS_FRAG 1
#endif

namespace memsnap::report::internal {

using Json = nlohmann::ordered_json;

namespace {

constexpr size_t kMaxSegments = 300;      // largest segments drawn; the rest are counted
constexpr size_t kMaxRunsPerSegment = 800;  // above this, runs are merged per pixel bucket

int StateCode(const Block& b) {
  switch (b.state) {
    case BlockState::kActiveAllocated:
      return 0;
    case BlockState::kActivePendingFree:
      return 1;
    case BlockState::kInactive:
      return 2;
  }
  return 2;
}

/// (state, bytes) runs of one segment, adjacent equal states merged; with too many runs, each of
/// kMaxRunsPerSegment equal buckets takes the state holding most of its bytes.
std::vector<std::pair<int, int64_t>> SegmentRuns(const Snapshot& snap, const Segment& seg) {
  std::vector<std::pair<int, int64_t>> runs;
  int64_t covered = 0;
  for (const Block& b : snap.BlocksOf(seg)) {
    int st = StateCode(b);
    if (!runs.empty() && runs.back().first == st) {
      runs.back().second += b.size;
    } else {
      runs.emplace_back(st, b.size);
    }
    covered += b.size;
  }
  if (covered < seg.total_size) runs.emplace_back(2, seg.total_size - covered);
  if (runs.size() <= kMaxRunsPerSegment || seg.total_size <= 0) return runs;
  const int64_t n = kMaxRunsPerSegment;
  std::vector<std::array<int64_t, 3>> buckets(n, {0, 0, 0});
  int64_t off = 0;
  for (const auto& [st, size] : runs) {
    int64_t begin = off, end = off + size;
    while (begin < end) {
      int64_t bucket = std::min<int64_t>(n - 1, static_cast<int64_t>(
                                                    static_cast<__int128>(begin) * n / seg.total_size));
      int64_t bucket_end = static_cast<int64_t>(static_cast<__int128>(bucket + 1) * seg.total_size / n);
      int64_t take = std::max<int64_t>(1, std::min(end, bucket_end) - begin);
      buckets[bucket][st] += take;
      begin += take;
    }
    off = end;
  }
  std::vector<std::pair<int, int64_t>> merged;
  for (int64_t i = 0; i < n; ++i) {
    int64_t lo = static_cast<int64_t>(static_cast<__int128>(i) * seg.total_size / n);
    int64_t hi = static_cast<int64_t>(static_cast<__int128>(i + 1) * seg.total_size / n);
    const auto& b = buckets[i];
    int st = static_cast<int>(std::max_element(b.begin(), b.end()) - b.begin());
    if (!merged.empty() && merged.back().first == st) {
      merged.back().second += hi - lo;
    } else {
      merged.emplace_back(st, hi - lo);
    }
  }
  return merged;
}

/// Figures of the fragmentation analysis (docs/fragmentation.md) as display cards, or null when
/// memsnap is built without it. Its fragmentation (per pool and stream, where free blocks can
/// actually serve a request) replaces the page's whole-device estimate.
absl::StatusOr<Json> FragCards(const Snapshot& snap, Json& map) {
#ifdef MEMSNAP_REPORT_HAS_FRAG
  ASSIGN_OR_RETURN(analysis::FragReport frag, analysis::AnalyzeFragmentation(snap));
  const analysis::FragFigures& t = frag.totals;
  Json cards = Json::array();
  auto card = [&](std::string_view k, std::string v) {
    cards.push_back(Json::array({std::string(k), std::move(v)}));
  };
  map["fragmentation"] = frag.external_fragmentation;
  card("pending free", FormatBytes(t.pending_free_bytes));
  card("rounding waste", FormatBytes(t.internal_waste_bytes));
  card("releasable by empty_cache", FormatBytes(t.releasable_bytes));
  card("stranded free", FormatBytes(t.stranded_bytes));
  for (const analysis::DevicePeaks& p : frag.peaks) {
    card(absl::StrCat("device ", p.device, " peak overhead"), FormatPercent(p.peak_overhead));
  }
  return cards;
#else
  return Json(nullptr);
#endif
}

}  // namespace

absl::StatusOr<Json> SegmentMapJson(const Snapshot& snap, const analysis::Timeline& timeline) {
  int64_t reserved = 0, allocated = 0, free_bytes = 0, largest_free = 0;
  for (const Segment& seg : snap.segments) {
    reserved += seg.total_size;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (b.is_active()) {
        allocated += b.size;
      } else {
        free_bytes += b.size;
        largest_free = std::max(largest_free, b.size);
      }
    }
  }
  std::vector<uint32_t> order(snap.segments.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    const Segment &sa = snap.segments[a], &sb = snap.segments[b];
    if (sa.total_size != sb.total_size) return sa.total_size > sb.total_size;
    if (sa.device != sb.device) return sa.device < sb.device;
    return sa.address < sb.address;
  });
  size_t shown = std::min(order.size(), kMaxSegments);
  Json j;
  j["reserved_bytes"] = reserved;
  j["allocated_bytes"] = allocated;
  j["free_bytes"] = free_bytes;
  j["largest_free_bytes"] = largest_free;
  j["omitted"] = order.size() - shown;
  Json segs = Json::array();
  for (size_t k = 0; k < shown; ++k) {
    const Segment& seg = snap.segments[order[k]];
    Json sj;
    sj["device"] = seg.device;
    sj["address"] = FormatAddress(seg.address);
    sj["size"] = seg.total_size;
    sj["stream"] = seg.stream;
    sj["pool"] = absl::StrCat(PoolName(seg.pool), seg.is_small ? " small" : " large");
    if (seg.is_expandable) sj["expandable"] = true;
    Json runs = Json::array();
    for (const auto& [st, size] : SegmentRuns(snap, seg)) {
      runs.push_back(st);
      runs.push_back(size);
    }
    sj["runs"] = std::move(runs);
    segs.push_back(std::move(sj));
  }
  j["segments"] = std::move(segs);
  ASSIGN_OR_RETURN(Json cards, FragCards(snap, j));
  j["frag"] = std::move(cards);
  return j;
}

#ifdef MEMSNAP_REPORT_HAS_REPLAY
namespace {

/// The simulated reserved curve in the columns of the recorded one: each column keeps its highest
/// value, an empty column the last earlier one.
Json ReplayColumns(const Snapshot& snap, const analysis::DeviceTimeline& dt, const CurveColumns& cols,
                   const std::vector<analysis::CurvePoint>& curve) {
  const size_t n = cols.size();
  std::vector<int64_t> reserved(n, -1);
  const double span = cols.x_hi - cols.x_lo;
  size_t prev = 0;
  int64_t last = 0;
  for (const analysis::CurvePoint& p : curve) {
    size_t c = 0;
    if (p.event != analysis::kPreexistingEvent && p.event < dt.num_events) {
      if (!cols.has_time) {
        c = static_cast<size_t>(uint64_t{p.event} * n / dt.num_events);
      } else if (span > 0) {
        double x = EventX(snap, dt, cols, p.event);
        c = static_cast<size_t>(std::clamp<int64_t>(
            static_cast<int64_t>(std::floor((x - cols.x_lo) / span * static_cast<double>(n))), 0,
            static_cast<int64_t>(n) - 1));
      }
    }
    c = std::min(std::max(c, prev), n - 1);
    for (size_t k = prev + 1; k < c; ++k) reserved[k] = last;  // nothing changed in between
    if (c != prev && reserved[c] < 0) reserved[c] = last;
    reserved[c] = std::max(reserved[c], p.reserved);
    last = p.reserved;
    prev = c;
  }
  for (size_t c = 0; c < n; ++c) {
    if (reserved[c] < 0) reserved[c] = c == 0 ? 0 : reserved[c - 1];
  }
  for (size_t c = prev + 1; c < n; ++c) reserved[c] = last;
  Json j = CurveColumnsJson(cols);
  Json out;
  out["has_time"] = j["has_time"];
  out["x_lo"] = j["x_lo"];
  out["x_hi"] = j["x_hi"];
  out["reserved_max"] = reserved;
  return out;
}

}  // namespace
#endif

absl::StatusOr<Json> ReplayJson(const Snapshot& snap, const analysis::Timeline& timeline,
                                const HtmlReportOptions& options) {
  if (options.replay_confs.empty()) return Json(nullptr);
#ifdef MEMSNAP_REPORT_HAS_REPLAY
  // The recorded settings first (what the other runs are compared with), then each --replay.
  std::vector<analysis::ReplayConfig> configs;
  configs.push_back({"recorded", sim::ConfigFromSettings(snap.settings)});
  for (const std::string& conf : options.replay_confs) {
    absl::StatusOr<sim::AllocatorConfig> parsed = sim::ParseAllocatorConf(conf);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--replay ", conf, ": ", std::string(parsed.status().message())));
    }
    configs.push_back({conf, *parsed});
  }
  analysis::ReplayOptions ro;
  ro.curve = true;
  ASSIGN_OR_RETURN(analysis::ReplayReport rep, analysis::Replay(snap, configs, ro));
  const analysis::DeviceTimeline* dt = timeline.Find(rep.device);
  Json j;
  j["device"] = rep.device;
  j["notes"] = rep.notes;
  Json runs = Json::array();
  CurveColumns cols;
  if (dt != nullptr) cols = DownsampleCurves(snap, *dt, options.columns);
  for (const analysis::ConfigResult& r : rep.results) {
    Json run;
    run["conf"] = r.config.label;
    run["peak_reserved"] = r.peak_reserved;
    run["peak_allocated"] = r.peak_allocated;
    run["cuda_mallocs"] = r.cuda_mallocs;
    run["ooms"] = r.ooms.size();
    std::string note = absl::StrCat(r.cuda_mallocs, " cudaMalloc, fragmentation at peak ",
                                    FormatPercent(r.FragmentationAtPeak()));
    if (!r.ooms.empty()) absl::StrAppend(&note, ", ", r.ooms.size(), " OOM");
    run["note"] = note;
    if (cols.size() > 0) run["curve"] = ReplayColumns(snap, *dt, cols, r.curve);
    runs.push_back(std::move(run));
  }
  j["runs"] = std::move(runs);
  return j;
#else
  return absl::UnimplementedError(
      "--replay: this build of memsnap has no replay simulator (src/analysis/replay.cpp)");
#endif
}

}  // namespace memsnap::report::internal
