// The only list of subcommands: {name, one-line description, setup}. `memsnap --help` is generated
// from it.
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"summary", "Counts and totals per device, pool and stream", &SetupSummary},
    {"convert", "Rewrite a snapshot as JSON or pickle (protocol 2/4/5), optionally a slice of the trace", &SetupConvert},
};
}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

}  // namespace memsnap::cli
