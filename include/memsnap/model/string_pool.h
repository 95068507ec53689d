// Interned strings with 32-bit ids.
//
// Layout: bytes are appended to fixed-size chunks that never move, so a string_view handed out
// stays valid for the pool's lifetime; `views_[id]` points into a chunk; `index_` maps text -> id.
//
// clang-format off
//   chunks_:  [ "name\0filename\0..." ][ ... ]      (4 KiB, doubling to kChunkSize; larger strings get their own)
//   views_:   StrId -> string_view into a chunk
// clang-format on
//
// StrId 0 is always the empty string. A new pool allocates nothing but its index: a snapshot of a
// few hundred bytes (most fuzz inputs, the unit tests' fixtures) must not pay for a 64 KiB chunk,
// so the first chunk is small, and chunks are never zero-filled.
#pragma once

#include <cassert>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "memsnap/model/ids.h"

namespace memsnap {

class StringPool {
 public:
  StringPool();
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  /// Returns the id of `text`, copying it into the pool on first sight.
  StrId Intern(std::string_view text);
  /// Returns the id of `text` if it was interned, else an invalid id. Never copies.
  StrId Find(std::string_view text) const;
  /// The text of `id`; "" for the invalid id (no string, a legal value in the model). Any other
  /// id must come from this pool: one past its end asserts in debug builds and reads "" in
  /// release builds (never out of bounds).
  std::string_view Get(StrId id) const {
    if (id.v < views_.size()) [[likely]] {
      return views_[id.v];
    }
    assert(!id.valid() && "StrId out of range of its StringPool");
    return {};
  }
  size_t size() const { return views_.size(); }
  /// Bytes held by the pool (for --timings and the benchmarks).
  size_t MemoryUsage() const;

  static constexpr StrId kEmpty = StrId(0);

 private:
  static constexpr size_t kFirstChunkSize = 1 << 12;
  static constexpr size_t kChunkSize = 1 << 16;
  std::vector<std::unique_ptr<char[]>> chunks_;
  char* small_chunk_ = nullptr;  // the chunk small strings are appended to
  size_t chunk_size_ = 0;        // its size
  size_t chunk_used_ = 0;
  size_t chunk_bytes_ = 0;  // all chunks' sizes
  std::vector<std::string_view> views_;
  absl::flat_hash_map<std::string_view, uint32_t> index_;
};

}  // namespace memsnap
