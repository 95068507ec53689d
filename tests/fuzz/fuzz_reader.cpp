// libFuzzer target: the whole reader (container detection, gzip, HTML, pickle, JSON, Normalize).
#include "fuzz_common.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto input = memsnap::io::FromMemory(std::string_view(reinterpret_cast<const char*>(data), size),
                                       std::string(memsnap::fuzz::kName));
  auto snaps = memsnap::parse::ParseSnapshots(*input);
  if (!snaps.ok()) memsnap::fuzz::CheckError(snaps.status());
  return 0;
}
