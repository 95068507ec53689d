// Typed 32-bit ids: mixing up index spaces is a compile error (docs/coding-guidelines.md §6).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>

namespace memsnap {

template <class Tag>
struct Id {
  static constexpr uint32_t kInvalidValue = std::numeric_limits<uint32_t>::max();
  uint32_t v = kInvalidValue;

  constexpr Id() = default;
  constexpr explicit Id(uint32_t value) : v(value) {}
  constexpr bool valid() const { return v != kInvalidValue; }
  constexpr static Id Invalid() { return Id(); }
  friend constexpr bool operator==(Id a, Id b) { return a.v == b.v; }
  friend constexpr auto operator<=>(Id a, Id b) { return a.v <=> b.v; }
  template <typename H>
  friend H AbslHashValue(H h, Id id) {
    return H::combine(std::move(h), id.v);
  }
};

using StrId = Id<struct StrTag>;
using FrameId = Id<struct FrameTag>;
using StackId = Id<struct StackTag>;
using SegmentId = Id<struct SegmentTag>;
using BlockId = Id<struct BlockTag>;

}  // namespace memsnap

template <class Tag>
struct std::hash<memsnap::Id<Tag>> {
  size_t operator()(memsnap::Id<Tag> id) const noexcept { return std::hash<uint32_t>()(id.v); }
};
