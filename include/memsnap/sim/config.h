// Caching-allocator settings: the PYTORCH_CUDA_ALLOC_CONF string users know, or the
// `allocator_settings` a snapshot recorded. See docs/allocator-model.md §3.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/sim/sizes.h"

namespace memsnap::sim {

/// `max_split_size` when no limit is set (upstream SIZE_MAX, recorded as -1).
inline constexpr int64_t kUnlimitedSize = std::numeric_limits<int64_t>::max();

/// The settings that change placement. Defaults are PyTorch's.
struct AllocatorConfig {
  int64_t max_split_size = kUnlimitedSize;  // bytes
  /// Tolerance for serving an oversize request from a larger oversize block (20 MiB before 2.6).
  int64_t max_non_split_rounding = kLargeBuffer;
  /// Divisions per bucket: index 0 = sizes < 2 MiB, i = [2^(20+i), 2^(21+i)); 0 = none.
  RoundupDivisions roundup_power2_divisions{};
  double garbage_collection_threshold = 0.0;  // 0 = off
  bool expandable_segments = false;
  /// set_per_process_memory_fraction / per_process_memory_fraction; nullopt = never set.
  std::optional<double> memory_fraction;
  /// kLargeBuffer: segment size for 1-10 MiB requests and the large expandable page.
  int64_t large_segment_size = kLargeBuffer;
  /// "native" or "cudaMallocAsync" (which the simulator does not model).
  std::string backend = "native";

  friend bool operator==(const AllocatorConfig&, const AllocatorConfig&) = default;
};

/// Parses a PYTORCH_CUDA_ALLOC_CONF string ("expandable_segments:True,max_split_size_mb:512").
/// Errors are InvalidArgument and name the offending key and value, e.g.
///   `max_split_size_mb: expected an integer >= 20, got "abc"`
///   `unknown allocator setting "foo"`.
/// Keys that do not affect placement (pinned_*, release_lock_on_cudamalloc...) are accepted.
absl::StatusOr<AllocatorConfig> ParseAllocatorConf(std::string_view conf);

/// Applies `conf` on top of `base` (later keys win), as repeated _set_allocator_settings calls do.
absl::StatusOr<AllocatorConfig> ApplyAllocatorConf(AllocatorConfig base, std::string_view conf);

/// The configuration a snapshot recorded (defaults when it recorded none).
AllocatorConfig ConfigFromSettings(const AllocatorSettings& settings);

/// Canonical PYTORCH_CUDA_ALLOC_CONF text of the non-default keys; "defaults" when none.
std::string FormatAllocatorConf(const AllocatorConfig& config);

}  // namespace memsnap::sim
