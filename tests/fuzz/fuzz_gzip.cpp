// libFuzzer target: gzip inflation with a small output cap (a bomb must stop at the cap).
#include "fuzz_common.h"
#include "memsnap/io/input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kCap = 16 << 20;
  auto out = memsnap::io::Gunzip(std::string_view(reinterpret_cast<const char*>(data), size),
                                 memsnap::fuzz::kName, kCap);
  if (!out.ok()) {
    memsnap::fuzz::CheckError(out.status());
  } else if (out->size() > kCap) {
    std::abort();
  }
  return 0;
}
