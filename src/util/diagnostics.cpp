#include "memsnap/util/diagnostics.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "memsnap/util/strings.h"

namespace memsnap {

absl::Status Diagnostics::AsError(std::string_view context) const {
  if (warnings.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(Sv(context), ": --strict: ", warnings.size(),
                                                 " warning(s): ", absl::StrJoin(warnings, "; ")));
}

}  // namespace memsnap
