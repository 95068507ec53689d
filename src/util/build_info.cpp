#include "memsnap/util/build_info.h"

#include <string>

// Both generated in the build tree by cmake/build_info.cmake.
#include "memsnap_build_config.h"
#include "memsnap_git_describe.h"

namespace memsnap {

namespace {

constexpr std::string_view kGit =
    sizeof(MEMSNAP_GIT_DESCRIBE) > 1 ? " (git " MEMSNAP_GIT_DESCRIBE ")" : "";

}  // namespace

std::string_view Version() { return MEMSNAP_VERSION; }

bool BuiltWithCuda() { return MEMSNAP_BUILD_CUDA; }

std::string_view BuildInfo() {
  static const std::string text = [] {
    std::string s = "memsnap " MEMSNAP_VERSION;
    s += kGit;
    s += MEMSNAP_BUILD_CUDA
             ? "\nfeatures: cuda (replay --backend cuda; the driver is loaded at run time)"
             : "\nfeatures: none (built without CUDA: replay --backend cuda is unavailable)";
    s += "\nbuild: " MEMSNAP_BUILD_TYPE ", " MEMSNAP_BUILD_COMPILER
         ", sanitizers: " MEMSNAP_BUILD_SANITIZERS;
    return s;
  }();
  return text;
}

}  // namespace memsnap
