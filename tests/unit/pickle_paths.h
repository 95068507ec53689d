// The differential check of the pickle decoder's fast paths (pickle_fast_path.h): the same bytes
// decoded with and without them must give the same model, the same warnings and the same error.
// Used by tests/unit/pickle_fast_path_test.cpp and the fuzz_pickle_paths target.
#pragma once

#include <string>
#include <string_view>

#include "absl/strings/str_join.h"
#include "memsnap/io/input.h"
#include "model_text.h"
#include "parse/pickle_decoder.h"

namespace memsnap::testing {

/// The model text (ModelText) and warnings of `bytes` decoded as a pickle, or its error.
inline std::string DecodedPickleText(std::string_view bytes, bool fast_paths) {
  auto input = io::FromMemory(bytes, "in.pickle");
  absl::StatusOr<Snapshot> snap = parse::ParsePickleWith(*input, nullptr, {fast_paths});
  if (!snap.ok()) return "error: " + std::string(snap.status().message());
  Normalize(*snap);
  return ModelText(*snap) + "warnings: " + absl::StrJoin(snap->diagnostics.warnings, "\n") +
         "\nstrings: " + std::to_string(snap->strings.size()) +
         " frames: " + std::to_string(snap->frames.size());
}

/// "" when both paths agree on `bytes`, else both results.
inline std::string ComparePicklePaths(std::string_view bytes) {
  std::string fast = DecodedPickleText(bytes, true);
  std::string generic = DecodedPickleText(bytes, false);
  if (fast == generic) return "";
  return "fast path:\n" + fast + "\ngeneric path:\n" + generic;
}

}  // namespace memsnap::testing
