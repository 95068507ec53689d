#pragma once

#include <string_view>

namespace memsnap {

/// What `memsnap --version` prints: the version and the optional parts of this build, e.g.
///   memsnap 0.1.0 (git 7429fbc)      (git describe --tags --always --dirty, when built from git)
///   features: cuda (replay --backend cuda; the driver is loaded at run time)
///   build: Release, GNU 12.2.0, sanitizers: none
/// Without the CUDA backend the second line reads "features: none (built without CUDA ...)".
std::string_view BuildInfo();
/// "0.1.0": the release version alone (the man page's footer).
std::string_view Version();
/// True when the CUDA replay backend was compiled in.
bool BuiltWithCuda();

}  // namespace memsnap
