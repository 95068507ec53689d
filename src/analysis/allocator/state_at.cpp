// The allocator state at a cut of each device's trace, as a snapshot's `segments` (state_at.h):
// one rewind per device from the final state down to its cut, as `frag --at` makes.
#include "memsnap/analysis/allocator/state_at.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "analysis/allocator/frag_layout.h"
#include "memsnap/analysis/allocator/alloc_states.h"

namespace memsnap::analysis {

namespace {

// Appends the file's segments `ids` of one device and their blocks, unchanged.
void CopyFinal(const Snapshot& snap, std::span<const uint32_t> ids, StateAtCut& out) {
  for (uint32_t id : ids) {
    Segment s = snap.segments[id];
    std::span<const Block> blocks = snap.BlocksOf(s);
    s.first_block = static_cast<uint32_t>(out.blocks.size());
    const SegmentId seg(static_cast<uint32_t>(out.segments.size()));
    for (Block b : blocks) {
      b.segment = seg;
      out.blocks.push_back(b);
    }
    out.segments.push_back(s);
  }
}

}  // namespace

StateAtCut RebuildStateAt(const Snapshot& snap, const Timeline& timeline,
                          std::span<const StateCut> cuts) {
  StateAtCut out;
  const SegmentsByDevice by_device(snap);
  for (int32_t device : snap.Devices()) {
    const std::span<const uint32_t> own = by_device.Of(device);
    const DeviceTrace* trace = snap.TraceOf(device);
    const DeviceTimeline* dt = timeline.Find(device);
    const int64_t n = trace != nullptr ? trace->size() : 0;
    auto cut = std::find_if(cuts.begin(), cuts.end(),
                            [&](const StateCut& c) { return c.device == device; });
    if (cut == cuts.end() || cut->events >= n || dt == nullptr || dt->kept != KeepLifetimes::kAll) {
      CopyFinal(snap, own, out);
      continue;
    }
    const int64_t keep = std::max<int64_t>(cut->events, 0);
    const std::span<const TraceEvent> events = snap.EventsOf(*trace);

    frag_internal::DeviceRewind rw(snap, device, own);
    for (uint32_t i = 0; i < dt->blocks.size(); ++i) {
      if (dt->blocks[i].live_at_end()) rw.Tag(dt->blocks[i].address, i);
    }
    FreedLifetimes freed(*dt);
    for (int64_t i = n - 1; i >= keep; --i) {
      if (rw.Undo(events[i])) rw.Tag(events[i].addr, freed.At(static_cast<uint32_t>(i)));
    }
    out.rebuilt.push_back(device);
    out.estimated_sizes += rw.PreWindowBlocks().first;
    if (rw.problems().any()) out.caveats.push_back({device, keep, rw.problems()});

    // What the layout does not say: a segment's stack and pool (the file's segment at the same
    // address and size, else the stack of the latest segment_alloc or map there before the cut),
    // and the stack of a live block the rewind could not name (the file's block there).
    absl::flat_hash_map<uint64_t, const Segment*> final_segments;
    absl::flat_hash_map<uint64_t, const Block*> final_blocks;
    for (uint32_t id : own) {
      const Segment& s = snap.segments[id];
      final_segments[s.address] = &s;
      for (const Block& b : snap.BlocksOf(s)) {
        if (b.is_active()) final_blocks[b.address] = &b;
      }
    }
    absl::flat_hash_map<uint64_t, StackId> created;
    for (int64_t i = 0; i < keep; ++i) {
      const TraceEvent& e = events[i];
      if (e.action == Action::kSegmentAlloc || e.action == Action::kSegmentMap) {
        created[e.addr] = e.stack;
      }
    }

    for (const frag_internal::LSegment& ls : rw.Layout()) {
      Segment s;
      s.device = device;
      s.address = ls.address;
      s.total_size = ls.size;
      s.stream = ls.stream;
      s.is_small = ls.is_small;
      s.is_expandable = ls.is_expandable;
      s.pool = ls.pool;
      auto f = final_segments.find(ls.address);
      if (f != final_segments.end() && f->second->total_size == ls.size) {
        s.stack = f->second->stack;
      } else if (auto c = created.find(ls.address); c != created.end()) {
        s.stack = c->second;
      }
      s.first_block = static_cast<uint32_t>(out.blocks.size());
      const SegmentId seg(static_cast<uint32_t>(out.segments.size()));
      for (const frag_internal::LBlock& lb : ls.blocks) {
        Block b;
        b.address = lb.address;
        b.size = lb.size;
        b.state = lb.state;
        b.segment = seg;
        if (b.is_active()) {
          b.requested_size = lb.requested;
          if (lb.tag >= 0 && static_cast<size_t>(lb.tag) < dt->blocks.size()) {
            b.stack = dt->blocks[static_cast<size_t>(lb.tag)].stack;
          } else if (auto fb = final_blocks.find(lb.address); fb != final_blocks.end()) {
            b.stack = fb->second->stack;
          }
          s.active_size += b.size;
          s.requested_size += b.requested_size;
          if (b.state == BlockState::kActiveAllocated) s.allocated_size += b.size;
        } else {
          b.requested_size = 0;
        }
        out.blocks.push_back(b);
        ++s.num_blocks;
      }
      out.segments.push_back(s);
    }
  }
  return out;
}

}  // namespace memsnap::analysis
