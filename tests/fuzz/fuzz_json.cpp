// libFuzzer target: the JSON reader on arbitrary bytes (never padded: exercises the copy path).
#include "fuzz_common.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = memsnap::io::FromMemory(std::string_view(reinterpret_cast<const char*>(data), size),
                                       std::string(memsnap::fuzz::kName));
  memsnap::fuzz::Check(memsnap::parse::ParseJson(*input));
  return 0;
}
