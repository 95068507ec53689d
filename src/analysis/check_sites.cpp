// The "top growing sites" of a failed baseline check: live memory at the end grouped by stack on
// both sides, matched by key (Python frame text).
// TODO(frag): switch to DiffSnapshots (diff.h) once the diff engine lands on main.
#include <algorithm>
#include <map>

#include "memsnap/analysis/check.h"
#include "memsnap/analysis/group.h"
#include "memsnap/analysis/timeline.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::analysis {

namespace {
absl::StatusOr<std::vector<GroupRow>> LiveSites(const Snapshot& snap, bool at_peak) {
  ASSIGN_OR_RETURN(Timeline timeline, ReconstructTimeline(snap));
  Moment moment{at_peak ? Moment::Kind::kPeak : Moment::Kind::kEnd, 0};
  GroupOptions options;
  options.filter.python_only = true;  // CI readers want their own code's lines
  ASSIGN_OR_RETURN(GroupReport groups, GroupLive(snap, timeline, moment, options));
  return std::move(groups.rows);
}
}  // namespace

absl::StatusOr<std::vector<SiteDelta>> TopGrowingSites(const Snapshot& baseline,
                                                       const Snapshot& current, int n,
                                                       bool at_peak) {
  ASSIGN_OR_RETURN(std::vector<GroupRow> before, LiveSites(baseline, at_peak));
  ASSIGN_OR_RETURN(std::vector<GroupRow> after, LiveSites(current, at_peak));
  std::map<std::string, SiteDelta> by_key;
  for (const GroupRow& r : before) {
    SiteDelta& s = by_key[r.key];
    s.key = r.key;
    s.frames = r.frames;
    s.before_bytes += r.bytes;
    s.before_count += r.count;
    s.presence = Presence::kOnlyBefore;
  }
  for (const GroupRow& r : after) {
    auto [it, inserted] = by_key.try_emplace(r.key);
    SiteDelta& s = it->second;
    s.key = r.key;
    if (inserted) s.frames = r.frames;
    s.after_bytes += r.bytes;
    s.after_count += r.count;
    s.presence = inserted ? Presence::kOnlyAfter : Presence::kBoth;
  }
  std::vector<SiteDelta> out;
  for (auto& [key, s] : by_key) {
    if (s.delta_bytes() > 0) out.push_back(std::move(s));
  }
  std::sort(out.begin(), out.end(), [](const SiteDelta& a, const SiteDelta& b) {
    if (a.delta_bytes() != b.delta_bytes()) return a.delta_bytes() > b.delta_bytes();
    return a.key < b.key;
  });
  if (static_cast<int>(out.size()) > n) out.resize(static_cast<size_t>(n));
  return out;
}

}  // namespace memsnap::analysis
