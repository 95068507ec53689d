// Setup functions of every subcommand, one per <name>_command.cpp. The registry table that lists
// them is src/cli/commands.cpp.
#pragma once

#include "memsnap/cli/command.h"

namespace memsnap::cli {

RunFn SetupSummary(CLI::App& sub);
RunFn SetupTimeline(CLI::App& sub);
RunFn SetupTop(CLI::App& sub);
RunFn SetupBlocks(CLI::App& sub);
RunFn SetupDiff(CLI::App& sub);
RunFn SetupFrag(CLI::App& sub);
RunFn SetupCheck(CLI::App& sub);
RunFn SetupLeaks(CLI::App& sub);
RunFn SetupReplay(CLI::App& sub);
RunFn SetupReport(CLI::App& sub);
RunFn SetupExport(CLI::App& sub);
RunFn SetupConvert(CLI::App& sub);
RunFn SetupCompletion(CLI::App& sub);
RunFn SetupHelpMarkdown(CLI::App& sub);
RunFn SetupHelpMan(CLI::App& sub);

}  // namespace memsnap::cli
