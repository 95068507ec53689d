// The "top growing sites" of a failed baseline check, from the diff engine (sites matched by the
// text of their Python frames).
#include "memsnap/analysis/compose/check.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::analysis {

absl::StatusOr<GrowingSites> TopGrowingSites(const Snapshot& baseline, const Snapshot& current,
                                             int n, bool at_peak, bool exact_lines,
                                             const CategoryNames& categories, GroupBy by) {
  DiffOptions options;
  options.group.categories = categories;
  options.group.by = by;
  options.pair_moved = !exact_lines;
  options.at = Moment{at_peak ? Moment::Kind::kPeak : Moment::Kind::kEnd, 0};
  options.group.filter.python_only = true;  // CI readers want their own code's lines
  ASSIGN_OR_RETURN(DiffReport diff, DiffSnapshots(baseline, current, options));
  GrowingSites out;
  out.kinds = KindBytes{diff.before_by_category, diff.after_by_category};
  // diff sorts by |delta| desc, then delta desc, then key: keep the growing ones in that order.
  for (SiteDelta& s : diff.sites) {
    if (static_cast<int>(out.sites.size()) >= n) break;
    if (s.delta_bytes() > 0) out.sites.push_back(std::move(s));
  }
  return out;
}

}  // namespace memsnap::analysis
