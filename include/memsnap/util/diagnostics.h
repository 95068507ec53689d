// Non-fatal findings (a free of an unknown address, blocks that do not tile their segment, an
// unknown key...). Passes append here; commands print them after the pass; --strict makes them
// errors (docs/coding-guidelines.md §4).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace memsnap {

struct Diagnostics {
  std::vector<std::string> warnings;

  void Warn(std::string message) { warnings.push_back(std::move(message)); }
  bool empty() const { return warnings.empty(); }
  /// OK when there are no warnings; else InvalidArgument listing them (used by --strict).
  absl::Status AsError(std::string_view context) const;
  /// The warnings as they are shown, on stderr and in `summary --json`'s `warnings` alike: the
  /// first kMaxShown, then "N more warning(s) not shown" when there are more.
  static constexpr size_t kMaxShown = 10;
  std::vector<std::string> Shown() const;
};

}  // namespace memsnap
