#pragma once

#include <iosfwd>

namespace memsnap::cli {

/// Builds the CLI from the command registry, parses `argv`, runs the chosen command and returns
/// the process exit code (0 ok, 1 failed check, 2 unusable input or usage error).
int RunMain(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace memsnap::cli
