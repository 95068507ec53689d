// Typed ids, 32-bit unless a table is known to stay small (StreamId): mixing up index spaces is a
// compile error (docs/coding-guidelines.md §6).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>

namespace memsnap {

template <class Tag, class Rep = uint32_t>
struct Id {
  static constexpr Rep kInvalidValue = std::numeric_limits<Rep>::max();
  Rep v = kInvalidValue;

  constexpr Id() = default;
  constexpr explicit Id(Rep value) : v(value) {}
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
/// 16 bits: it sits in every TraceEvent, and a trace has a handful of streams (StreamTable).
using StreamId = Id<struct StreamTag, uint16_t>;

}  // namespace memsnap

template <class Tag, class Rep>
struct std::hash<memsnap::Id<Tag, Rep>> {
  size_t operator()(memsnap::Id<Tag, Rep> id) const noexcept { return std::hash<Rep>()(id.v); }
};
