#include "memsnap/util/build_info.h"

namespace memsnap {

bool BuiltWithCuda() {
#ifdef MEMSNAP_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string_view BuildInfo() {
#ifdef MEMSNAP_HAVE_CUDA
  return "memsnap " MEMSNAP_VERSION " (features: cuda)";
#else
  return "memsnap " MEMSNAP_VERSION " (features: none; built without CUDA)";
#endif
}

}  // namespace memsnap
