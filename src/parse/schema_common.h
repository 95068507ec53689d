// Small schema rules shared by the pickle decoder and the JSON reader, so both produce the same
// Snapshot for the same data (snapshot-format.md §2.3, §2.6, §3.3).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "absl/strings/numbers.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/util/strings.h"

namespace memsnap::parse {

/// Block state names; `active_awaiting_free` (documented upstream) is `active_pending_free`
/// (written by the C++). nullopt for anything else.
inline std::optional<BlockState> ParseBlockState(std::string_view s) {
  if (s == "active_allocated") return BlockState::kActiveAllocated;
  if (s == "active_pending_free" || s == "active_awaiting_free") {
    return BlockState::kActivePendingFree;
  }
  if (s == "inactive") return BlockState::kInactive;
  return std::nullopt;
}

/// Bucket index of a `roundup_power2_divisions` key (the interval's lower bound in MiB as a
/// decimal string: "1" -> 0, "2" -> 1, "4" -> 2, ... "32768" -> 15). nullopt when not a positive
/// integer; bounds past the last interval land in bucket 15.
inline std::optional<int> RoundupBucket(std::string_view key_mib) {
  int64_t mib = 0;
  if (!absl::SimpleAtoi(Sv(key_mib), &mib) || mib <= 0) return std::nullopt;
  int bucket = 0;
  while ((int64_t{1} << (bucket + 1)) <= mib && bucket < 15) ++bucket;
  return bucket;
}

/// `max_split_size` as written: -1 (and SIZE_MAX read back as 2^64-1) mean unlimited.
inline int64_t NormalizeMaxSplitSize(int64_t value, bool was_unsigned_64) {
  return value < 0 || was_unsigned_64 ? -1 : value;
}

/// Frame line numbers: 2^64-1 (unsigned) and negatives are "unknown line".
inline int64_t NormalizeLine(int64_t line, bool was_unsigned_or_huge) {
  return was_unsigned_or_huge || line < 0 ? kUnknownLine : line;
}

/// A `user_metadata` dict is rendered as text ("{k: v, ...}") up to about this many characters per
/// level, then "...": same rule in both readers, bounded work on hostile input.
inline constexpr size_t kMaxRenderedChars = 1024;

}  // namespace memsnap::parse
