#include "analysis/allocator/frag_layout.h"

#include <algorithm>
#include <atomic>

#include "memsnap/analysis/allocator/frag.h"
#include "memsnap/sim/sizes.h"

namespace memsnap::analysis::frag_internal {

namespace {
using sim::kLargeBuffer;  // the large expandable page
using sim::kSmallBuffer;  // the small segment
using sim::kSmallSize;
constexpr int64_t kNonSplitRounding = kLargeBuffer;  // max_non_split_rounding default
}  // namespace

namespace {
LSegment LayoutOf(const Snapshot& snap, const Segment& seg) {
  LSegment ls{seg.device,   seg.address,       seg.total_size, seg.stream,
              seg.is_small, seg.is_expandable, seg.pool,       {}};
  ls.blocks.reserve(seg.num_blocks);
  for (const Block& b : snap.BlocksOf(seg)) {
    ls.blocks.push_back(LBlock{b.address, b.size, b.is_active() ? b.requested_size : 0, b.state});
  }
  return ls;
}
}  // namespace

std::vector<LSegment> LayoutFromSnapshot(const Snapshot& snap) {
  std::vector<LSegment> out;
  out.reserve(snap.segments.size());
  for (const Segment& seg : snap.segments) out.push_back(LayoutOf(snap, seg));
  return out;
}

std::vector<LSegment> LayoutFromSnapshot(const Snapshot& snap, std::span<const uint32_t> ids) {
  std::vector<LSegment> out;
  out.reserve(ids.size());
  for (uint32_t s : ids) out.push_back(LayoutOf(snap, snap.segments[s]));
  return out;
}

std::vector<uint32_t> SegmentsOf(const Snapshot& snap, int32_t device) {
  std::vector<uint32_t> out;
  for (uint32_t s = 0; s < snap.segments.size(); ++s) {
    if (snap.segments[s].device == device) out.push_back(s);
  }
  return out;
}

DeviceRewind::DeviceRewind(const Snapshot& snap, int32_t device)
    : DeviceRewind(snap, device, SegmentsOf(snap, device)) {}

DeviceRewind::DeviceRewind(const Snapshot& snap, int32_t device, std::span<const uint32_t> ids)
    : snap_(snap), device_(device) {
  for (uint32_t s : ids) {
    const Segment& seg = snap.segments[s];
    segments_[seg.address] =
        Seg{seg.total_size, seg.stream, seg.is_small, seg.is_expandable, seg.pool};
    reserved_ += seg.total_size;
    for (const Block& b : snap.BlocksOf(seg)) {
      if (!b.is_active()) continue;
      bool pending = b.state == BlockState::kActivePendingFree;
      live_[b.address] = Live{b.size, b.requested_size, pending};
      if (!pending) allocated_ += b.size;
    }
  }
}

namespace {
std::atomic<int64_t> undone_events{0};
}  // namespace

DeviceRewind::~DeviceRewind() { undone_events.fetch_add(undone_, std::memory_order_relaxed); }

int64_t UndoneEvents() { return undone_events.load(std::memory_order_relaxed); }

absl::btree_map<uint64_t, DeviceRewind::Seg>::iterator DeviceRewind::SegmentAt(uint64_t address) {
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return segments_.end();
  --it;
  if (address >= it->first + static_cast<uint64_t>(it->second.size)) return segments_.end();
  return it;
}

// The block size the allocator gave a request (docs/allocator-model.md §4, §8.2), clamped to the
// free space the block can occupy: up to the next live block or the segment end. A large block
// whose remainder would have been too small to split keeps it.
int64_t DeviceRewind::EstimateSize(uint64_t address, int64_t requested, const Seg& seg,
                                   uint64_t seg_address) const {
  uint64_t end = seg_address + static_cast<uint64_t>(seg.size);
  auto next = live_.upper_bound(address);
  if (next != live_.end() && next->first < end) end = next->first;
  int64_t room = static_cast<int64_t>(end - address);
  int64_t s = std::min(
      sim::RoundSize(std::max<int64_t>(requested, 1), snap_.settings.roundup_power2_divisions),
      room);
  if (!seg.is_small && !seg.is_expandable) {
    int64_t mss = snap_.settings.max_split_size;
    bool oversize = mss >= 0 && s >= mss;
    if ((!oversize && room - s <= kSmallSize) || (oversize && room - s < kNonSplitRounding))
      s = room;
  }
  return s;
}

void DeviceRewind::DropBlocksIn(uint64_t begin, uint64_t end) {
  auto it = live_.lower_bound(begin);
  bool dropped = false;
  while (it != live_.end() && it->first < end) {
    if (!it->second.pending) allocated_ -= it->second.size;
    it = live_.erase(it);
    dropped = true;
  }
  if (dropped) ++problems_.segment_with_blocks;
}

void DeviceRewind::Tag(uint64_t address, int64_t tag) {
  auto it = live_.find(address);
  if (it != live_.end()) it->second.tag = tag;
}

bool DeviceRewind::Undo(const TraceEvent& e) {
  ++undone_;
  switch (e.action) {
    case Action::kAlloc: {
      auto it = live_.find(e.addr);
      if (it == live_.end()) {
        ++problems_.alloc_without_block;
        return false;
      }
      if (!it->second.pending) allocated_ -= it->second.size;
      live_.erase(it);
      return false;
    }
    case Action::kFreeRequested:
    case Action::kFreeCompleted: {
      auto it = live_.find(e.addr);
      if (it != live_.end()) {
        if (e.action == Action::kFreeCompleted) {
          ++problems_.free_of_live_block;
        } else if (it->second.pending) {
          it->second.pending = false;
          allocated_ += it->second.size;
        }
        return false;
      }
      auto seg = SegmentAt(e.addr);
      if (seg == segments_.end()) {
        ++problems_.block_outside_segment;
        return false;
      }
      int64_t size = EstimateSize(e.addr, e.size, seg->second, seg->first);
      ++problems_.estimated_sizes;
      bool pending = e.action == Action::kFreeCompleted;
      live_[e.addr] = Live{size, e.size, pending, true, -1};
      if (!pending) allocated_ += size;
      return true;
    }
    case Action::kSegmentAlloc: {
      auto it = segments_.find(e.addr);
      if (it == segments_.end()) {
        ++problems_.block_outside_segment;
        return false;
      }
      DropBlocksIn(it->first, it->first + static_cast<uint64_t>(it->second.size));
      reserved_ -= it->second.size;
      segments_.erase(it);
      return false;
    }
    case Action::kSegmentFree:
    case Action::kSegmentUnmap: {
      uint64_t begin = e.addr, end = e.addr + static_cast<uint64_t>(e.size);
      auto next = segments_.lower_bound(begin);
      bool overlap =
          (next != segments_.end() && next->first < end) || SegmentAt(begin) != segments_.end();
      if (overlap || e.size <= 0) {
        ++problems_.segment_overlap;
        return false;
      }
      reserved_ += e.size;
      const int64_t stream = snap_.StreamOf(e);
      if (e.action == Action::kSegmentFree) {
        segments_[begin] = Seg{e.size, stream, e.size == kSmallBuffer, false, PoolId{}};
        return false;
      }
      // An unmapped range comes back as mapped expandable memory, merged with the runs it touches.
      Seg seg{e.size, stream, e.size % kLargeBuffer != 0, true, PoolId{}};
      auto left = SegmentAt(begin - 1);
      if (begin > 0 && left != segments_.end() && left->second.is_expandable &&
          left->second.stream == stream) {
        seg.is_small = left->second.is_small;
        seg.pool = left->second.pool;
        seg.size += left->second.size;
        begin = left->first;
        segments_.erase(left);
      }
      auto right = segments_.find(end);
      if (right != segments_.end() && right->second.is_expandable &&
          right->second.stream == stream) {
        seg.is_small = right->second.is_small;
        seg.pool = right->second.pool;
        seg.size += right->second.size;
        segments_.erase(right);
      }
      segments_[begin] = seg;
      return false;
    }
    case Action::kSegmentMap: {
      auto it = SegmentAt(e.addr);
      if (it == segments_.end()) {
        ++problems_.block_outside_segment;
        return false;
      }
      uint64_t seg_begin = it->first;
      uint64_t seg_end = seg_begin + static_cast<uint64_t>(it->second.size);
      uint64_t begin = e.addr;
      uint64_t end =
          std::min(seg_end, e.addr + static_cast<uint64_t>(std::max<int64_t>(e.size, 0)));
      DropBlocksIn(begin, end);
      Seg seg = it->second;
      segments_.erase(it);
      reserved_ -= static_cast<int64_t>(end - begin);
      if (begin > seg_begin) {
        Seg l = seg;
        l.size = static_cast<int64_t>(begin - seg_begin);
        segments_[seg_begin] = l;
      }
      if (seg_end > end) {
        Seg r = seg;
        r.size = static_cast<int64_t>(seg_end - end);
        segments_[end] = r;
      }
      return false;
    }
    default:
      return false;
  }
}

std::pair<int64_t, int64_t> DeviceRewind::PreWindowBlocks() const {
  std::pair<int64_t, int64_t> out{0, 0};
  for (const auto& [address, live] : live_) {
    if (!live.from_trace) continue;
    ++out.first;
    out.second += live.size;
  }
  return out;
}

LSegment DeviceRewind::LayoutOf(uint64_t address, const Seg& seg) const {
  LSegment ls{device_,      address,           seg.size, seg.stream,
              seg.is_small, seg.is_expandable, seg.pool, {}};
  uint64_t end = address + static_cast<uint64_t>(seg.size);
  uint64_t cursor = address;
  for (auto it = live_.lower_bound(address); it != live_.end() && it->first < end; ++it) {
    if (it->first > cursor) {
      ls.blocks.push_back(
          LBlock{cursor, static_cast<int64_t>(it->first - cursor), 0, BlockState::kInactive});
    }
    uint64_t block_end = std::min(end, it->first + static_cast<uint64_t>(it->second.size));
    auto next = std::next(it);
    if (next != live_.end() && next->first < block_end) block_end = next->first;
    int64_t size = static_cast<int64_t>(block_end - it->first);
    ls.blocks.push_back(
        LBlock{it->first, size, std::min(it->second.requested, size),
               it->second.pending ? BlockState::kActivePendingFree : BlockState::kActiveAllocated,
               it->second.tag});
    cursor = block_end;
  }
  if (cursor < end) {
    ls.blocks.push_back(
        LBlock{cursor, static_cast<int64_t>(end - cursor), 0, BlockState::kInactive});
  }
  return ls;
}

std::vector<LSegment> DeviceRewind::Layout() const {
  std::vector<LSegment> out;
  out.reserve(segments_.size());
  for (const auto& [address, seg] : segments_) out.push_back(LayoutOf(address, seg));
  return out;
}

std::vector<LSegment> DeviceRewind::LayoutIn(uint64_t begin, uint64_t end) const {
  std::vector<LSegment> out;
  auto it = segments_.upper_bound(begin);
  if (it != segments_.begin()) {
    auto prev = std::prev(it);
    if (prev->first + static_cast<uint64_t>(prev->second.size) > begin) it = prev;
  }
  for (; it != segments_.end() && it->first < end; ++it)
    out.push_back(LayoutOf(it->first, it->second));
  return out;
}

std::pair<uint64_t, uint64_t> DeviceRewind::SegmentExtent(uint64_t address) const {
  auto it = segments_.upper_bound(address);
  if (it == segments_.begin()) return {address, address};
  --it;
  uint64_t end = it->first + static_cast<uint64_t>(it->second.size);
  if (address >= end) return {address, address};
  return {it->first, end};
}

}  // namespace memsnap::analysis::frag_internal
