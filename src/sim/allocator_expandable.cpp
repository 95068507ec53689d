// Expandable segments (§12 of docs/allocator-model.md): one growable VA range per
// (stream, pool), mapped page by page (2 MiB small, large_segment_size large) at the lowest
// address that can hold the request, unmapped only by release_cached_blocks.
#include <algorithm>

#include "memsnap/sim/allocator.h"

namespace memsnap::sim {

namespace {
constexpr int64_t kDefaultVaTotal = int64_t{1} << 40;  // VA per segment when capacity is unbounded
}

uint32_t CachingAllocator::FindExpandableBlock(Pool& pool, int64_t stream, int64_t s) {
  auto allocatable = [&](uint32_t r) {
    return r != kNone && !blocks_[r].allocated && blocks_[r].event_count == 0;
  };
  auto has_space = [&](uint32_t r) {
    int64_t bytes = 0;
    while (bytes < s && allocatable(r)) {
      bytes += blocks_[r].size;
      r = blocks_[r].next;
    }
    return bytes >= s;
  };
  const uint64_t st = static_cast<uint64_t>(stream);
  for (auto it = pool.unmapped.lower_bound(AddrKey{st, 0, 0});
       it != pool.unmapped.end() && it->stream == st; ++it) {
    uint32_t c = it->ref;
    if (allocatable(blocks_[c].prev)) c = blocks_[c].prev;
    if (has_space(c)) return c;
  }
  ExpandableSegment seg;
  seg.page = pool.is_small ? kSmallBuffer : config_.large_segment_size;
  const int64_t total =
      device_->TotalBytes() == kUnlimitedCapacity ? kDefaultVaTotal : device_->TotalBytes();
  const int64_t wanted = total + total / 8;
  seg.va_size = (wanted + seg.page - 1) / seg.page * seg.page;
  seg.stream = stream;
  seg.live = true;
  seg.base = device_->ReserveAddressSpace(seg.va_size, seg.page);
  segments_.push_back(seg);
  Block blk;
  blk.ptr = seg.base;
  blk.size = seg.va_size;
  blk.stream = stream;
  blk.mapped = false;
  blk.is_small = pool.is_small;
  blk.expandable = static_cast<int32_t>(segments_.size() - 1);
  uint32_t b = NewBlock(blk);
  pool.unmapped.insert(AddrKeyOf(b));
  // A request larger than a whole segment's address space (1/8 above the device's memory) can
  // never be mapped: out of memory, as in PyTorch.
  return has_space(b) ? b : kNone;
}

uint32_t CachingAllocator::SpliceNeighbour(uint32_t b, uint64_t ptr, int64_t size, bool after) {
  Block n = blocks_[b];  // same stream, pool, segment and mapped state
  n.ptr = ptr;
  n.size = size;
  n.prev = after ? b : blocks_[b].prev;
  n.next = after ? blocks_[b].next : b;
  uint32_t r = NewBlock(n);
  if (after) {
    if (blocks_[r].next != kNone) blocks_[blocks_[r].next].prev = r;
    blocks_[b].next = r;
  } else {
    if (blocks_[r].prev != kNone) blocks_[blocks_[r].prev].next = r;
    blocks_[b].prev = r;
  }
  return r;
}

uint32_t CachingAllocator::TryAllocateExpandableBlock(Pool& pool, int64_t stream, int64_t s) {
  uint32_t c = FindExpandableBlock(pool, stream, s);
  if (c == kNone) return kNone;
  if (!blocks_[c].mapped && !MapBlock(c, std::min(blocks_[c].size, s))) return kNone;
  while (blocks_[c].size < s) {
    // The walk alternates mapped-free and unmapped blocks; mapping merges them. FindExpandableBlock
    // found room for `s`, so the walk never leaves the segment; the check keeps a broken
    // invariant an out-of-memory answer instead of a read past the blocks.
    const uint32_t next = blocks_[c].next;
    if (next == kNone || blocks_[next].mapped || blocks_[next].allocated) return kNone;
    if (!MapBlock(next, std::min(s - blocks_[c].size, blocks_[next].size))) return kNone;
    c = next;
  }
  EraseFree(pool, c);
  return c;
}

bool CachingAllocator::MapBlock(uint32_t b, int64_t size) {
  const ExpandableSegment& seg = segments_[blocks_[b].expandable];
  const int64_t page = seg.page;
  const uint64_t ptr = blocks_[b].ptr;
  const int64_t offset = static_cast<int64_t>(ptr - seg.base);
  const int64_t begin = offset / page;
  const int64_t end = (offset + size + page - 1) / page;
  const int64_t mapped = (end - begin) * page;
  if (mapped == 0 || !device_->Map(ptr, mapped)) return false;
  Pool& pool = PoolOf(b);
  pool.unmapped.erase(AddrKeyOf(b));
  blocks_[b].mapped = true;
  if (mapped < blocks_[b].size) {
    uint32_t r = SpliceNeighbour(b, ptr + static_cast<uint64_t>(mapped), blocks_[b].size - mapped,
                                 /*after=*/true);
    blocks_[r].mapped = false;
    blocks_[b].size = mapped;
    pool.unmapped.insert(AddrKeyOf(r));
  }
  TryMerge(b, blocks_[b].prev, pool);
  TryMerge(b, blocks_[b].next, pool);
  InsertFree(pool, b);
  total_allocated_memory_ += mapped;
  stats_.reserved_bytes.Add(pool.is_small, mapped);
  stats_.num_device_alloc += 1;
  stats_.num_map += 1;
  Emit(SegmentAction::kMap, ptr, mapped, blocks_[b].stream, seg.base);
  return true;
}

void CachingAllocator::UnmapBlock(uint32_t b) {
  const ExpandableSegment seg = segments_[blocks_[b].expandable];
  const int64_t page = seg.page;
  const int64_t offset = static_cast<int64_t>(blocks_[b].ptr - seg.base);
  const int64_t begin = (offset + page - 1) / page;
  const int64_t end = (offset + blocks_[b].size) / page;
  if (begin >= end) return;
  Pool& pool = PoolOf(b);
  EraseFree(pool, b);
  const uint64_t uptr = seg.base + static_cast<uint64_t>(begin * page);
  const int64_t usize = (end - begin) * page;
  const int64_t before = static_cast<int64_t>(uptr - blocks_[b].ptr);
  const int64_t after = blocks_[b].size - before - usize;
  // Partial pages at either end stay mapped as free blocks of their own.
  if (before > 0) InsertFree(pool, SpliceNeighbour(b, blocks_[b].ptr, before, /*after=*/false));
  if (after > 0) {
    InsertFree(pool, SpliceNeighbour(b, uptr + static_cast<uint64_t>(usize), after, true));
  }
  blocks_[b].ptr = uptr;
  blocks_[b].size = usize;
  blocks_[b].mapped = false;
  TryMerge(b, blocks_[b].prev, pool);
  TryMerge(b, blocks_[b].next, pool);
  pool.unmapped.insert(AddrKeyOf(b));
  device_->Unmap(uptr, usize);
  total_allocated_memory_ -= usize;
  stats_.reserved_bytes.Sub(pool.is_small, usize);
  stats_.num_device_free += 1;
  stats_.num_unmap += 1;
  Emit(SegmentAction::kUnmap, uptr, usize, blocks_[b].stream, seg.base);
}

std::vector<SegmentView> CachingAllocator::Segments() const {
  std::vector<SegmentView> out;
  for (uint32_t h = 0; h < blocks_.size(); ++h) {
    const Block& head = blocks_[h];
    if (head.dead || head.prev != kNone) continue;
    SegmentView* cur = nullptr;
    for (uint32_t r = h; r != kNone; r = blocks_[r].next) {
      const Block& x = blocks_[r];
      if (!x.mapped) {
        cur = nullptr;  // an unmapped gap ends an expandable segment's mapped run
        continue;
      }
      if (cur == nullptr) {
        out.push_back({x.ptr, x.stream, x.is_small, x.expandable >= 0, {}});
        cur = &out.back();
      }
      cur->blocks.push_back({x.ptr, x.size, x.allocated ? x.requested : 0, x.allocated,
                             !x.allocated && x.event_count > 0, x.mapped});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const SegmentView& a, const SegmentView& b) { return a.base < b.base; });
  return out;
}

}  // namespace memsnap::sim
