// A deterministic CPU model of PyTorch's CUDA caching allocator (backend:native) for one device:
// pure bookkeeping over address ranges, no memory is touched. It follows
// docs/allocator-model.md (§4-§14) and c10/cuda/CUDACachingAllocator.cpp:
//
// clang-format off
//   Malloc(n, stream)
//     s = RoundSize(n); pool = s <= 1 MiB ? small : large
//     best fit on (stream, size, ptr)  -- oversize rules (max_split_size, max_non_split_rounding)
//     miss: GC (fraction limit only) -> new segment -> free oversize cached -> free all, retry -> OOM
//     take the low front of the block, split the rest back (should_split)
//   Free / FreeRequested + FreeCompleted    merge with free neighbours, back into the pool
//   EmptyCache                              cudaFree unsplit segments, unmap whole free pages
// clang-format on
//
// Blocks are referred to by BlockRef handles that stay valid from Malloc until the block is
// freed (FreeCompleted or Free).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/btree_set.h"
#include "memsnap/sim/config.h"
#include "memsnap/sim/device_memory.h"
#include "memsnap/sim/free_index.h"
#include "memsnap/sim/sizes.h"

namespace memsnap::sim {

/// round_size(n) of §4 under `config`'s roundup_power2_divisions (see sizes.h).
constexpr int64_t RoundSize(int64_t n, const AllocatorConfig& config) {
  return RoundSize(n, config.roundup_power2_divisions);
}
/// get_allocation_size(s) of §5: the cudaMalloc size for a rounded request.
int64_t SegmentSize(int64_t rounded, const AllocatorConfig& config);

/// One upstream Stat: current value, high-water mark, cumulative increase and decrease.
struct Stat {
  int64_t current = 0;
  int64_t peak = 0;
  int64_t allocated = 0;
  int64_t freed = 0;
  void Add(int64_t v) {
    current += v;
    allocated += v;
    if (current > peak) peak = current;
  }
  void Sub(int64_t v) {
    current -= v;
    freed += v;
  }
};

/// A Stat kept for the whole device and per pool kind, as upstream's StatArray.
struct StatArray {
  Stat aggregate, small, large;
  void Add(bool is_small, int64_t v) {
    aggregate.Add(v);
    (is_small ? small : large).Add(v);
  }
  void Sub(bool is_small, int64_t v) {
    aggregate.Sub(v);
    (is_small ? small : large).Sub(v);
  }
};

/// Upstream DeviceStats (§14) plus the split of device calls by kind.
struct AllocatorStats {
  StatArray allocation, segment, active, inactive_split;
  StatArray allocated_bytes, reserved_bytes, active_bytes, inactive_split_bytes, requested_bytes;
  Stat oversize_allocations, oversize_segments;
  int64_t num_alloc_retries = 0;
  int64_t num_ooms = 0;
  int64_t num_sync_all_streams = 0;
  int64_t num_device_alloc = 0;   // cudaMalloc + map calls
  int64_t num_device_free = 0;    // cudaFree + unmap calls
  int64_t num_segment_alloc = 0;  // cudaMalloc
  int64_t num_segment_free = 0;   // cudaFree
  int64_t num_map = 0;
  int64_t num_unmap = 0;
};

enum class SegmentAction : uint8_t { kAlloc, kFree, kMap, kUnmap };
/// "segment_alloc", "segment_free", "segment_map", "segment_unmap".
const char* SegmentActionName(SegmentAction a);

/// A segment trace entry as PyTorch records it; `base` is the segment (or expandable VA range)
/// the range belongs to, so addresses can be compared relative to it.
struct SegmentEvent {
  SegmentAction action = SegmentAction::kAlloc;
  uint64_t addr = 0;
  int64_t size = 0;
  int64_t stream = 0;
  uint64_t base = 0;
  friend bool operator==(const SegmentEvent&, const SegmentEvent&) = default;
};

/// What a failed Malloc saw (the `oom` trace entry and the OOM message).
struct OomInfo {
  int64_t requested = 0;     // n
  int64_t rounded = 0;       // s, what the trace records
  int64_t segment_size = 0;  // A, what the message reports
  int64_t device_free = 0;
  int64_t stream = 0;
  bool is_small = false;  // the pool the request was for (s <= 1 MiB)
  /// Reserved bytes when the malloc found no cached block, before GC and the release paths.
  int64_t reserved_before = 0;
  /// What the malloc gave back to the device before failing (GC, release_available_cached_blocks,
  /// release_cached_blocks): bytes and cudaFree/unmap calls.
  int64_t released_bytes = 0;
  int64_t released_segments = 0;
  /// Reserved and allocated bytes at the failure (after the releases).
  int64_t reserved = 0;
  int64_t allocated = 0;
};

/// The cached free memory as a failing malloc of `s` bytes on `stream` saw it: what the caller
/// needs to say why no cached block served it (OomInfo says why the device could not).
struct FreeSpace {
  int64_t pool_free = 0;              // free mapped bytes in the request's pool on its stream
  int64_t pool_largest = 0;           // the largest of those blocks
  int64_t other_streams_free = 0;     // free bytes in the request's pool on other streams
  int64_t other_streams_largest = 0;  // the largest of those blocks
  int64_t other_streams_stream = 0;   // the stream of that largest block
  int64_t other_pool_free = 0;        // free bytes in the other pool (small vs large)
  /// The smallest block on the request's stream that holds `s` but that the oversize rules
  /// (max_split_size, max_non_split_rounding) refuse to serve it; 0 when none.
  int64_t oversize_refused = 0;
  int64_t all_free = 0;     // every free mapped byte of both pools
  int64_t all_largest = 0;  // the largest free block of both pools
};

/// One block of a segment, for inspection (Segments()).
struct BlockView {
  uint64_t ptr = 0;
  int64_t size = 0;
  int64_t requested = 0;
  bool allocated = false;
  bool pending_free = false;
  bool mapped = true;
};
struct SegmentView {
  uint64_t base = 0;  // first block's address
  int64_t stream = 0;
  bool is_small = false;
  bool is_expandable = false;
  std::vector<BlockView> blocks;
};

using BlockRef = uint32_t;

/// An allocated block of a segment that existed before the simulation began (SeedSegment).
struct SeedBlock {
  uint64_t ptr = 0;
  int64_t size = 0;       // the block size (rounded, possibly with unsplit slack)
  int64_t requested = 0;  // the user's request
};

class CachingAllocator {
 public:
  /// `device` must outlive the allocator.
  CachingAllocator(const AllocatorConfig& config, DeviceMemory* device);
  /// A copy of an allocator shares its device; after copying the device too (a replay resumed
  /// from a saved state), point the copy at the device's copy.
  void RebindDevice(DeviceMemory* device) { device_ = device; }
  /// Recomputes the memory fraction's limit from the device's total, as set_memory_fraction
  /// does: after the device of a resumed copy was given another capacity.
  void ResetMemoryFraction();
  /// The most bytes reserved with which an allocator of `config` on a device of `capacity`
  /// takes exactly the decisions it takes on no limit: every cudaMalloc fits, the memory
  /// fraction's limit is not reached and garbage collection finds nothing above its threshold.
  /// kUnlimitedCapacity when the capacity never matters. Computed as the allocator computes its
  /// limits (on kUnlimitedCapacity too: a fraction's limit is then a fraction of it). Not
  /// meaningful for expandable segments on a bounded capacity (their address ranges scale with
  /// the capacity).
  static int64_t ReservedTakingUnlimitedDecisions(const AllocatorConfig& config, int64_t capacity);

