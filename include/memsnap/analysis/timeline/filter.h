// Frame filters shared by `top`, `diff`, `blocks` and the flame-graph exports: the upstream noise
// filter (docs/snapshot-format.md §5), --hide/--keep regexes and --python-only. Decisions are
// cached per FrameId, so a regex runs once per distinct frame, never per event.
#pragma once

#include <cstdint>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

struct FilterOptions {
  bool noise_filter = true;  // drop the upstream viewers' noise frames (§5)
  std::string hide;  // ECMAScript regex; frames whose "filename:line:name" matches are dropped
  std::string keep;  // when non-empty, only frames whose text matches are kept
  bool python_only = false;  // keep only frames whose filename ends in ".py"
};

/// True when upstream's viewers hide this frame (plain substring tests, as upstream does).
bool IsNoiseFrame(std::string_view name, std::string_view filename);

/// Applies FilterOptions to the frames of one snapshot. Not thread-safe (caches).
class FrameFilter {
 public:
  /// Compiles the regexes; an invalid one gives InvalidArgument naming the flag.
  static absl::StatusOr<FrameFilter> Create(const Snapshot& snapshot, const FilterOptions& options);

  /// Whether frame `id` survives the filter (cached per frame).
  bool Keep(FrameId id);
  /// Whether frame `id` survives --hide and --keep alone (true when neither is set): what decides
  /// which Python frames may name a site (attribution.h). Not cached: callers cache per stack.
  bool KeepByRegex(FrameId id) const;
  bool has_regexes() const { return hide_.has_value() || keep_.has_value(); }
  /// The surviving frames of `stack`, innermost first. Empty for invalid or empty stacks.
  const std::vector<FrameId>& Filtered(StackId stack);

 private:
  FrameFilter(const Snapshot& snapshot, const FilterOptions& options)
      : snap_(&snapshot), options_(options) {}
  const Snapshot* snap_;
  FilterOptions options_;
  std::optional<std::regex> hide_, keep_;
  std::vector<uint8_t> frame_state_;  // 0 unknown, 1 keep, 2 drop
  std::vector<int32_t> stack_slot_;   // StackId -> index into filtered_, -1 unknown
  std::vector<std::vector<FrameId>> filtered_;
  std::vector<FrameId> empty_;
};

}  // namespace memsnap::analysis
