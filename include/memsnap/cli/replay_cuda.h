// The `--backend cuda` branch of `memsnap replay` (src/cli/replay_command.cpp calls it).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/allocator/replay_cuda.h"
#include "memsnap/cli/command.h"

namespace memsnap::cli {

struct CudaReplayCliOptions {
  std::vector<std::string> files;
  analysis::CudaReplayOptions replay;
  bool json = false;
  bool verify = false;  // rejected: --verify compares the simulator with the trace
  bool csv = false;     // rejected: no reserved curve on the GPU
};

/// The configurations for one loaded snapshot (replay_command.cpp's BuildConfigs).
using ConfigBuilder =
    std::function<absl::StatusOr<std::vector<analysis::ReplayConfig>>(const Snapshot&)>;

/// Loads each file, replays it on the GPU under every configuration and prints text or JSON
/// (an array when several files). Errors (exit 2): no driver, no device, built without CUDA.
absl::StatusOr<ExitCode> RunCudaReplayCommand(const CudaReplayCliOptions& options,
                                              const ConfigBuilder& build_configs, Context& ctx);

}  // namespace memsnap::cli
