// Debian's Abseil is built with its own absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), so
// absl::StrCat does not take a std::string_view. Wrap such arguments with Sv():
//   absl::StrCat(path, ": ", Sv(name))
// absl::StrFormat("%s", ...) takes std::string_view directly. absl::Status::message() returns an
// absl::string_view: use std::string(status.message()) or ToStd(status.message()).
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace memsnap {

inline absl::string_view Sv(std::string_view s) { return absl::string_view(s.data(), s.size()); }
inline std::string_view ToStd(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace memsnap
