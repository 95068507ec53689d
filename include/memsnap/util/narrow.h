// Checked narrowing of counts and indices that came from the input (docs/coding-guidelines.md
// §5, §6): the model holds record indices in 32 bits, and a file large enough to hold more records
// must be refused with an error naming the file and where, never wrapped around.
#pragma once

#include <optional>
#include <utility>

namespace memsnap {

/// `value` as a `To` when it fits (std::in_range), else nullopt; the caller turns nullopt into an
/// error that names the file and the offset or key path.
template <class To, class From>
constexpr std::optional<To> CheckedCast(From value) {
  if (!std::in_range<To>(value)) return std::nullopt;
  return static_cast<To>(value);
}

}  // namespace memsnap
