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

void AddConfFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help) {
  sub.add_option("--conf", flags.confs, help)->allow_extra_args(false);
}

}  // namespace memsnap::cli
