// Pieces shared by the files of the HTML report (not a public interface).
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/group.h"
#include "memsnap/analysis/timeline.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/report/html_report.h"
#include "nlohmann/json.hpp"

namespace memsnap::report::internal {

/// Stacks referenced by the page, each once: "frames" (texts, each once) and "stacks" (frame
/// indices, innermost first, after the frame filter). Add() returns the stack's index, -1 for no
/// stack.
class StackTableJson {
 public:
  StackTableJson(const Snapshot& snap, analysis::FrameFilter& filter)
      : snap_(snap), filter_(filter) {}
  int Add(StackId stack);
  /// The index of a frame text in "frames".
  int AddText(const std::string& text);
  /// Frame texts as indices into "frames".
  nlohmann::ordered_json Indices(const std::vector<std::string>& texts);
  nlohmann::ordered_json FramesJson() const;
  nlohmann::ordered_json StacksJson() const;

 private:
  const Snapshot& snap_;
  analysis::FrameFilter& filter_;
  absl::flat_hash_map<uint32_t, int> stack_index_;
  absl::flat_hash_map<std::string, int> text_index_;
  std::vector<std::string> frame_texts_;
  std::vector<std::vector<int>> stacks_;
};

/// Site rows: key, frames (indices into the stack table's frames, innermost first), bytes,
/// rounded, count, synthetic.
nlohmann::ordered_json SiteRowsJson(const std::vector<analysis::GroupRow>& rows,
                                    StackTableJson& stacks);
/// x range and min/max arrays of downsampled curves.
nlohmann::ordered_json CurveColumnsJson(const CurveColumns& cols);
/// Name, container and flavour, sizes, allocator settings of the file.
nlohmann::ordered_json FileJson(const Snapshot& snap);

/// The segment map and fragmentation section, or null when memsnap was built without it.
absl::StatusOr<nlohmann::ordered_json> SegmentMapJson(const Snapshot& snap,
                                                      const analysis::Timeline& timeline);
/// Replay curves for options.replay_confs, or null when none were asked for. Errors when asked
/// for without the replay analysis compiled in, or when a configuration does not parse.
absl::StatusOr<nlohmann::ordered_json> ReplayJson(const Snapshot& snap,
                                                  const analysis::Timeline& timeline,
                                                  const HtmlReportOptions& options);

/// The page's script (plain JavaScript, no libraries): reads the embedded data and draws it.
const char* PageScript();

}  // namespace memsnap::report::internal
