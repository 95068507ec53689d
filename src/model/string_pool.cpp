#include "memsnap/model/string_pool.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace memsnap {

StringPool::StringPool() { Intern(""); }

StrId StringPool::Intern(std::string_view text) {
  if (auto it = index_.find(text); it != index_.end()) return StrId(it->second);
  const char* stored;
  if (text.empty()) {
    stored = "";  // the empty string needs no chunk
  } else if (text.size() > kChunkSize / 4) {
    // Large strings get a chunk of their own so they do not waste the shared one.
    chunks_.push_back(std::make_unique_for_overwrite<char[]>(text.size() + 1));
    chunk_bytes_ += text.size() + 1;
    std::memcpy(chunks_.back().get(), text.data(), text.size());
    chunks_.back()[text.size()] = '\0';
    stored = chunks_.back().get();
  } else {
    if (small_chunk_ == nullptr || chunk_used_ + text.size() > chunk_size_) {
      // 4 KiB first, doubling up to kChunkSize: small inputs allocate little. Never smaller
      // than the string (up to kChunkSize / 4 here).
      chunk_size_ = std::min(
          kChunkSize, std::max({kFirstChunkSize, 2 * chunk_size_, std::bit_ceil(text.size())}));
      chunks_.push_back(std::make_unique_for_overwrite<char[]>(chunk_size_));
      chunk_bytes_ += chunk_size_;
      small_chunk_ = chunks_.back().get();
      chunk_used_ = 0;
    }
    std::memcpy(small_chunk_ + chunk_used_, text.data(), text.size());
    stored = small_chunk_ + chunk_used_;
    chunk_used_ += text.size();
  }
  std::string_view view(stored, text.size());
  uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(view);
  index_.emplace(view, id);
  return StrId(id);
}

StrId StringPool::Find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? StrId() : StrId(it->second);
}

size_t StringPool::MemoryUsage() const {
  return chunk_bytes_ + views_.capacity() * sizeof(std::string_view) +
         index_.capacity() * (sizeof(std::string_view) + sizeof(uint32_t) + 1);
}

}  // namespace memsnap
