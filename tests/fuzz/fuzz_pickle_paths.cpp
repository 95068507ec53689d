// libFuzzer target: the pickle decoder's fast paths against its generic path, and its parallel
// decoding (pickle_parallel.cpp) against the sequential one. The same bytes decoded each way must
// give the same model, the same warnings and the same error (tests/unit/pickle_paths.h); any
// difference aborts with both results. The parallel decoding is forced on with chunks of one
// FRAME and a thread count taken from the input's size, so that small inputs are cut too.
#include <cstdio>
#include <cstdlib>

#include "pickle_paths.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::string diff = memsnap::testing::ComparePicklePaths(bytes);
  if (!diff.empty()) {
    std::fprintf(stderr, "fast and generic paths differ:\n%s\n", diff.c_str());
    std::abort();
  }
  diff = memsnap::testing::CompareParallelDecoding(bytes, 2 + size % 3, 1);
  if (!diff.empty()) {
    std::fprintf(stderr, "parallel and sequential decoding differ:\n%s\n", diff.c_str());
    std::abort();
  }
  return 0;
}
