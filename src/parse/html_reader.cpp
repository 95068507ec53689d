// PLACEHOLDER until the HTML reader lands (owned by the JSON/HTML/gzip work).
#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/strings.h"

namespace memsnap::parse {

absl::StatusOr<std::vector<std::string>> ExtractHtmlPayloads(std::string_view html,
                                                             std::string_view name) {
  return absl::UnimplementedError(absl::StrCat(Sv(name), ": HTML input is not supported yet"));
}

}  // namespace memsnap::parse
