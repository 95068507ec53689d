// The only list of subcommands: {name, one-line description, setup}. `memsnap --help` is generated
// from it.
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"summary", "Counts and totals per device, pool and stream", &SetupSummary},
    {"replay", "Replay the trace through the allocator simulator under other settings", &SetupReplay},
};
}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

}  // namespace memsnap::cli
