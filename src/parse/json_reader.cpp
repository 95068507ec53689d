// PLACEHOLDER until the JSON reader lands (owned by the JSON/HTML/gzip work).
#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"

namespace memsnap::parse {

absl::StatusOr<Snapshot> ParseJson(io::InputSource& input) {
  return absl::UnimplementedError(absl::StrCat(input.name(), ": JSON input is not supported yet"));
}

}  // namespace memsnap::parse
