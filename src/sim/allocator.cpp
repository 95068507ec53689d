// The malloc/free paths of the simulated caching allocator. Section numbers refer to
// docs/allocator-model.md; the structure mirrors DeviceCachingAllocator so that a
// divergence found by `replay --verify` can be traced to one function.
#include "memsnap/sim/allocator.h"

#include <algorithm>
#include <cassert>

namespace memsnap::sim {

int64_t SegmentSize(int64_t s, const AllocatorConfig& config) {
  if (s <= kSmallSize) return kSmallBuffer;
  if (s < kMinLargeAlloc) return config.large_segment_size;
  return RoundUpSaturated(s, kRoundLarge);
}

const char* SegmentActionName(SegmentAction a) {
  switch (a) {
    case SegmentAction::kAlloc:
      return "segment_alloc";
    case SegmentAction::kFree:
      return "segment_free";
    case SegmentAction::kMap:
      return "segment_map";
    case SegmentAction::kUnmap:
      return "segment_unmap";
  }
  return "?";
}

namespace {

// set_memory_fraction: the fraction of the device's total the allocator may reserve.
int64_t AllowedMemoryMaximum(double fraction, int64_t total) {
  double allowed = fraction * static_cast<double>(total);
  return allowed >= 9.2e18 ? kUnlimitedCapacity : static_cast<int64_t>(allowed);
}

// garbage_collect_cached_blocks reclaims nothing while the reserved bytes stay at or below this.
int64_t GcThreshold(double threshold, int64_t allowed) {
  return static_cast<int64_t>(threshold * static_cast<double>(allowed));
}

}  // namespace

CachingAllocator::CachingAllocator(const AllocatorConfig& config, DeviceMemory* device)
    : config_(config), device_(device) {
  small_.is_small = true;
  ResetMemoryFraction();
}

void CachingAllocator::ResetMemoryFraction() {
  allowed_memory_maximum_ = config_.memory_fraction ? AllowedMemoryMaximum(*config_.memory_fraction,
                                                                           device_->TotalBytes())
                                                    : kUnlimitedCapacity;
}

int64_t CachingAllocator::ReservedTakingUnlimitedDecisions(const AllocatorConfig& config,
                                                           int64_t capacity) {
  if (!config.memory_fraction) return capacity;
  // Below the fraction's limit every cudaMalloc fits the device too (the fraction is at most 1).
  // On no limit the fraction's limit is still a number (unless it rounds to no limit), though
  // no trace reaches it.
  const int64_t allowed = AllowedMemoryMaximum(*config.memory_fraction, capacity);
  const bool gc = config.garbage_collection_threshold > 0.0;
  return std::min(capacity,
                  gc ? GcThreshold(config.garbage_collection_threshold, allowed) : allowed);
}

uint32_t CachingAllocator::NewBlock(const Block& b) {
  if (!free_slots_.empty()) {
    uint32_t r = free_slots_.back();
    free_slots_.pop_back();
    blocks_[r] = b;
    return r;
  }
  blocks_.push_back(b);
  return static_cast<uint32_t>(blocks_.size() - 1);
}

void CachingAllocator::DeleteBlock(uint32_t b) {
  blocks_[b].dead = true;
  free_slots_.push_back(b);
}

inline void CachingAllocator::CountAllocation(bool is_small, int64_t size, int64_t requested) {
  stats_.allocation.Add(is_small, 1);
  stats_.allocated_bytes.Add(is_small, size);
  stats_.active.Add(is_small, 1);
  stats_.active_bytes.Add(is_small, size);
  stats_.requested_bytes.Add(is_small, requested);
  if (size >= config_.max_split_size) stats_.oversize_allocations.Add(1);
}

inline void CachingAllocator::UncountAllocation(Block& x, bool is_small) {
  x.allocated = false;
  stats_.allocation.Sub(is_small, 1);
  stats_.allocated_bytes.Sub(is_small, x.size);
  if (x.size >= config_.max_split_size) stats_.oversize_allocations.Sub(1);
}

void CachingAllocator::InsertFree(Pool& pool, uint32_t b) { InsertFreeInline(pool, b); }

inline void CachingAllocator::InsertFreeInline(Pool& pool, uint32_t b) {
  blocks_[b].gc_count_base = pool.get_free_blocks_call_count;
  const Block& x = blocks_[b];
  if (pool.blocks.Insert(static_cast<uint64_t>(x.stream), x.size, x.ptr, b) &&
      Releasable(pool, b)) {
    ++pool.releasable;
  }
}

void CachingAllocator::Emit(SegmentAction a, uint64_t addr, int64_t size, int64_t stream,
                            uint64_t base) {
  if (log_) log_->push_back({a, addr, size, stream, base});
}

bool CachingAllocator::GcEnabled() const {
  return config_.memory_fraction.has_value() && config_.garbage_collection_threshold > 0.0;
}

std::optional<BlockRef> CachingAllocator::Malloc(int64_t n, int64_t stream) {
  const int64_t s = RoundSize(n, config_);
  Pool& pool = s <= kSmallSize ? small_ : large_;
  const int64_t alloc_size = SegmentSize(s, config_);
  uint32_t b = GetFreeBlock(pool, stream, s);
  const bool indexed = b != kNone;  // still in the index at found_
  int64_t reserved_before = 0;
  int64_t releases_before = 0;
  if (b == kNone) {
    reserved_before = stats_.reserved_bytes.aggregate.current;
    releases_before = stats_.num_device_free;
    if (GcEnabled()) GarbageCollect();
    b = AllocBlock(pool, stream, s, alloc_size, false);
    if (b == kNone && ReleaseAvailableCachedBlocks(pool, stream, s)) {
      b = AllocBlock(pool, stream, s, alloc_size, false);
    }
    if (b == kNone) {
      ReleaseCachedBlocks();
      b = AllocBlock(pool, stream, s, alloc_size, true);
    }
  }
  if (b == kNone) {
    stats_.num_ooms += 1;
    const int64_t reserved = stats_.reserved_bytes.aggregate.current;
    last_oom_ = {n,
                 s,
                 alloc_size,
                 device_->FreeBytes(),
                 stream,
                 pool.is_small,
                 reserved_before,
                 reserved_before - reserved,
                 stats_.num_device_free - releases_before,
                 reserved,
                 stats_.allocated_bytes.aggregate.current};
    return std::nullopt;
  }
  return s <= kSmallSize ? AllocFoundBlock<true>(b, small_, n, s, indexed)
                         : AllocFoundBlock<false>(b, large_, n, s, indexed);
}

inline uint32_t CachingAllocator::GetFreeBlock(Pool& pool, int64_t stream, int64_t s) {
  if (GcEnabled()) ++pool.get_free_blocks_call_count;
  FreeIndex::Cursor it = pool.blocks.LowerBound(static_cast<uint64_t>(stream), s);
  if (!it.valid()) return kNone;
  if (blocks_[it->ref].expandable >= 0) {
    if (config_.expandable_segments) {
      // The growable tail counts as big as the unmapped space after it (§7), so an interior
      // free block that fits is preferred over the tail.
      auto grow = [&](uint32_t r) {
        const Block& x = blocks_[r];
        return x.size + (x.next != kNone && !blocks_[x.next].mapped ? blocks_[x.next].size : 0);
      };
      FreeIndex::Cursor next = it;
      while (blocks_[it->ref].expandable >= 0 && next.Next() && grow(next->ref) < grow(it->ref)) {
        it = next;
      }
    } else {
      do {
        it.Next();
      } while (it.valid() && blocks_[it->ref].expandable >= 0);
      if (!it.valid()) return kNone;
    }
  }
  // Oversize rules: only the first candidate is examined.
  if (s < config_.max_split_size && it->size >= config_.max_split_size) return kNone;
  if (s >= config_.max_split_size && it->size >= s + config_.max_non_split_rounding) return kNone;
  found_ = it;
  return it->ref;
}

uint32_t CachingAllocator::AllocBlock(Pool& pool, int64_t stream, int64_t s, int64_t alloc_size,
                                      bool retry) {
  if (retry) stats_.num_alloc_retries += 1;
  if (config_.memory_fraction && total_allocated_memory_ + alloc_size > allowed_memory_maximum_) {
    return kNone;
  }
  if (config_.expandable_segments) return TryAllocateExpandableBlock(pool, stream, s);
  std::optional<uint64_t> ptr = device_->Malloc(alloc_size);
  if (!ptr) return kNone;
  total_allocated_memory_ += alloc_size;
  Block blk;
  blk.ptr = *ptr;
  blk.size = alloc_size;
  blk.stream = stream;
  blk.is_small = pool.is_small;
  uint32_t b = NewBlock(blk);
  stats_.segment.Add(pool.is_small, 1);
  stats_.reserved_bytes.Add(pool.is_small, alloc_size);
  if (alloc_size >= config_.max_split_size) stats_.oversize_segments.Add(1);
  stats_.num_device_alloc += 1;
  stats_.num_segment_alloc += 1;
  Emit(SegmentAction::kAlloc, *ptr, alloc_size, stream, *ptr);
  return b;
}

bool CachingAllocator::ShouldSplit(uint32_t b, int64_t s) const {
  const int64_t remaining = blocks_[b].size - s;
  if (blocks_[b].is_small || config_.expandable_segments) return remaining >= kMinBlockSize;
  return s < config_.max_split_size && remaining > kSmallSize;
}

template <bool kSmall>
inline BlockRef CachingAllocator::AllocFoundBlock(uint32_t b, Pool& pool, int64_t n, int64_t s,
                                                  bool indexed) {
  const bool split = ShouldSplit(b, s);
  const bool already_split = IsSplit(b);
  const bool expandable = blocks_[b].expandable >= 0;
  constexpr bool small = kSmall;
  // The found block leaves the index (or gives its place to its split remainder).
  if (indexed && Releasable(pool, b)) --pool.releasable;
  uint32_t taken = b;
  if (split) {
    // The allocation takes the low-address front; the remainder goes back to the pool.
    Block front = blocks_[b];
    front.size = s;
    front.next = b;
    taken = NewBlock(front);
    Block& rest = blocks_[b];
    if (rest.prev != kNone) blocks_[rest.prev].next = taken;
    rest.prev = taken;
    rest.ptr += static_cast<uint64_t>(s);
    rest.size -= s;
    if (indexed) {
      // The remainder keeps the found block's place in the index under its smaller key (erase
      // and insert, mostly without leaving the chunk).
      rest.gc_count_base = pool.get_free_blocks_call_count;
      pool.blocks.Shrink(found_, rest.size, rest.ptr, b);
    } else {
      InsertFree(pool, b);
    }
    if (!expandable) {
      if (already_split) {
        stats_.inactive_split_bytes.Sub(small, s);
      } else {
        stats_.inactive_split_bytes.Add(small, blocks_[b].size);
        stats_.inactive_split.Add(small, 1);
      }
    }
  } else {
    if (indexed) pool.blocks.Erase(found_);
    if (already_split && !expandable) {
      stats_.inactive_split_bytes.Sub(small, blocks_[b].size);
      stats_.inactive_split.Sub(small, 1);
    }
  }
  Block& t = blocks_[taken];
  t.allocated = true;
  t.requested = n;
  t.event_count = 0;
  CountAllocation(small, t.size, n);
  return taken;
}

void CachingAllocator::Free(BlockRef b) {
  Block& x = blocks_[b];
  assert(x.allocated);
  if (x.is_small) {
    UncountAllocation(x, true);
    FreeBlockInline<true>(b);
  } else {
    UncountAllocation(x, false);
    FreeBlockInline<false>(b);
  }
}

void CachingAllocator::FreeRequested(BlockRef b) {
  Block& x = blocks_[b];
  UncountAllocation(x, x.is_small);
  x.event_count = 1;  // one pseudo event: completes at the recorded free_completed
  pending_.push_back(b);
}

void CachingAllocator::FreeCompleted(BlockRef b) {
  if (blocks_[b].event_count == 0) return;  // a synchronization completed it already
  blocks_[b].event_count = 0;
  pending_.erase(std::find(pending_.begin(), pending_.end(), b));
  FreeBlock(b);
}

void CachingAllocator::SynchronizeAndFreeEvents() {
  stats_.num_sync_all_streams += 1;
  std::vector<uint32_t> pending;
  pending.swap(pending_);
  for (uint32_t b : pending) {
    blocks_[b].event_count = 0;
    FreeBlock(b);
  }
}

void CachingAllocator::FreeBlock(uint32_t b) {
  if (blocks_[b].is_small) {
    FreeBlockInline<true>(b);
  } else {
    FreeBlockInline<false>(b);
  }
}

template <bool kSmall>
inline void CachingAllocator::FreeBlockInline(uint32_t b) {
  Pool& pool = kSmall ? small_ : large_;
  const int64_t original_size = blocks_[b].size;
  const int64_t requested = blocks_[b].requested;
  int64_t net_blocks = 0;
  int64_t net_bytes = 0;
  for (uint32_t cand : {blocks_[b].prev, blocks_[b].next}) {
    int64_t subsumed = TryMergeInline(b, cand, pool);
    if (subsumed > 0) {
      net_blocks -= 1;
      net_bytes -= subsumed;
    }
  }
  InsertFreeInline(pool, b);
  if (IsSplit(b)) {
    net_blocks += 1;
    net_bytes += blocks_[b].size;
  }
  constexpr bool small = kSmall;
  if (blocks_[b].expandable < 0) {
    if (net_blocks > 0) stats_.inactive_split.Add(small, net_blocks);
    if (net_blocks < 0) stats_.inactive_split.Sub(small, -net_blocks);
    if (net_bytes > 0) stats_.inactive_split_bytes.Add(small, net_bytes);
    if (net_bytes < 0) stats_.inactive_split_bytes.Sub(small, -net_bytes);
  }
  stats_.active.Sub(small, 1);
  stats_.active_bytes.Sub(small, original_size);
  stats_.requested_bytes.Sub(small, requested);
}

int64_t CachingAllocator::TryMerge(uint32_t dst, uint32_t src, Pool& pool) {
  return TryMergeInline(dst, src, pool);
}

inline int64_t CachingAllocator::TryMergeInline(uint32_t dst, uint32_t src, Pool& pool) {
  if (src == kNone) return 0;
  Block& s = blocks_[src];
  Block& d = blocks_[dst];
  if (s.allocated || s.event_count > 0 || s.mapped != d.mapped) return 0;
  if (s.mapped) {
    EraseFree(pool, src);
  } else {
    pool.unmapped.erase(AddrKeyOf(src));
  }
  if (d.prev == src) {
    d.ptr = s.ptr;
    d.prev = s.prev;
    if (d.prev != kNone) blocks_[d.prev].next = dst;
  } else {
    d.next = s.next;
    if (d.next != kNone) blocks_[d.next].prev = dst;
  }
  const int64_t subsumed = s.size;
  d.size += subsumed;
  DeleteBlock(src);
  return subsumed;
}

void CachingAllocator::GarbageCollect() {
  const int64_t threshold =
      GcThreshold(config_.garbage_collection_threshold, allowed_memory_maximum_);
  if (total_allocated_memory_ <= threshold) return;
  const int64_t target = total_allocated_memory_ - threshold;
  int64_t reclaimed = 0;
  Pool& pool = large_;
  // The scan below would count no candidate: on a trace that keeps the reserved bytes above the
  // threshold, most calls (89% of 326 thousand in `oom`'s searches on the 2.2 M-event file).
  if (pool.releasable == 0) return;
  auto freeable = [&](uint32_t r) { return !IsSplit(r) && blocks_[r].expandable < 0; };
  auto age = [&](uint32_t r) { return pool.get_free_blocks_call_count - blocks_[r].gc_count_base; };
  int64_t total_age = 0;
  int64_t count = 0;
  pool.blocks.ForEach([&](uint64_t, const FreeIndex::Entry& k) {
    if (freeable(k.ref)) {
      total_age += age(k.ref);
      ++count;
    }
  });
  if (count == 0) return;
  bool freed = true;
  while (reclaimed < target && freed && count > 0) {
    const double threshold_age = static_cast<double>(total_age) / static_cast<double>(count);
    freed = false;
    std::vector<uint32_t> victims;
    pool.blocks.ForEach([&](uint64_t, const FreeIndex::Entry& k) {
      if (freeable(k.ref) && static_cast<double>(age(k.ref)) >= threshold_age) {
        victims.push_back(k.ref);
      }
    });
    for (uint32_t r : victims) {
      freed = true;
      reclaimed += blocks_[r].size;
      total_age -= age(r);
      --count;
      ReleaseBlock(r);
    }
  }
}

bool CachingAllocator::ReleaseAvailableCachedBlocks(Pool& pool, int64_t stream, int64_t s) {
  if (config_.max_split_size == kUnlimitedSize) return false;
  const int64_t key_size = std::max(s, config_.max_split_size);
  FreeIndex::Cursor it = pool.blocks.LowerBound(static_cast<uint64_t>(stream), key_size);
  if (it.valid() && blocks_[it->ref].expandable < 0) {
    ReleaseBlock(it->ref);
    return true;
  }
  // No single block is large enough: free oversize blocks from the largest down (the blocks of
  // the stream below the search key, walking down).
  if (!it.Prev()) return false;
  int64_t released = 0;
  std::vector<uint32_t> victims;
  while (released < key_size && it->size >= config_.max_split_size) {
    if (blocks_[it->ref].expandable < 0) {
      released += it->size;
      victims.push_back(it->ref);
    }
    if (!it.Prev()) break;
  }
  for (uint32_t r : victims) ReleaseBlock(r);
  return released >= key_size;
}

void CachingAllocator::ReleaseCachedBlocks() {
  SynchronizeAndFreeEvents();
  ReleaseBlocks(large_);
  ReleaseBlocks(small_);
}

void CachingAllocator::EmptyCache() { ReleaseCachedBlocks(); }

std::vector<BlockRef> CachingAllocator::SeedSegment(uint64_t base, int64_t size, int64_t stream,
                                                    bool is_small,
                                                    const std::vector<SeedBlock>& allocated) {
  Pool& pool = is_small ? small_ : large_;
  device_->AdoptSegment(base, size);
  total_allocated_memory_ += size;
  stats_.segment.Add(is_small, 1);
  stats_.reserved_bytes.Add(is_small, size);
  if (size >= config_.max_split_size) stats_.oversize_segments.Add(1);
  // Tile the segment: allocated blocks as given, free blocks in between.
  struct Piece {
    uint64_t ptr;
    int64_t size;
    int64_t requested;
    bool allocated;
  };
  std::vector<Piece> pieces;
  uint64_t cur = base;
  const uint64_t end = base + static_cast<uint64_t>(size);
  for (const SeedBlock& a : allocated) {
    if (a.ptr > cur) pieces.push_back({cur, static_cast<int64_t>(a.ptr - cur), 0, false});
    pieces.push_back({a.ptr, a.size, a.requested, true});
    cur = a.ptr + static_cast<uint64_t>(a.size);
  }
  if (cur < end) pieces.push_back({cur, static_cast<int64_t>(end - cur), 0, false});
  const bool split = pieces.size() > 1;
  std::vector<BlockRef> refs;
  uint32_t prev = kNone;
  uint32_t head = kNone;
  for (const Piece& p : pieces) {
    Block blk;
    blk.ptr = p.ptr;
    blk.size = p.size;
    blk.requested = p.requested;
    blk.stream = stream;
    blk.is_small = is_small;
    blk.allocated = p.allocated;
    blk.prev = prev;
    uint32_t r = NewBlock(blk);
    if (prev != kNone) blocks_[prev].next = r;
    if (head == kNone) head = r;
    prev = r;
    if (p.allocated) {
      refs.push_back(r);
      CountAllocation(is_small, p.size, p.requested);
    }
  }
  // Free blocks go into the pool once the chain is linked (their keys do not change later).
  for (uint32_t x = head; x != kNone; x = blocks_[x].next) {
    if (blocks_[x].allocated) continue;
    InsertFree(pool, x);
    if (split) {
      stats_.inactive_split.Add(is_small, 1);
      stats_.inactive_split_bytes.Add(is_small, blocks_[x].size);
    }
  }
  return refs;
}

void CachingAllocator::ReleaseBlocks(Pool& pool) {
  std::vector<uint32_t> to_release;
  std::vector<uint32_t> to_unmap;
  pool.blocks.ForEach([&](uint64_t, const FreeIndex::Entry& k) {
    if (blocks_[k.ref].expandable >= 0) {
      to_unmap.push_back(k.ref);
    } else if (!IsSplit(k.ref)) {
      to_release.push_back(k.ref);
    }
  });
  // Releasing does not reorder the remaining blocks, so collecting first frees them in the same
  // (stream, size, ptr) order as upstream's erase-while-iterating loop.
  for (uint32_t r : to_release) ReleaseBlock(r);
  for (uint32_t r : to_unmap) {
    UnmapBlock(r);
    const Block& x = blocks_[r];
    if (!x.mapped && x.prev == kNone && x.next == kNone) {
      ExpandableSegment& seg = segments_[x.expandable];
      device_->ReleaseAddressSpace(seg.base, seg.va_size);
      seg.live = false;
      pool.unmapped.erase(AddrKeyOf(r));
      DeleteBlock(r);
    }
  }
}

void CachingAllocator::ReleaseBlock(uint32_t b) {
  Block& x = blocks_[b];
  stats_.num_device_free += 1;
  stats_.num_segment_free += 1;
  Emit(SegmentAction::kFree, x.ptr, x.size, x.stream, x.ptr);
  device_->Free(x.ptr, x.size);
  total_allocated_memory_ -= x.size;
  stats_.segment.Sub(x.is_small, 1);
  stats_.reserved_bytes.Sub(x.is_small, x.size);
  if (x.size >= config_.max_split_size) stats_.oversize_segments.Sub(1);
  EraseFree(PoolOf(b), b);
  DeleteBlock(b);
}

int64_t CachingAllocator::CachedFreeBytes() const {
  int64_t total = 0;
  for (const Pool* p : {&large_, &small_}) {
    p->blocks.ForEach([&](uint64_t, const FreeIndex::Entry& k) { total += k.size; });
  }
  return total;
}

FreeSpace CachingAllocator::DescribeFreeSpace(int64_t s, int64_t stream, bool is_small) const {
  FreeSpace f;
  const uint64_t st = static_cast<uint64_t>(stream);
  for (const Pool* p : {&large_, &small_}) {
    const bool own_pool = p->is_small == is_small;
    p->blocks.ForEach([&](uint64_t k_stream, const FreeIndex::Entry& k) {
      f.all_free += k.size;
      f.all_largest = std::max(f.all_largest, k.size);
      if (!own_pool) {
        f.other_pool_free += k.size;
      } else if (k_stream == st) {
        f.pool_free += k.size;
        f.pool_largest = std::max(f.pool_largest, k.size);
        const bool refused =
            (s < config_.max_split_size && k.size >= config_.max_split_size) ||
            (s >= config_.max_split_size && k.size >= s + config_.max_non_split_rounding);
        if (k.size >= s && refused && (f.oversize_refused == 0 || k.size < f.oversize_refused)) {
          f.oversize_refused = k.size;
        }
      } else {
        f.other_streams_free += k.size;
        if (k.size > f.other_streams_largest) {
          f.other_streams_largest = k.size;
          f.other_streams_stream = static_cast<int64_t>(k_stream);
        }
      }
    });
  }
  return f;
}

}  // namespace memsnap::sim
