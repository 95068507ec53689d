#include "memsnap/cli/allocator_flags.h"

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"

namespace memsnap::cli {

absl::StatusOr<std::optional<int64_t>> AllocatorFlags::DeviceMemory() const {
  if (device_memory.empty()) return std::nullopt;
  absl::StatusOr<int64_t> bytes = ParseSize(device_memory);
  if (!bytes.ok() || *bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--device-memory \"", device_memory, "\": expected a size such as 24GiB"));
  }
  return *bytes;
}

void AddDeviceMemoryFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help) {
  sub.add_option("--device-memory", flags.device_memory, help);
}

void AddConfFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help) {
  sub.add_option("--conf", flags.confs, help)->allow_extra_args(false);
}

}  // namespace memsnap::cli
