// Flags shared by top, blocks and diff: frame filters and grouping (--by, --depth, --hide...).
#pragma once

#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "memsnap/analysis/sites/group.h"

namespace memsnap::cli {

/// Raw flag values; Resolve() validates them into GroupOptions.
struct GroupFlags {
  std::string by;  // empty: site (stack when --depth is given)
  int depth = 0;
  bool no_filter = false;
  std::string hide, keep;
  bool python_only = false;
  bool ignore_lines = false;
  /// Validated options; errors name the flag.
  absl::StatusOr<analysis::GroupOptions> Resolve() const;
};

/// The names `--by` accepts (analysis::GroupByName of every grouping), in their order.
std::vector<std::string> GroupByChoices();

/// Adds --no-filter, --hide, --keep, --python-only (and --by/--depth when `grouping`).
void AddGroupFlags(CLI::App& sub, GroupFlags& flags, bool grouping);

/// Terminal width: $COLUMNS, else the tty's width, else 80.
int TerminalWidth();

}  // namespace memsnap::cli
