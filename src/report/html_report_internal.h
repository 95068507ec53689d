// Pieces shared by the files of the HTML report (not a public interface).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "memsnap/analysis/compose/report_analysis.h"
#include "memsnap/analysis/sites/group.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/model/snapshot.h"
#include "nlohmann/json.hpp"

namespace memsnap::report::internal {

using Json = nlohmann::ordered_json;

/// Stacks referenced by the page, each once: "frames" (texts, each once), "frame_kinds" (one
/// character per frame: what attribution makes of it, so the page can put the user's frames first:
/// docs/report.md) and "stacks" (frame indices, innermost first, after the frame filter). Add()
/// returns the stack's index, -1 for no stack.
class StackTableJson {
 public:
  StackTableJson(const Snapshot& snap, analysis::FrameFilter filter)
      : snap_(snap), filter_(std::move(filter)) {}
  int Add(StackId stack);
  /// The index of a frame text in "frames".
  int AddText(const std::string& text);
  /// Frame texts as indices into "frames".
  Json Indices(const std::vector<std::string>& texts);
  Json FramesJson() const;
  Json FrameKindsJson() const;
  Json StacksJson() const;

 private:
  const Snapshot& snap_;
  analysis::FrameFilter filter_;
  absl::flat_hash_map<uint32_t, int> stack_index_;
  absl::flat_hash_map<std::string, int> text_index_;
  std::vector<std::string> frame_texts_;
  std::string frame_kinds_;  // parallel to frame_texts_ (FrameKind)
  std::vector<std::vector<int>> stacks_;
};

/// The band sites' labels (analysis::ReportAnalysis::band_sites) and the category names the
/// bands' category codes index.
Json BandSitesJson(const analysis::ReportAnalysis& a);
Json CategoryNamesJson(const analysis::CategoryNames& names);
/// The names of the category rules, by CategoryRule (bands carry an index into it).
Json CategoryRulesJson();

/// A site table: moment, totals and rows (key, frames as indices into the stack table's frames,
/// innermost first, bytes, rounded, count, synthetic). Rows are objects so that fields can be
/// added (site labels, categories) without touching the page's reader of the others.
Json SiteTableJson(const analysis::SiteTable& table, const analysis::CategoryNames& names,
                   StackTableJson& stacks);
/// Name, container and flavour, sizes, allocator settings of the file.
Json FileJson(const Snapshot& snap);
/// One device's timeline: the level-of-detail curves and the bands (with their lifetimes' size,
/// times, address and stack).
Json TimelineJson(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                  const analysis::DeviceReportAnalysis& d, const analysis::CategoryNames& names,
                  StackTableJson& stacks);
/// One device's allocator states: the distinct segments (packed) and the moments.
Json StatesJson(const Snapshot& snap, const analysis::DeviceTimeline& dt,
                const analysis::DeviceReportAnalysis& d, StackTableJson& stacks);

/// The page's script and styles, and the chart library with its licence (generated from web/ by
/// cmake/web_assets.cmake).
std::string_view PageScript();
std::string_view PageStyle();
std::string_view ChartLibraryScript();
std::string_view ChartLibraryStyle();
std::string_view ChartLibraryLicense();
std::string_view ChartLibraryVersion();

}  // namespace memsnap::report::internal
