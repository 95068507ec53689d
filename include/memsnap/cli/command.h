// The subcommand interface. Each <name>_command.cpp declares its flags, binds them to its own
// options struct and returns the function that runs it (docs/coding-guidelines.md §3). The only
// list of commands is in src/cli/commands.cpp.
#pragma once

#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "memsnap/analysis/attribution/attribution.h"

namespace memsnap {
struct Snapshot;
}

namespace memsnap::cli {

/// Snapshots already in memory, by the name a command line gives as their input.
using PreloadedSnapshots = std::map<std::string, std::shared_ptr<const Snapshot>>;

/// Process exit codes (the brief: 2 for unusable input, 1 for a failed check).
enum class ExitCode : int { kOk = 0, kCheckFailed = 1, kBadInput = 2 };

/// What every command gets at run time.
struct Context {
  std::ostream* out = nullptr;  // reports
  std::ostream* err = nullptr;  // diagnostics, progress
  bool strict = false;          // --strict: diagnostics become errors
  bool quiet = false;           // --quiet: no warnings or progress
  bool timings = false;         // --timings: print phase timers to stderr
  bool progress = true;         // LoadSnapshot may draw a progress line (off in parallel loads
                                // and where the command draws its own)
  int threads = 0;              // --threads: how many threads may read and analyze; 0 = all cores
  bool force = false;           // --force: an output may overwrite a file that is a snapshot
  std::vector<std::string> inputs;  // the files the command line names as inputs (InputPaths)
  uint64_t max_memory = 0;          // --max-memory in bytes; 0 = none (main sets the default)
  /// Inputs already read (the Python module's loaded snapshots, python/): an input named here is
  /// taken from memory by the load helpers (common.h) instead of being read. Not owned.
  const PreloadedSnapshots* preloaded = nullptr;
  /// The files the preloaded snapshots were read from (EmbeddedRun::files): inputs too.
  std::vector<std::string> preloaded_files;
  /// --category/--categories: the user's categories, handed to every session this command reads
  /// (query::ReadSettings::categories). Per invocation, never process-wide: two embedded runs
  /// with different categories (the Python module's threads) do not share them.
  analysis::CategoryNames categories;
};

using RunFn = std::function<absl::StatusOr<ExitCode>(Context&)>;

struct CommandSpec {
  const char* name;
  const char* description;  // one line, shown in `memsnap --help`
  /// Adds the command's flags to `sub` and returns the function that runs it.
  RunFn (*setup)(CLI::App& sub);
};

/// All subcommands, in the order `memsnap --help` lists them.
std::span<const CommandSpec> AllCommands();

}  // namespace memsnap::cli
