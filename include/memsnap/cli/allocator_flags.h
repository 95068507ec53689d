// Flags shared by the commands that replay: the device's capacity (--device-memory), candidate
// allocator settings (--conf) and the start state (--start), each command with its own help text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/fit.h"

namespace memsnap::cli {

/// Raw flag values; DeviceMemory() validates the size.
struct AllocatorFlags {
  std::string device_memory;       // --device-memory SIZE, empty when not given
  std::vector<std::string> confs;  // --conf, repeatable
  std::string start = "recorded";  // --start recorded|cold (fit.h)
  /// --device-memory in bytes, nullopt when not given; InvalidArgument naming the flag when it is
  /// not a positive size.
  absl::StatusOr<std::optional<int64_t>> DeviceMemory() const;
};

/// Adds --device-memory SIZE with `help`.
void AddDeviceMemoryFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help);
/// Adds --start recorded|cold: where every replay of the answer starts.
void AddStartFlag(CLI::App& sub, AllocatorFlags& flags);
/// --start as a FitStart (AddStartFlag's check admits only the names ParseFitStart reads).
analysis::FitStart StartOf(const AllocatorFlags& flags);
/// Adds --conf (one PYTORCH_CUDA_ALLOC_CONF string a use, repeatable) with `help`.
void AddConfFlag(CLI::App& sub, AllocatorFlags& flags, const std::string& help);

}  // namespace memsnap::cli
