#include "memsnap/cli/filter_flags.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace memsnap::cli {

absl::StatusOr<analysis::GroupOptions> GroupFlags::Resolve() const {
  analysis::GroupOptions o;
  // --depth keeps the innermost frames of whole stacks: alone, it asks for stack rows.
  auto by_or = analysis::ParseGroupBy(by.empty() ? (depth > 0 ? "stack" : "site") : by);
  if (!by_or.ok()) return by_or.status();
  o.by = *by_or;
  if (depth < 0)
    return absl::InvalidArgumentError(absl::StrCat("--depth ", depth, ": must be >= 0"));
  o.depth = depth;
  o.ignore_lines = ignore_lines;
  o.filter.noise_filter = !no_filter;
  o.filter.hide = hide;
  o.filter.keep = keep;
  o.filter.python_only = python_only;
  return o;
}

std::vector<std::string> GroupByChoices() {
  // The choices come from analysis::GroupByName (every value until its "?"), so completion
  // offers them and a new grouping needs no change here.
  std::vector<std::string> choices;
  for (int i = 0; i < 256; ++i) {
    std::string_view name = analysis::GroupByName(static_cast<analysis::GroupBy>(i));
    if (name == "?") break;
    choices.emplace_back(name);
  }
  return choices;
}

void AddGroupFlags(CLI::App& sub, GroupFlags& flags, bool grouping) {
  if (grouping) {
    const std::vector<std::string> choices = GroupByChoices();
    sub.add_option("--by", flags.by,
                   "Group by " + absl::StrJoin(choices, " | ") + " (site: the default)")
        ->capture_default_str()
        ->check(CLI::IsMember(choices));
    sub.add_option("--depth", flags.depth,
                   "Stack rows: keep the N innermost frames of each stack (0 = all); implies "
                   "--by stack. Module rows: fold the tree below level N");
  }
  sub.add_flag("--no-filter", flags.no_filter,
               "Keep the noise frames the upstream viewers hide (CPython internals, dispatch...)");
  sub.add_option("--hide", flags.hide, "Drop frames whose 'file:line:function' matches REGEX");
  sub.add_option("--keep", flags.keep, "Keep only frames whose 'file:line:function' matches REGEX");
  sub.add_flag("--python-only", flags.python_only, "Keep only frames from .py files");
}

int TerminalWidth() {
  if (const char* c = std::getenv("COLUMNS")) {
    int w = 0;
    if (absl::SimpleAtoi(c, &w) && w > 20) return w;
  }
  winsize ws{};
  if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20) return ws.ws_col;
  return 80;
}

}  // namespace memsnap::cli
