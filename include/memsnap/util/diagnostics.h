// Non-fatal findings (a free of an unknown address, blocks that do not tile their segment, an
// unknown key...). Passes append here; commands print them after the pass; --strict makes them
// errors (docs/coding-guidelines.md §4).
#pragma once

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
};

}  // namespace memsnap
