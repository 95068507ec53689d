// Looking up the rows of a diff report in tests (diff_moved_test, diff_compiled_test).
#pragma once

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

}  // namespace memsnap::testing
