// Flags shared by oom and replay: the device's capacity (--device-memory) and candidate allocator
// settings (--conf), each command with its own help text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"

namespace memsnap::cli {

/// Raw flag values; DeviceMemory() validates the size.
struct AllocatorFlags {
  std::string device_memory;       // --device-memory SIZE, empty when not given
  std::vector<std::string> confs;  // --conf, repeatable
  /// --device-memory in bytes, nullopt when not given; InvalidArgument naming the flag when it is
  /// not a positive size.
  absl::StatusOr<std::optional<int64_t>> DeviceMemory() const;
};

/// Adds --device-memory SIZE with `help`.
void AddDeviceMemoryFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help);
/// Adds --conf (one PYTORCH_CUDA_ALLOC_CONF string a use, repeatable) with `help`.
void AddConfFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help);

}  // namespace memsnap::cli
