// The caching allocator's size constants and PyTorch's round_size
// (docs/allocator-model.md §4, §5): the block size the allocator carves for a request.
// This is the one implementation: the simulator, the replay's warm start, the frag pass and the
// timeline all call it. It is constexpr and header-only (no Abseil) so that analysis passes can
// use it without the simulator, and the timeline's per-event call stays as cheap as the plain
// 512-byte rounding it replaced.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <limits>

namespace memsnap::sim {

inline constexpr int64_t kMiB = int64_t{1} << 20;
/// The smallest block and the granule of every block size (upstream kMinBlockSize).
inline constexpr int64_t kMinBlockSize = 512;
/// Rounded sizes up to this go to the small pool (kSmallSize).
inline constexpr int64_t kSmallSize = kMiB;
/// The segment size of the small pool (kSmallBuffer).
inline constexpr int64_t kSmallBuffer = 2 * kMiB;
/// The default segment size for 1-10 MiB requests and the large expandable page (kLargeBuffer);
/// also the default max_non_split_rounding.
inline constexpr int64_t kLargeBuffer = 20 * kMiB;
/// Requests from this size get a segment of their own rounded to kRoundLarge (kMinLargeAlloc).
inline constexpr int64_t kMinLargeAlloc = 10 * kMiB;
inline constexpr int64_t kRoundLarge = 2 * kMiB;

/// roundup_power2_divisions per size bucket: index 0 = sizes < 2 MiB, i = [2^(20+i), 2^(21+i))
/// (the last bucket takes everything above); 0 or 1 = no divisions. The same array as
/// AllocatorConfig::roundup_power2_divisions and AllocatorSettings::roundup_power2_divisions.
using RoundupDivisions = std::array<int64_t, 16>;

/// No divisions anywhere: PyTorch's default, plain 512-byte rounding.
inline constexpr RoundupDivisions kNoRoundupDivisions{};

/// The largest value RoundSize returns: the largest multiple of 512 an int64 holds (2^63 - 512).
/// The reader bounds every size to 1 TiB (model/limits.h), so only a caller that builds sizes of
/// its own can get here; it gets a saturated size, never an overflow.
inline constexpr int64_t kMaxRoundedSize =
    std::numeric_limits<int64_t>::max() & ~(kMinBlockSize - 1);

/// round_size(n) as upstream's code behaves: 512 for n < 512 (0 and negatives included); with
/// d = divisions[bucket of n] > 1 and n > 512·d, the next of d equal steps between the powers of
/// two around n (powers of two stay); else the next multiple of 512. Upstream accepts only powers
/// of two for d; another d is treated as its highest power of two, as upstream's shift would.
/// Monotone in n; saturates at kMaxRoundedSize (upstream's size_t would wrap instead).
/// Examples: 1 -> 512, 513 -> 1024; d = 4: 1200 -> 1536, 300 MiB -> 320 MiB.
/// Always inlined: with constant divisions (the timeline's) it folds to a few instructions, and
/// the timeline pass and the simulator call it for every allocation.
[[gnu::always_inline]] constexpr int64_t RoundSize(int64_t n, const RoundupDivisions& divisions) {
  if (n < kMinBlockSize) return kMinBlockSize;
  if (n >= kMaxRoundedSize) return kMaxRoundedSize;
  const auto un = static_cast<uint64_t>(n);
  const int lg = static_cast<int>(std::bit_width(un)) - 1;
  const int64_t d = divisions[static_cast<size_t>(std::clamp(lg - 20, 0, 15))];
  // n > 512·d, written so that a huge d cannot overflow the product.
  if (d > 1 && d <= (n - 1) / kMinBlockSize) {
    if (std::has_single_bit(un)) return n;
    // upstream roundup_power2_next_division: floor >> log2(d), then round up to that step.
    const int64_t floor = int64_t{1} << lg;
    const int64_t step = floor >> (std::bit_width(static_cast<uint64_t>(d)) - 1);
    if (step == 0) return floor > kMaxRoundedSize / 2 ? kMaxRoundedSize : floor << 1;
    const int64_t down = n & ~(step - 1);
    if (down == n) return n;
    return down > kMaxRoundedSize - step ? kMaxRoundedSize : down + step;
  }
  return (n + kMinBlockSize - 1) / kMinBlockSize *
         kMinBlockSize;  // n < kMaxRoundedSize: no overflow
}

/// `v` rounded up to a multiple of `to` (> 0), saturating at the largest such multiple.
constexpr int64_t RoundUpSaturated(int64_t v, int64_t to) {
  const int64_t top = std::numeric_limits<int64_t>::max() / to * to;
  if (v > top - (to - 1)) return top;
  return v <= 0 ? v / to * to : (v + to - 1) / to * to;
}

}  // namespace memsnap::sim
