// Looking up the rows of a diff report in tests (diff_moved_test, diff_compiled_test).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "memsnap/analysis/sites/diff.h"

namespace memsnap::testing {

/// The row labelled `label`, among the rows shown and the rows under the min-delta; nullptr when
/// none is.
inline const analysis::SiteDelta* FindSiteDelta(const analysis::DiffReport& rep,
                                                std::string_view label) {
  for (const std::vector<analysis::SiteDelta>* list : {&rep.sites, &rep.other_sites}) {
    for (const analysis::SiteDelta& s : *list) {
      if (s.site == label) return &s;
    }
  }
  return nullptr;
}

/// The labels of the rows shown, then (with `with_other`) of those under the min-delta.
inline std::vector<std::string> SiteLabels(const analysis::DiffReport& rep, bool with_other) {
  std::vector<std::string> out;
  for (const analysis::SiteDelta& s : rep.sites) out.push_back(s.site);
  if (with_other) {
    for (const analysis::SiteDelta& s : rep.other_sites) out.push_back(s.site);
  }
  return out;
}

}  // namespace memsnap::testing
