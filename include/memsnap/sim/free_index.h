// The free blocks of one pool in upstream's BlockComparatorSize order (stream, size, address):
// what the caching allocator's best-fit search walks (docs/simulator.md, "The free-block index").
//
// Flat and cache friendly: one set per stream (a trace has one to four), each a sorted sequence
// of chunks of up to kChunk entries {size, ptr, ref} with the chunks' largest keys in a separate
// array, so a search is a binary search over a few keys, then one within a chunk, and an insert or
// erase moves at most one chunk's entries. Chunks come from a per-set arena reused after erases,
// so a replay in steady state allocates nothing. Semantics are those of the std::set it replaces
// (absl::btree_set of {stream, size, ptr}): an insert of a key already present does nothing, an
// erase of an absent key does nothing.
#pragma once

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

 private:
  static constexpr uint32_t kChunk = 32;
  struct Key {
    int64_t size;
    uint64_t ptr;
  };
  static bool Less(int64_t as, uint64_t ap, int64_t bs, uint64_t bp) {
    return as < bs || (as == bs && ap < bp);
  }
  struct Chunk {
    uint32_t n = 0;
    Entry e[kChunk];
  };
  // The free blocks of one stream.
  struct Set {
    uint64_t stream = 0;
    std::vector<uint32_t> order;  // chunk ids in key order
    std::vector<Key> last;        // the largest key of each chunk of `order`
    std::vector<Chunk> chunks;    // arena
    std::vector<uint32_t> spare;  // chunk ids not in `order`
    size_t size = 0;

    // Index into `order` of the first chunk whose largest key is >= (s, p); order.size() if none.
    uint32_t ChunkFor(int64_t s, uint64_t p) const {
      uint32_t lo = 0;
      uint32_t hi = static_cast<uint32_t>(last.size());
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (Less(last[mid].size, last[mid].ptr, s, p)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }
    // The first position of `c` whose key is >= (s, p) (c.n if none).
    static uint32_t PosIn(const Chunk& c, int64_t s, uint64_t p) {
      uint32_t lo = 0;
      uint32_t hi = c.n;
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (Less(c.e[mid].size, c.e[mid].ptr, s, p)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      return lo;
    }
    uint32_t NewChunk() {
      if (!spare.empty()) {
        const uint32_t id = spare.back();
        spare.pop_back();
        chunks[id].n = 0;
        return id;
      }
      chunks.emplace_back();
      return static_cast<uint32_t>(chunks.size() - 1);
    }
    void Insert(int64_t s, uint64_t p, uint32_t ref) {
      if (order.empty()) {
        order.push_back(NewChunk());
        last.push_back({s, p});
      }
      uint32_t ci = ChunkFor(s, p);
      if (ci == order.size()) --ci;  // larger than every key: append to the last chunk
      Chunk* c = &chunks[order[ci]];
      uint32_t i = PosIn(*c, s, p);
      if (i < c->n && c->e[i].size == s && c->e[i].ptr == p) return;  // already present
      if (c->n == kChunk) {
        // Split: the upper half moves to a new chunk right after this one.
        const uint32_t id = NewChunk();
        c = &chunks[order[ci]];  // NewChunk may have moved the arena
        Chunk& hi = chunks[id];
        constexpr uint32_t kHalf = kChunk / 2;
        std::memcpy(hi.e, c->e + kHalf, sizeof(Entry) * (kChunk - kHalf));
        hi.n = kChunk - kHalf;
        c->n = kHalf;
        const Key upper = last[ci];
        order.insert(order.begin() + ci + 1, id);
        last.insert(last.begin() + ci + 1, upper);
        last[ci] = {c->e[kHalf - 1].size, c->e[kHalf - 1].ptr};
        if (i > kHalf) {  // else it goes at or before the end of the lower half
          ++ci;
          c = &hi;
          i -= kHalf;
        }
      }
      std::memmove(c->e + i + 1, c->e + i, sizeof(Entry) * (c->n - i));
      c->e[i] = {s, p, ref};
      ++c->n;
      if (i + 1 == c->n) last[ci] = {s, p};
      ++size;
    }
    // Re-keys entry i of chunk ci to (s, p), a key below its own: where it belongs in the same
    // chunk, the entries between move up one place; a key that belongs in an earlier chunk (or
    // equals another) is erased and inserted.
    void ShrinkAt(uint32_t ci, uint32_t i, int64_t s, uint64_t p, uint32_t ref) {
      Chunk& c = chunks[order[ci]];
      uint32_t lo = 0;
      uint32_t hi = i;
      while (lo < hi) {  // PosIn over [0, i)
        const uint32_t mid = (lo + hi) / 2;
        if (Less(c.e[mid].size, c.e[mid].ptr, s, p)) {
          lo = mid + 1;
        } else {
          hi = mid;
        }
      }
      const bool below_chunk =
          lo == 0 && ci > 0 && !Less(last[ci - 1].size, last[ci - 1].ptr, s, p);
      const bool duplicate = lo < i && c.e[lo].size == s && c.e[lo].ptr == p;
      if (below_chunk || duplicate) {
        EraseAt(ci, i);
        Insert(s, p, ref);
        return;
      }
      std::memmove(c.e + lo + 1, c.e + lo, sizeof(Entry) * (i - lo));
      c.e[lo] = {s, p, ref};
      if (i + 1 == c.n) last[ci] = {c.e[i].size, c.e[i].ptr};
    }
    void EraseAt(uint32_t ci, uint32_t i) {
      Chunk& c = chunks[order[ci]];
      std::memmove(c.e + i, c.e + i + 1, sizeof(Entry) * (c.n - i - 1));
      --c.n;
      --size;
      if (c.n == 0) {
        spare.push_back(order[ci]);
        order.erase(order.begin() + ci);
        last.erase(last.begin() + ci);
      } else if (i == c.n) {
        last[ci] = {c.e[i - 1].size, c.e[i - 1].ptr};
      }
    }
  };

 public:
  /// A position in one stream's blocks, in (size, ptr) order; valid until the index changes.
  class Cursor {
   public:
    bool valid() const { return set_ != nullptr && ci_ < set_->order.size(); }
    const Entry& operator*() const { return set_->chunks[set_->order[ci_]].e[i_]; }
    const Entry* operator->() const { return &**this; }
    /// Moves to the next block of the stream; false (and invalid) past its last.
    bool Next() {
      if (++i_ == set_->chunks[set_->order[ci_]].n) {
        ++ci_;
        i_ = 0;
      }
      return valid();
    }
    /// Moves to the previous block of the stream; false (staying put) at its first.
    bool Prev() {
      if (set_ == nullptr) return false;
      if (i_ > 0) {
        --i_;
        return true;
      }
      if (ci_ == 0) return false;
      --ci_;
      i_ = set_->chunks[set_->order[ci_]].n - 1;
      return true;
    }

   private:
    friend class FreeIndex;
    Set* set_ = nullptr;
    uint32_t ci_ = 0;
    uint32_t i_ = 0;
  };

  /// The first block of `stream` not below (size, 0) in (size, ptr) order: the best fit for
  /// `size`. Invalid when there is none; Prev() then still reaches the stream's last block.
  Cursor LowerBound(uint64_t stream, int64_t size) {
    Cursor c;
    Set* s = Find(stream);
    if (s == nullptr) return c;
    c.set_ = s;
    c.ci_ = s->ChunkFor(size, 0);
    if (c.ci_ < s->order.size()) c.i_ = Set::PosIn(s->chunks[s->order[c.ci_]], size, 0);
    return c;
  }
  void Insert(uint64_t stream, int64_t size, uint64_t ptr, uint32_t ref) {
    Set* s = Find(stream);
    if (s == nullptr) s = AddStream(stream);
    s->Insert(size, ptr, ref);
  }
  /// Removes the block the cursor is on (the cursor and every other become invalid).
  void Erase(const Cursor& c) { c.set_->EraseAt(c.ci_, c.i_); }
  /// Gives the block the cursor is on the smaller key (size, ptr) of the same stream, as Erase(c)
  /// then Insert would, in place when the key stays in its chunk (the remainder of a split block:
  /// the search found it, the front is taken, the rest goes back). Every cursor becomes invalid.
  void Shrink(const Cursor& c, int64_t size, uint64_t ptr, uint32_t ref) {
    c.set_->ShrinkAt(c.ci_, c.i_, size, ptr, ref);
  }
  /// Removes the block with this key, if present.
  void Erase(uint64_t stream, int64_t size, uint64_t ptr) {
    Set* s = Find(stream);
    if (s == nullptr) return;
    const uint32_t ci = s->ChunkFor(size, ptr);
    if (ci == s->order.size()) return;
    const Chunk& c = s->chunks[s->order[ci]];
    const uint32_t i = Set::PosIn(c, size, ptr);
    if (i < c.n && c.e[i].size == size && c.e[i].ptr == ptr) s->EraseAt(ci, i);
  }
  /// Calls fn(stream, entry) for every block in (stream, size, ptr) order.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    for (const Set& s : sets_) {
      for (uint32_t id : s.order) {
        const Chunk& c = s.chunks[id];
        for (uint32_t i = 0; i < c.n; ++i) fn(s.stream, c.e[i]);
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