  /// malloc(n, stream): the block, or nullopt on OOM (last_oom() says why; num_ooms counts).
  std::optional<BlockRef> Malloc(int64_t n, int64_t stream);
  /// free() of a block with no stream uses: free_requested then free_completed.
  void Free(BlockRef block);
  /// free() of a block with outstanding stream uses: allocated drops now, the memory returns
  /// to the cache at FreeCompleted (or at the next synchronize_and_free_events).
  void FreeRequested(BlockRef block);
  /// The recorded free_completed; a no-op when a synchronization already completed it.
  void FreeCompleted(BlockRef block);
  /// torch.cuda.empty_cache(): release_cached_blocks.
  void EmptyCache();
  /// Recreates a cudaMalloc segment [base, base+size) that existed before the simulation began,
  /// with `allocated` blocks (sorted, disjoint, inside the segment) and free blocks in the gaps.
  /// Returns the allocated blocks' handles in order. Not for expandable segments.
  std::vector<BlockRef> SeedSegment(uint64_t base, int64_t size, int64_t stream, bool is_small,
                                    const std::vector<SeedBlock>& allocated);

  uint64_t BlockPtr(BlockRef b) const { return blocks_[b].ptr; }
  int64_t BlockSize(BlockRef b) const { return blocks_[b].size; }
  bool IsPendingFree(BlockRef b) const { return blocks_[b].event_count > 0; }
  /// Whether `b` is allocated: a replay of a state the trace does not explain (a mutated file)
  /// may name a block twice; the second free is then not the allocator's to make.
  bool IsAllocated(BlockRef b) const { return blocks_[b].allocated; }

