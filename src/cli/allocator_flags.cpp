#include "memsnap/cli/allocator_flags.h"

#include "absl/strings/str_cat.h"
#include "memsnap/cli/common.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

absl::StatusOr<std::optional<int64_t>> AllocatorFlags::DeviceMemory() const {
  ASSIGN_OR_RETURN(std::optional<int64_t> bytes, DeviceSizeFlag("--device-memory", device_memory));
  if (bytes && *bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device-memory ", device_memory, ": expected a size such as 24GiB"));
  }
  return bytes;
}

void AddDeviceMemoryFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help) {
  sub.add_option("--device-memory", flags.device_memory, help);
}

void AddStartFlag(CLI::App& sub, AllocatorFlags& flags) {
  sub.add_option("--start", flags.start,
                 "Where every replay starts: recorded (default: the segments alive when the trace "
                 "began, rebuilt from the snapshot, when the trace does not explain them) or cold "
                 "(those blocks allocated first on an empty allocator); docs/figures.md")
      ->check(CLI::IsMember({"recorded", "cold", "warm"}));
}

analysis::FitStart StartOf(const AllocatorFlags& flags) {
  return analysis::ParseFitStart(flags.start).value_or(analysis::FitStart::kRecorded);
}

void AddConfFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help) {
  sub.add_option("--conf", flags.confs, help)->allow_extra_args(false);
}

}  // namespace memsnap::cli
