#pragma once

#include <string_view>

namespace memsnap {

/// "memsnap 0.1.0 (features: cuda)" — the optional parts this binary was built with.
std::string_view BuildInfo();
/// True when the CUDA replay backend was compiled in.
bool BuiltWithCuda();

}  // namespace memsnap