  const AllocatorStats& stats() const { return stats_; }
  const OomInfo& last_oom() const { return last_oom_; }
  const AllocatorConfig& config() const { return config_; }
  /// Appends every segment_alloc/free/map/unmap to `log` (nullptr: stop logging).
  void SetEventLog(std::vector<SegmentEvent>* log) { log_ = log; }
  /// Every live segment in address order (expandable: one per mapped run), blocks in order.
  std::vector<SegmentView> Segments() const;
  /// Σ free mapped bytes in the pools (cached but unused).
  int64_t CachedFreeBytes() const;
  /// The free blocks as a malloc of rounded size `s` on `stream` in the small or large pool sees
  /// them (an OOM's explanation); a scan of the pools, not for the hot path.
  FreeSpace DescribeFreeSpace(int64_t s, int64_t stream, bool is_small) const;

 private:
  static constexpr uint32_t kNone = 0xffffffffu;
  struct Block {
    uint64_t ptr = 0;
    int64_t size = 0;
    int64_t requested = 0;
    int64_t stream = 0;
    int64_t gc_count_base = 0;
    uint32_t prev = kNone;
    uint32_t next = kNone;
    int32_t expandable = -1;  // index into segments_
    uint8_t event_count = 0;
    bool allocated = false;
    bool mapped = true;
    bool is_small = false;
    bool dead = false;  // slot on the free list
  };
  struct AddrKey {
    uint64_t stream;
    uint64_t ptr;
    uint32_t ref;
    bool operator<(const AddrKey& o) const {
      return stream != o.stream ? stream < o.stream : ptr < o.ptr;
    }
  };
  struct Pool {
    FreeIndex blocks;                   // free, mapped: (stream, size, ptr) order
    absl::btree_set<AddrKey> unmapped;  // expandable VA not backed
    bool is_small = false;
    int64_t get_free_blocks_call_count = 0;
    /// How many of `blocks` are Releasable: none, and garbage collection has nothing to scan.
    int64_t releasable = 0;
  };
  struct ExpandableSegment {
    uint64_t base = 0;
    int64_t va_size = 0;
    int64_t page = 0;
    int64_t stream = 0;
    bool live = false;
  };

  // Block arena.
  uint32_t NewBlock(const Block& b);
  void DeleteBlock(uint32_t b);
  bool IsSplit(uint32_t b) const { return blocks_[b].prev != kNone || blocks_[b].next != kNone; }
  Pool& PoolOf(uint32_t b) { return blocks_[b].is_small ? small_ : large_; }
  /// Whether a free block is one garbage collection may release: a whole segment (not split),
  /// not expandable, in the large pool. Constant while the block is in its pool's index (it
  /// gains or loses a neighbour only by leaving it: a merge, a split).
  bool Releasable(const Pool& pool, uint32_t b) const {
    return !pool.is_small && !IsSplit(b) && blocks_[b].expandable < 0;
  }
  /// Removes a free block from its pool's index.
  void EraseFree(Pool& pool, uint32_t b) {
    const Block& x = blocks_[b];
    if (pool.blocks.Erase(static_cast<uint64_t>(x.stream), x.size, x.ptr) && Releasable(pool, b)) {
      --pool.releasable;
    }
  }
  AddrKey AddrKeyOf(uint32_t b) const {
    return {static_cast<uint64_t>(blocks_[b].stream), blocks_[b].ptr, b};
  }
  void InsertFree(Pool& pool, uint32_t b);
  /// InsertFree's body, inlined into the hot free path (allocator.cpp).
  [[gnu::always_inline]] void InsertFreeInline(Pool& pool, uint32_t b);
  void Emit(SegmentAction a, uint64_t addr, int64_t size, int64_t stream, uint64_t base);
  bool GcEnabled() const;

