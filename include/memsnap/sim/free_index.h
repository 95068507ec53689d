// The free blocks of one pool in upstream's BlockComparatorSize order (stream, size, address):
// what the caching allocator's best-fit search walks (docs/simulator.md, "The free-block index").
//
// Segregated by size: one set per stream (a trace has one to four), each an array of buckets
// indexed by a monotone function of the size, with a two-level bitmap of the non-empty buckets.
// Below 2 MiB a bucket is one exact size (sizes are multiples of 512: 4,096 buckets), so a
// best-fit search is the first block of the first non-empty bucket at or above the request's,
// found with two count-trailing-zeros, and its lowest address is the bucket's first entry; from
// 2 MiB up each power of two is split in 16 buckets. Inside a bucket, blocks stay in (size, ptr)
// order, so ties by address are kept exactly as upstream's set keeps them. A bucket's entries
// reuse their storage, so a replay in steady state allocates nothing. Semantics are those of the
// std::set this replaced (absl::btree_set of {stream, size, ptr}): an insert of a key already
// present does nothing, an erase of an absent key does nothing.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

namespace memsnap::sim {

class FreeIndex {
 public:
  struct Entry {
    int64_t size;
    uint64_t ptr;
    uint32_t ref;
  };

  /// The bucket of a size: exact (size / 512) below 2 MiB, then 16 per power of two; monotone
  /// non-decreasing in the size, which is all the order needs (a size that is not a multiple of
  /// 512 shares a bucket, ordered inside it).
  static uint32_t Bucket(int64_t size) {
    if (size < kExactLimit) return size <= 0 ? 0 : static_cast<uint32_t>(size >> 9);
    const auto u = static_cast<uint64_t>(size);
    const int e = 63 - std::countl_zero(u);  // >= 21
    const auto sub = static_cast<uint32_t>((u >> (e - 4)) & 15);
    return kExactBuckets + static_cast<uint32_t>(e - 21) * 16 + sub;
  }
  static constexpr uint32_t kBuckets = 4096 + 42 * 16;  // up to 2^63

 private:
  static constexpr int64_t kExactLimit = int64_t{1} << 21;
  static constexpr uint32_t kExactBuckets = 4096;
  static constexpr uint32_t kWords = (kBuckets + 63) / 64;
  static constexpr uint32_t kSummaryWords = (kWords + 63) / 64;
  static bool Less(int64_t as, uint64_t ap, int64_t bs, uint64_t bp) {
    return as < bs || (as == bs && ap < bp);
  }
  using Bin = std::vector<Entry>;
  // The free blocks of one stream.
  struct Set {
    uint64_t stream = 0;
    std::vector<Bin> bins = std::vector<Bin>(kBuckets);
    uint64_t bits[kWords] = {};            // bit b: bins[b] is not empty
    uint64_t summary[kSummaryWords] = {};  // bit w: bits[w] is not 0
    size_t size = 0;

