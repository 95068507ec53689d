#include "memsnap/util/diagnostics.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/util/strings.h"

namespace memsnap {

absl::Status Diagnostics::AsError(std::string_view context) const {
  if (warnings.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(Sv(context), ": --strict: ", warnings.size(),
                                                 " warning(s): ", absl::StrJoin(warnings, "; ")));
}

std::vector<std::string> Diagnostics::Shown() const {
  std::vector<std::string> out(warnings.begin(),
                               warnings.begin() + std::min(warnings.size(), kMaxShown));
  if (warnings.size() > kMaxShown) {
    out.push_back(absl::StrCat(warnings.size() - kMaxShown, " more warning(s) not shown"));
  }
  return out;
}

}  // namespace memsnap
