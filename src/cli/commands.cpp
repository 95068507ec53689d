// The only list of subcommands: {name, one-line description, setup}. `memsnap --help` is generated
// from it.
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"summary", "Counts and totals per device, pool and stream", &SetupSummary},
    {"timeline", "Live and reserved bytes over time, with the peak", &SetupTimeline},
    {"top", "Largest groups of live memory at the peak or any moment, by stack/function/...", &SetupTop},
};
}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

}  // namespace memsnap::cli