    void Mark(uint32_t b) {
      bits[b >> 6] |= uint64_t{1} << (b & 63);
      summary[b >> 12] |= uint64_t{1} << ((b >> 6) & 63);
    }
    void Unmark(uint32_t b) {
      const uint32_t w = b >> 6;
      bits[w] &= ~(uint64_t{1} << (b & 63));
      if (bits[w] == 0) summary[w >> 6] &= ~(uint64_t{1} << (w & 63));
    }
    // The first non-empty bucket >= b; kBuckets if none.
    uint32_t NextBin(uint32_t b) const {
      uint32_t w = b >> 6;
      if (w >= kWords) return kBuckets;
      const uint64_t m = bits[w] & (~uint64_t{0} << (b & 63));
      if (m != 0) return (w << 6) + static_cast<uint32_t>(std::countr_zero(m));
      ++w;
      for (uint32_t sw = w >> 6; sw < kSummaryWords; ++sw) {
        uint64_t sm = summary[sw];
        if (sw == w >> 6) sm &= ~uint64_t{0} << (w & 63);
        if (sm != 0) {
          const uint32_t word = (sw << 6) + static_cast<uint32_t>(std::countr_zero(sm));
          return (word << 6) + static_cast<uint32_t>(std::countr_zero(bits[word]));
        }
      }
      return kBuckets;
    }
    // The last non-empty bucket < b; kBuckets if none.
    uint32_t PrevBin(uint32_t b) const {
      if (b == 0) return kBuckets;
      --b;  // the last bucket that may qualify
      uint32_t w = b >> 6;
      const uint64_t m = bits[w] & (~uint64_t{0} >> (63 - (b & 63)));
      if (m != 0) return (w << 6) + 63 - static_cast<uint32_t>(std::countl_zero(m));
      if (w == 0) return kBuckets;
      --w;  // the last word that may qualify
      for (uint32_t sw = (w >> 6) + 1; sw-- > 0;) {
        uint64_t sm = summary[sw];
        if (sw == w >> 6) sm &= ~uint64_t{0} >> (63 - (w & 63));
        if (sm != 0) {
          const uint32_t word = (sw << 6) + 63 - static_cast<uint32_t>(std::countl_zero(sm));
          return (word << 6) + 63 - static_cast<uint32_t>(std::countl_zero(bits[word]));
        }
      }
      return kBuckets;
    }
    // The first position of `bin` whose key is >= (s, p) (bin.size() if none).
    static uint32_t PosIn(const Bin& bin, int64_t s, uint64_t p) {
      uint32_t lo = 0;
      auto hi = static_cast<uint32_t>(bin.size());
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (Less(bin[mid].size, bin[mid].ptr, s, p)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }
    bool Insert(int64_t s, uint64_t p, uint32_t ref) {
      const uint32_t b = Bucket(s);
      Bin& bin = bins[b];
      const uint32_t i = PosIn(bin, s, p);
      if (i < bin.size() && bin[i].size == s && bin[i].ptr == p) return false;  // present
      if (bin.empty()) Mark(b);
      bin.insert(bin.begin() + i, Entry{s, p, ref});
      ++size;
      return true;
    }
    // Re-keys entry i of bucket b to (s, p), a key below its own: in place when it stays in the
    // bucket (the entries between move up one place), else erased and inserted.
    void ShrinkAt(uint32_t b, uint32_t i, int64_t s, uint64_t p, uint32_t ref) {
      if (Bucket(s) != b) {
        EraseAt(b, i);
        Insert(s, p, ref);
        return;
      }
      Bin& bin = bins[b];
      uint32_t lo = 0;
      uint32_t hi = i;
      while (lo < hi) {  // PosIn over [0, i)
        const uint32_t mid = (lo + hi) / 2;
        if (Less(bin[mid].size, bin[mid].ptr, s, p)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      if (lo < i && bin[lo].size == s && bin[lo].ptr == p) {  // the key is there already
        EraseAt(b, i);
        return;
      }
      std::memmove(bin.data() + lo + 1, bin.data() + lo, sizeof(Entry) * (i - lo));
      bin[lo] = {s, p, ref};
    }
    void EraseAt(uint32_t b, uint32_t i) {
      Bin& bin = bins[b];
      bin.erase(bin.begin() + i);
      --size;
      if (bin.empty()) Unmark(b);
    }
  };

 public:
  /// A position in one stream's blocks, in (size, ptr) order; valid until the index changes.
  class Cursor {
   public:
    bool valid() const { return set_ != nullptr && b_ < kBuckets; }
    const Entry& operator*() const { return set_->bins[b_][i_]; }
    const Entry* operator->() const { return &**this; }
    /// Moves to the next block of the stream; false (and invalid) past its last.
    bool Next() {
      if (++i_ == set_->bins[b_].size()) {
        b_ = set_->NextBin(b_ + 1);
        i_ = 0;
      }
      return valid();
    }
    /// Moves to the previous block of the stream; false (staying put) at its first.
    bool Prev() {
      if (set_ == nullptr) return false;
      if (b_ < kBuckets && i_ > 0) {
        --i_;
        return true;
      }
      const uint32_t b = set_->PrevBin(b_);
      if (b == kBuckets) return false;
      b_ = b;
      i_ = static_cast<uint32_t>(set_->bins[b].size()) - 1;
      return true;
    }

   private:
    friend class FreeIndex;
    Set* set_ = nullptr;
    uint32_t b_ = kBuckets;
    uint32_t i_ = 0;
  };

  /// The first block of `stream` not below (size, 0) in (size, ptr) order: the best fit for
  /// `size`. Invalid when there is none; Prev() then still reaches the stream's last block.
  Cursor LowerBound(uint64_t stream, int64_t size) {
    Cursor c;
    Set* s = Find(stream);
    if (s == nullptr) return c;
    c.set_ = s;
    const uint32_t b = Bucket(size);
    const Bin& bin = s->bins[b];
    // An exact bucket's blocks are all of one size: the best fit is its first, at the lowest
    // address. Else the first of the bucket not below the size, or the next bucket's first.
    if (!bin.empty() && bin.back().size >= size) {
      c.b_ = b;
      c.i_ = bin.front().size >= size ? 0 : Set::PosIn(bin, size, 0);
    } else {
      c.b_ = s->NextBin(b + 1);
    }
    return c;
  }
  /// Adds the block; false (nothing changed) when its key is present already.
  bool Insert(uint64_t stream, int64_t size, uint64_t ptr, uint32_t ref) {
    Set* s = Find(stream);
    if (s == nullptr) s = AddStream(stream);
    return s->Insert(size, ptr, ref);
  }
  /// Removes the block the cursor is on (the cursor and every other become invalid).
  void Erase(const Cursor& c) { c.set_->EraseAt(c.b_, c.i_); }
  /// Gives the block the cursor is on the smaller key (size, ptr) of the same stream, as Erase(c)
  /// then Insert would, in place when the key stays in its bucket (the remainder of a split block:
  /// the search found it, the front is taken, the rest goes back). Every cursor becomes invalid.
  void Shrink(const Cursor& c, int64_t size, uint64_t ptr, uint32_t ref) {
    c.set_->ShrinkAt(c.b_, c.i_, size, ptr, ref);
  }
  /// Removes the block with this key, if present (false: absent).
  bool Erase(uint64_t stream, int64_t size, uint64_t ptr) {
    Set* s = Find(stream);
    if (s == nullptr) return false;
    const uint32_t b = Bucket(size);
    const Bin& bin = s->bins[b];
    const uint32_t i = Set::PosIn(bin, size, ptr);
    if (i >= bin.size() || bin[i].size != size || bin[i].ptr != ptr) return false;
    s->EraseAt(b, i);
    return true;
  }
  /// Calls fn(stream, entry) for every block in (stream, size, ptr) order.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    for (const Set& s : sets_) {
      for (uint32_t b = s.NextBin(0); b < kBuckets; b = s.NextBin(b + 1)) {
        for (const Entry& e : s.bins[b]) fn(s.stream, e);
      }
    }
  }
  size_t size() const {
    size_t n = 0;
    for (const Set& s : sets_) n += s.size;
    return n;
  }

 private:
  Set* Find(uint64_t stream) {
    if (last_ < sets_.size() && sets_[last_].stream == stream) return &sets_[last_];
    for (size_t k = 0; k < sets_.size(); ++k) {
      if (sets_[k].stream == stream) {
        last_ = k;
        return &sets_[k];
      }
    }
    return nullptr;
  }
  Set* AddStream(uint64_t stream) {
    size_t k = 0;
    while (k < sets_.size() && sets_[k].stream < stream) ++k;
    sets_.insert(sets_.begin() + static_cast<std::ptrdiff_t>(k), Set{});
    sets_[k].stream = stream;
    last_ = k;
    return &sets_[k];
  }
  std::vector<Set> sets_;  // by stream value
  size_t last_ = 0;        // the set found last
};

}  // namespace memsnap::sim
