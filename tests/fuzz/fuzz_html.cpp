// libFuzzer target: the HTML/base64 unwrapper on arbitrary bytes.
#include "fuzz_common.h"
#include "memsnap/parse/reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto payloads = memsnap::parse::ExtractHtmlPayloads(
      std::string_view(reinterpret_cast<const char*>(data), size), memsnap::fuzz::kName);
  if (!payloads.ok()) memsnap::fuzz::CheckError(payloads.status());
  return 0;
}
