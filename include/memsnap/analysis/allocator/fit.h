// The one answer to "does it fit?": for a trace, a setting and a device, the smallest device
// memory on which the whole run completes, every request served (the requests that failed in the
// recording included), found by replay from one start state. `frag`'s fix line, `oom`'s remedies
// and answer, `check --fits`, the page and Python all read this figure (docs/figures.md, "Fits on,
// needs, over"; docs/simulator.md, "The search for the smallest memory that fits").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "memsnap/sim/config.h"

namespace memsnap::analysis {

/// Where every replay of an answer starts (docs/figures.md, "The start state").
enum class FitStart : uint8_t {
  /// The recorded state: the segments alive when the trace began, rebuilt from the snapshot with
  /// their blocks (warm), whenever the trace does not explain them; a trace that explains its
  /// state, or one the rebuild cannot hold (expandable segments), starts cold.
  kRecorded,
  /// Cold: the blocks alive before the trace allocated first, in address order, on an empty
  /// allocator (what a fresh process would do).
  kCold,
};

/// "recorded" or "cold", as the `--start` flag spells them.
std::string_view FitStartName(FitStart start);
/// Parses `--start`: "recorded" (or "warm", its older name) and "cold"; nullopt otherwise.
std::optional<FitStart> ParseFitStart(std::string_view text);

/// The search's unit of device memory: every segment's size and every expandable mapping is a
/// multiple of 2 MiB, so a capacity fits exactly when its 2 MiB-aligned floor does; with a
/// per_process_memory_fraction the limit is a fraction of the capacity and the unit is 1 MiB.
/// A smallest fit F is exact to one unit: F fits, F - unit fails (and so does F - 1 MiB).
int64_t FitUnit(const sim::AllocatorConfig& config);

/// A setting counts as needing less memory than another only when it needs at least this share
/// less (the candidates' searches are exact to 0.25% of their answer, not to a unit).
inline constexpr double kFitMinGain = 0.01;

/// Index into `fits_on` (the recorded settings first; 0 = none found) of the setting that fits on
/// the least memory: the recorded settings (0) unless a candidate needs kFitMinGain less than
/// they do (or they fit on none), the first on ties; -1 when none fits.
int SmallestFitIndex(std::span<const int64_t> fits_on);

}  // namespace memsnap::analysis