  // The malloc path (allocator.cpp).
  /// The best fit, left in the pool's index at `found_` (AllocFoundBlock takes it out).
  [[gnu::always_inline]] uint32_t GetFreeBlock(Pool& pool, int64_t stream, int64_t s);
  uint32_t AllocBlock(Pool& pool, int64_t stream, int64_t s, int64_t alloc_size, bool retry);
  /// `indexed`: `b` is GetFreeBlock's, still in the index at `found_` (else a new segment's).
  /// Instantiated per pool kind (kSmall: `pool` is small_), so that the statistics of that kind
  /// are addressed directly instead of chosen at each update.
  template <bool kSmall>
  [[gnu::always_inline]] BlockRef AllocFoundBlock(uint32_t b, Pool& pool, int64_t n, int64_t s,
                                                  bool indexed);
  bool ShouldSplit(uint32_t b, int64_t s) const;
  void FreeBlock(uint32_t b);
  int64_t TryMerge(uint32_t dst, uint32_t src, Pool& pool);
  // The bodies of FreeBlock and TryMerge, inlined into Free (the hot free path): the calls'
  // register saves and restores were about a tenth of a replay's instructions (issue 37).
  template <bool kSmall>
  [[gnu::always_inline]] void FreeBlockInline(uint32_t b);
  [[gnu::always_inline]] int64_t TryMergeInline(uint32_t dst, uint32_t src, Pool& pool);
  void GarbageCollect();
  bool ReleaseAvailableCachedBlocks(Pool& pool, int64_t stream, int64_t s);
  void ReleaseCachedBlocks();
  void ReleaseBlocks(Pool& pool);
  void ReleaseBlock(uint32_t b);
  void SynchronizeAndFreeEvents();
  // Stats of a block becoming allocated (Malloc, SeedSegment) and of an allocated block being
  // freed (Free, FreeRequested; this also clears `allocated`). Active and requested bytes are
  // taken back later, when the block returns to its pool (FreeBlock). Inlined into the hot
  // malloc/free paths (defined in allocator.cpp, the only file that calls them).
  [[gnu::always_inline]] void CountAllocation(bool is_small, int64_t size, int64_t requested);
  [[gnu::always_inline]] void UncountAllocation(Block& x, bool is_small);

  // Expandable segments (allocator_expandable.cpp).
  uint32_t FindExpandableBlock(Pool& pool, int64_t stream, int64_t s);
  uint32_t TryAllocateExpandableBlock(Pool& pool, int64_t stream, int64_t s);
  bool MapBlock(uint32_t b, int64_t size);
  /// A new block [ptr, ptr+size) linked right after (or before) `b`, copying its other fields.
  uint32_t SpliceNeighbour(uint32_t b, uint64_t ptr, int64_t size, bool after);
  void UnmapBlock(uint32_t b);

  AllocatorConfig config_;
  DeviceMemory* device_;
  std::vector<Block> blocks_;
  std::vector<uint32_t> free_slots_;
  Pool large_, small_;
  std::vector<ExpandableSegment> segments_;
  std::vector<uint32_t> pending_;  // blocks waiting for free_completed, in free order
  AllocatorStats stats_;
  OomInfo last_oom_;
  int64_t total_allocated_memory_ = 0;
  int64_t allowed_memory_maximum_ = kUnlimitedCapacity;
  std::vector<SegmentEvent>* log_ = nullptr;
  FreeIndex::Cursor found_;  // GetFreeBlock's block, between it and AllocFoundBlock
};

}  // namespace memsnap::sim
