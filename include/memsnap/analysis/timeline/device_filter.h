// The one type of a device filter (--device), shared by every analysis and query option struct.
#pragma once

#include <cstdint>
#include <optional>

namespace memsnap::analysis {

/// Which device a command or an analysis looks at (--device): one device, or nullopt for its
/// default, which each option says (every device, every device with a trace, the first device with
/// trace events, the busiest). No -1 sentinel (tests/vocabulary checks the option headers).
using DeviceFilter = std::optional<int32_t>;

}  // namespace memsnap::analysis
