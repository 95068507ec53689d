// Tables keyed by a block's address, for the passes over trace events (the timeline's, summary's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace memsnap::analysis {

// Addresses are multiples of 512 sharing their high bits; a full 64-bit mixer (murmur3's
// finalizer) spreads them over a table whatever absl build we link against.
constexpr uint64_t MixAddress(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}
struct AddrHash {
  size_t operator()(uint64_t x) const { return static_cast<size_t>(MixAddress(x)); }
};
/// MixAddress seeded per process (the address of a static differs between runs under ASLR), for
/// the open-addressing tables a crafted file must not line up into one long probe run.
inline size_t SeededAddressHash(uint64_t x) {
  static const char seed_anchor = 0;
  return static_cast<size_t>(MixAddress(x ^ reinterpret_cast<uintptr_t>(&seed_anchor)));
}

template <class V>
using AddrMap = absl::flat_hash_map<uint64_t, V, AddrHash>;

/// Address -> State for a pass over trace events: the one lookup done for most events. Linear
/// probing over slots at most half full, so a lookup is one hash and usually one compare (absl's
/// flat_hash_map took twice as long in the timeline's pass, and about 1.6x in summary's).
/// Nothing is ever erased (the timeline keeps an address's version counter for the whole trace).
/// The hash is seeded per process so that a crafted file cannot line its addresses up into one
/// long probe run.
template <class State>
class AddrTable {
 public:
  explicit AddrTable(size_t expected) {
    size_t cap = 64;
    while (cap < 2 * expected) cap *= 2;
    slots_.assign(cap, Slot{});
    mask_ = cap - 1;
  }
  /// The state of `addr`, inserted when new. Invalidates earlier references when it grows.
  [[gnu::always_inline]] State& operator[](uint64_t addr) {
    if (addr == kEmpty) [[unlikely]] {
      empty_key_used_ = true;
      return empty_key_state_;
    }
    for (size_t i = Hash(addr) & mask_;; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == addr) return s.state;
      if (s.key == kEmpty) {
        if (2 * (size_ + 1) > slots_.size()) [[unlikely]]
          return GrowAndInsert(addr);
        ++size_;
        s.key = addr;
        return s.state;
      }
    }
  }
  /// Calls fn(address, state) for every address inserted, in no particular order.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    for (const Slot& s : slots_) {
      if (s.key != kEmpty) fn(s.key, s.state);
    }
    if (empty_key_used_) fn(kEmpty, empty_key_state_);
  }
  const State* Find(uint64_t addr) const {
    if (addr == kEmpty) return &empty_key_state_;
    for (size_t i = Hash(addr) & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.key == addr) return &s.state;
      if (s.key == kEmpty) return nullptr;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key = kEmpty;
    State state;
  };
  static size_t Hash(uint64_t x) { return SeededAddressHash(x); }
  // Out of line: operator[] is always_inline, and calling itself would be recursive inlining
  // (an error at -O2 under some sanitizers).
  [[gnu::noinline]] State& GrowAndInsert(uint64_t addr) {
    Grow();
    return (*this)[addr];
  }
  void Grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.size() * 2, Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = Hash(s.key) & mask_;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
  State empty_key_state_;  // for the one address equal to kEmpty
  bool empty_key_used_ = false;
};

}  // namespace memsnap::analysis
