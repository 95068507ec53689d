// libFuzzer target: the whole reader (container detection, gzip, HTML, pickle, JSON, Normalize),
// over the two kinds of input a file reaches it as. Borrowed memory (io::FromMemory, the way a
// mapped file arrives: no spare bytes after the end) and an owned buffer (io::FromString, the way
// gzip's inflated bytes, HTML payloads and standard input arrive: spare capacity the JSON reader
// may parse in place, docs/reader.md). Both must give the same outcome: the same error, or the
// same model (tests/unit/model_text.h), so a reader that depends on where its bytes live (the
// padding past the end) is found.
#include <cstdlib>
#include <string>

#include "fuzz_common.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"

namespace {

std::string Outcome(const absl::StatusOr<std::vector<memsnap::Snapshot>>& snaps) {
  if (!snaps.ok()) return std::string("error: ") + std::string(snaps.status().message());
  std::string text;
  for (const memsnap::Snapshot& s : *snaps) text += memsnap::testing::ModelText(s);
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto borrowed = memsnap::io::FromMemory(bytes, std::string(memsnap::fuzz::kName));
  auto snaps = memsnap::parse::ParseSnapshots(*borrowed);
  if (!snaps.ok()) memsnap::fuzz::CheckError(snaps.status());
  auto owned = memsnap::io::FromString(std::string(bytes), std::string(memsnap::fuzz::kName));
  auto again = memsnap::parse::ParseSnapshots(*owned);
  if (Outcome(snaps) != Outcome(again)) std::abort();  // the bytes' home changed the answer
  return 0;
}
