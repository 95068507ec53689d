// libFuzzer target: the pickle decoder's fast paths against its generic path. The same bytes
// decoded both ways must give the same model, the same warnings and the same error
// (tests/unit/pickle_paths.h); any difference aborts with both results.
#include <cstdio>
#include <cstdlib>

#include "pickle_paths.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string diff = memsnap::testing::ComparePicklePaths(
      std::string_view(reinterpret_cast<const char*>(data), size));
  if (!diff.empty()) {
    std::fprintf(stderr, "fast and generic paths differ:\n%s\n", diff.c_str());
    std::abort();
  }
  return 0;
}
