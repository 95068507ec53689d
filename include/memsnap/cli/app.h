#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "memsnap/cli/command.h"

namespace memsnap::cli {

/// The most threads -j/--threads accepts (the Python module's `threads=` too).
inline constexpr int kMaxThreads = 4096;

/// Builds the CLI from the command registry, parses `argv`, runs the chosen command and returns
/// the process exit code (0 ok, 1 failed check, 2 unusable input or usage error).
int RunMain(int argc, char** argv, std::ostream& out, std::ostream& err);

/// How a program that embeds memsnap (the Python module, python/) runs a command line.
struct EmbeddedRun {
  /// Inputs already in memory, by the names `args` gives them (Context::preloaded). An argument
  /// equal to a name is that snapshot, so names should be what no path can be (the Python
  /// module's start with a NUL byte): a path on the same command line is then always read.
  const PreloadedSnapshots* preloaded = nullptr;
  /// The files those snapshots were read from: inputs for the output checks (Context::inputs), so
  /// that an output never replaces one.
  std::vector<std::string> files;
};

/// RunMain for a program that embeds memsnap: `args` without the program's name; the host keeps
/// its signal handlers (no cleanup handlers are installed) and no progress line is drawn.
/// Safe to call from several threads at once.
int RunEmbedded(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                const EmbeddedRun& run);

}  // namespace memsnap::cli
