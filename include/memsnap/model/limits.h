// What a snapshot can hold: the bounds PyTorch puts on every size, address, time and count it
// writes (docs/reader.md, "Limits"). This is the one place that checks a value from the input
// against them: the schema's field setters (both readers) call it for trace entries and settings
// as they are decoded, before any pass or event observer sees them, and Normalize() calls it for
// segments and blocks. An out-of-range value is clamped or dropped, and each kind of value gives
// one warning naming the first offending value's key path (an RFC 6901 pointer into the file's
// structure, the same for a pickle and its JSON conversion):
//
//   /device_traces/0/7/size: 4611686018427387904 is not a trace entry size PyTorch can write
//   (0 to 1 TiB); clamped into that range (2 such values)
//
// --strict turns every warning into an error, so an impossible value is exit 2 with its path.
// With every input size at most 1 TiB, sums over a file's blocks and events stay far from int64
// overflow, and the analyses need no overflow checks of their own.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "memsnap/util/diagnostics.h"

namespace memsnap {

/// The largest byte count a size field may hold (1 TiB: no CUDA device has that much memory).
inline constexpr int64_t kMaxBytes = int64_t{1} << 40;
/// The largest address: user-space virtual addresses fit 47 bits (4-level page tables) or 56
/// bits (5-level); CUDA's unified addressing shares that space.
inline constexpr uint64_t kMaxAddress = (uint64_t{1} << 57) - 1;
/// Where an out-of-range segment address is moved: any segment of at most kMaxBytes ends below
/// kMaxAddress from there.
inline constexpr uint64_t kClampedSegmentAddress = (uint64_t{1} << 57) - (uint64_t{1} << 41);
/// The latest `time_us` (microseconds since the Unix epoch; about the year 146,000). Differences of
/// two times in range cannot overflow.
inline constexpr int64_t kMaxTimeUs = int64_t{1} << 62;
/// The largest `roundup_power2_divisions` value (PyTorch parses it as a C int power of two).
inline constexpr int64_t kMaxRoundupDivisions = int64_t{1} << 30;
/// The largest device ordinal accepted in a segment (c10::DeviceIndex is 8 bits; this is looser).
inline constexpr int64_t kMaxDeviceOrdinal = int64_t{1} << 20;

/// Every bounded field of the input; each gives at most one warning.
enum class Limited : uint8_t {
  kEventSize,
  kEventAddr,
  kEventDeviceFree,
  kEventTime,
  kAnnotationTime,
  kSegmentAddress,
  kSegmentTotalSize,
  kSegmentAllocatedSize,
  kSegmentActiveSize,
  kSegmentRequestedSize,
  kBlockAddress,
  kBlockSize,
  kBlockRequestedSize,
  kMaxSplitSize,
  kRoundupDivisions,
  kCount,
};
inline constexpr int kNumLimited = static_cast<int>(Limited::kCount);

/// A time the file did not give.
inline constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
/// A block `requested_size` the file did not give (readers leave it; Normalize() fills it in).
inline constexpr int64_t kNoRequestedSize = std::numeric_limits<int64_t>::min();

constexpr bool SizeInRange(int64_t v) {
  return static_cast<uint64_t>(v) <= static_cast<uint64_t>(kMaxBytes);  // negatives wrap above
}
constexpr bool AddressInRange(uint64_t a) { return a <= kMaxAddress; }
constexpr bool TimeInRange(int64_t t) {
  return static_cast<uint64_t>(t) <= static_cast<uint64_t>(kMaxTimeUs);
}
constexpr bool ValidDeviceOrdinal(int64_t d) { return d >= 0 && d <= kMaxDeviceOrdinal; }

// The fixes, one per domain: each checks a value as read, fixes it in place and returns true
// when it was out of range (the caller then notes it in a LimitReport under its kind).

/// A byte count: clamped into [0, kMaxBytes].
constexpr bool FixSize(int64_t& v) {
  if (SizeInRange(v)) return false;
  v = v < 0 ? 0 : kMaxBytes;
  return true;
}
/// An address: clamped to kMaxAddress.
constexpr bool FixAddress(uint64_t& a) {
  if (AddressInRange(a)) return false;
  a = kMaxAddress;
  return true;
}
/// A time: dropped (kNoTime) when outside [0, kMaxTimeUs]; kNoTime itself is "no time", in range.
constexpr bool FixTime(int64_t& t) {
  if (TimeInRange(t) || t == kNoTime) return false;
  t = kNoTime;
  return true;
}
/// A roundup_power2_divisions count: clamped into [0, kMaxRoundupDivisions].
constexpr bool FixDivisions(int64_t& d) {
  if (d >= 0 && d <= kMaxRoundupDivisions) return false;
  d = d < 0 ? 0 : kMaxRoundupDivisions;
  return true;
}
/// `max_split_size` (-1 = unlimited): a value above kMaxBytes splits no block, so it is
/// unlimited; other negatives are not a setting and become unlimited too.
constexpr bool FixMaxSplitSize(int64_t& v) {
  if (v == -1 || SizeInRange(v)) return false;
  v = -1;
  return true;
}

/// Out-of-range values seen while reading one file, and what was done with them. Each kind keeps
/// its count and the location of its first value: a key path, or (for a reader that learns paths
/// only at the end) a record number that ResolveRecords() turns into one.
class LimitReport {
 public:
  /// True once a value of `kind` was noted: the caller may then skip building its path.
  bool Seen(Limited kind) const { return notes_[Index(kind)].count > 0; }
  /// Records one out-of-range value (as read, before its fix); `path` is kept when it is the
  /// first of its kind.
  void Note(Limited kind, int64_t value, std::string_view path) {
    Add(kind, static_cast<uint64_t>(value), false, path);
  }
  void Note(Limited kind, uint64_t value, std::string_view path) { Add(kind, value, true, path); }
  /// Records one value of a record whose key path is not known yet (`record` is the reader's).
  void NoteRecord(Limited kind, int64_t value, uint32_t record) {
    if (Add(kind, static_cast<uint64_t>(value), false, {})) notes_[Index(kind)].record = record;
  }
  void NoteRecord(Limited kind, uint64_t value, uint32_t record) {
    if (Add(kind, value, true, {})) notes_[Index(kind)].record = record;
  }
  /// Replaces every pending record number by `path_of(kind, record)`.
  template <typename PathOf>
  void ResolveRecords(PathOf&& path_of) {
    for (int k = 0; k < kNumLimited; ++k) {
      Entry& n = notes_[k];
      if (n.count > 0 && n.record != kNoRecord) {
        n.path = path_of(static_cast<Limited>(k), n.record);
        n.record = kNoRecord;
      }
    }
  }
  /// Appends one warning per kind seen, in kind order.
  void AddWarnings(Diagnostics& diagnostics) const;
  bool empty() const;

 private:
  static constexpr uint32_t kNoRecord = UINT32_MAX;
  static constexpr int Index(Limited kind) { return static_cast<int>(kind); }
  struct Entry {
    uint64_t count = 0;
    std::string value;  // of the first
    std::string path;   // of the first
    uint32_t record = kNoRecord;
  };
  // True when this is the first value of its kind.
  bool Add(Limited kind, uint64_t bits, bool is_unsigned, std::string_view path);
  std::array<Entry, kNumLimited> notes_;
};

struct Snapshot;
/// Checks every segment and block size and address of `snap` (Normalize() calls it): sizes into
/// [0, 1 TiB], an active block's requested size into [1, size] (a stated negative or one above
/// the size is dropped: the size stands in), addresses below 2^57 (a block's is dropped and
/// recomputed from the segment layout, a segment's is moved to kClampedSegmentAddress). Adds one
/// warning per kind to snap.diagnostics.
void CheckSegmentsAndBlocks(Snapshot& snap);

}  // namespace memsnap
