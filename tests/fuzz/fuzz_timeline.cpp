// libFuzzer target: timeline reconstruction on whatever the reader accepts, differentially. Keeping
// fewer lifetimes (KeepLifetimes::kLiveAt, kNone) or no curve must give what keeping everything
// gives: the same curve, peak and counts, and exactly the lifetimes live at the moment asked for.
// Any difference aborts.
#include <cstdlib>

#include "fuzz_common.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"

namespace memsnap::fuzz {
namespace {

using analysis::DeviceTimeline;
using analysis::KeepLifetimes;
using analysis::Moment;

void Require(bool ok) {
  if (!ok) std::abort();
}

analysis::Timeline Build(const Snapshot& snap, KeepLifetimes keep, const Moment& at, bool curve) {
  analysis::TimelineOptions o;
  o.keep = keep;
  o.moment = at;
  o.curve = curve;
  auto tl = analysis::ReconstructTimeline(snap, o);
  Require(tl.ok());
  return *std::move(tl);
}

void SameFigures(const DeviceTimeline& a, const DeviceTimeline& b) {
  Require(a.peak_requested == b.peak_requested && a.peak_event == b.peak_event);
  Require(a.start_requested == b.start_requested && a.end_requested == b.end_requested);
  Require(a.start_rounded == b.start_rounded && a.has_time == b.has_time);
  Require(a.frees_without_alloc == b.frees_without_alloc &&
          a.allocs_without_free == b.allocs_without_free &&
          a.open_without_block == b.open_without_block);
  for (int c = 0; c < 4; ++c) {
    Require(a.by_class[c].count == b.by_class[c].count &&
            a.by_class[c].bytes == b.by_class[c].bytes);
  }
}

void CheckSnapshot(const Snapshot& snap) {
  const analysis::Timeline all = Build(snap, KeepLifetimes::kAll, Moment{}, true);
  const analysis::Timeline none = Build(snap, KeepLifetimes::kNone, Moment{}, true);
  for (size_t d = 0; d < all.devices.size(); ++d) {
    const DeviceTimeline& a = all.devices[d];
    // The curve ends at the final state's live bytes, plus what the trace leaves live beyond it
    // (docs/figures.md, "When the trace does not explain the state"); never below zero.
    Require(a.FindLive(analysis::TimelinePoint::End(a.num_events)) ==
            a.end_requested + a.beyond_end_requested_bytes);
    Require(a.start_requested >= 0 && a.unreconciled_requested_bytes >= 0);
    SameFigures(a, none.devices[d]);
    Require(none.devices[d].live_net == a.live_net);
  }
  const int64_t n = all.devices.empty() ? 0 : all.devices[0].num_events;
  for (Moment at : {Moment{Moment::Kind::kPeak, 0}, Moment{Moment::Kind::kEnd, 0},
                    Moment{Moment::Kind::kEvent, n / 2}, Moment{Moment::Kind::kTime, 0}}) {
    const analysis::Timeline live = Build(snap, KeepLifetimes::kLiveAt, at, false);
    for (size_t d = 0; d < all.devices.size(); ++d) {
      const DeviceTimeline& a = all.devices[d];
      const DeviceTimeline& l = live.devices[d];
      SameFigures(a, l);
      const analysis::TimelinePoint e = analysis::ResolveMoment(snap, a, at);
      Require(l.kept_event == e && l.kept_live_bytes == a.FindLive(e));
      std::vector<uint32_t> expected = analysis::LiveBlocksAt(a, e);
      Require(expected.size() == l.blocks.size());
      for (size_t k = 0; k < expected.size(); ++k) Require(a.blocks[expected[k]] == l.blocks[k]);
    }
  }
}

}  // namespace
}  // namespace memsnap::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = memsnap::io::FromMemory(std::string_view(reinterpret_cast<const char*>(data), size),
                                       std::string(memsnap::fuzz::kName));
  auto snaps = memsnap::parse::ParseSnapshots(*input);
  if (!snaps.ok()) return 0;
  for (memsnap::Snapshot& snap : *snaps) {
    memsnap::Normalize(snap);
    memsnap::fuzz::CheckSnapshot(snap);
  }
  return 0;
}
