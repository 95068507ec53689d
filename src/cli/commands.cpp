// The only list of subcommands: {name, one-line description, setup}. `memsnap --help` is generated
// from it.
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"summary", "Counts and totals per device, pool and stream", &SetupSummary},
    {"timeline", "Live and reserved bytes over time, with the peak", &SetupTimeline},
    {"top", "Largest groups of live memory at the peak or any moment, by stack/function/...", &SetupTop},
    {"blocks", "Live blocks (or every lifetime) with size, lifetime and stack", &SetupBlocks},
    {"diff", "Compare two snapshots: live memory by site, totals, peaks, settings", &SetupDiff},
    {"replay", "Replay the trace through the allocator simulator under other settings", &SetupReplay},
    {"frag", "Fragmentation: free space, what fits, segment map, at the end or the peak", &SetupFrag},
    {"check", "CI gate: thresholds and/or a baseline; exit 1 on regression", &SetupCheck},
    {"convert", "Rewrite a snapshot as JSON or pickle (protocol 2/4/5), optionally a slice of the trace", &SetupConvert},
    {"leaks", "Sites whose memory grows step after step: across snapshots or steps of a trace", &SetupLeaks},
};
}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

}  // namespace memsnap::cli
