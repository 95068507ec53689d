// The only list of subcommands: {name, one-line description, setup}. `memsnap --help` is generated
// from it.
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

namespace {
constexpr CommandSpec kCommands[] = {
    {"summary", "Counts and totals per device, pool and stream; many files: per-rank table",
     &SetupSummary},
    {"timeline", "Live and reserved bytes over time, with the peak", &SetupTimeline},
    {"top", "Largest groups of live memory at the peak or any moment, by stack/function/...",
     &SetupTop},
    {"blocks", "Live blocks (or every lifetime) with size, lifetime and stack", &SetupBlocks},
    {"diff", "Compare two snapshots: live memory by site, totals, peaks, settings", &SetupDiff},
    {"frag", "Fragmentation: free space, what fits, segment map, at the end or the peak",
     &SetupFrag},
    {"check", "CI gate: thresholds and/or a baseline; exit 1 on regression", &SetupCheck},
    {"leaks", "Sites whose memory grows step after step: across snapshots or steps of a trace",
     &SetupLeaks},
    {"replay", "Replay the trace through the allocator simulator under other settings",
     &SetupReplay},
    {"report", "Self-contained HTML report: timeline, peak, sites, segments; diff of two files",
     &SetupReport},
    {"export", "Export to Perfetto/Chrome trace JSON, folded stacks or a CSV of lifetimes",
     &SetupExport},
    {"convert", "Rewrite a snapshot as JSON or pickle (protocol 2/4/5), optionally a slice",
     &SetupConvert},
    {"completion", "Print a shell completion script (bash)", &SetupCompletion},
    {"help-markdown", "Print the command-line reference as markdown (docs/cli.md)",
     &SetupHelpMarkdown},
    {"help-man", "Print the man page (memsnap.1)", &SetupHelpMan},
};
}  // namespace

std::span<const CommandSpec> AllCommands() { return kCommands; }

}  // namespace memsnap::cli
