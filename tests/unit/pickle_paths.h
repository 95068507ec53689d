// The differential check of the pickle decoder's fast paths (pickle_fast_path.h): the same bytes
// decoded with and without them must give the same model, the same warnings and the same error.
// Used by tests/unit/pickle_fast_path_test.cpp and the fuzz_pickle_paths target.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_join.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "model_text.h"
#include "parse/pickle_decoder.h"

namespace memsnap::testing {

/// The pickles a file holds: itself, its gzip content, or the payloads of an HTML page.
inline std::vector<std::string> PicklesIn(std::string bytes) {
  if (io::IsGzip(bytes)) {
    absl::StatusOr<std::string> inflated = io::Gunzip(bytes, "in");
    if (!inflated.ok()) return {};
    bytes = std::move(*inflated);
  }
  if (!bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80) return {bytes};
  absl::StatusOr<std::vector<std::string>> payloads = parse::ExtractHtmlPayloads(bytes, "in");
  return payloads.ok() ? *payloads : std::vector<std::string>{};
}

/// The model text (ModelText) and warnings of `bytes` decoded as a pickle, or its error.
inline std::string DecodedPickleText(std::string_view bytes, const parse::PickleOptions& options) {
  auto input = io::FromMemory(bytes, "in.pickle");
  absl::StatusOr<Snapshot> snap = parse::ParsePickleWith(*input, nullptr, options);
  if (!snap.ok()) return "error: " + std::string(snap.status().message());
  Normalize(*snap);
  return ModelText(*snap) + "warnings: " + absl::StrJoin(snap->diagnostics.warnings, "\n") +
         "\nstrings: " + std::to_string(snap->strings.size()) +
         " frames: " + std::to_string(snap->frames.size()) +
         " streams: " + absl::StrJoin(snap->streams.values(), ",");
}

inline std::string DecodedPickleText(std::string_view bytes, bool fast_paths) {
  parse::PickleOptions options;
  options.fast_paths = fast_paths;
  return DecodedPickleText(bytes, options);
}

/// "" when the parallel decoding (pickle_parallel.cpp) of `bytes` on `threads` threads, forced on
/// whatever the size, with chunks of `chunk_bytes` (1: one a FRAME), gives what the sequential
/// decoding gives; else both results. `stats`, when given, is told what the parallel one did;
/// `wait_for_workers` leaves every chunk to the workers (PickleOptions).
inline std::string CompareParallelDecoding(std::string_view bytes, size_t threads,
                                           size_t chunk_bytes,
                                           parse::ParallelStats* stats = nullptr,
                                           bool wait_for_workers = false) {
  std::string sequential = DecodedPickleText(bytes, true);
  parse::PickleOptions options;
  options.threads = threads;
  options.parallel_min_bytes = 0;
  options.parallel_chunk_bytes = chunk_bytes;
  options.stats = stats;
  options.parallel_wait_for_workers = wait_for_workers;
  std::string parallel = DecodedPickleText(bytes, options);
  if (parallel == sequential) return "";
  return "parallel (" + std::to_string(threads) + " threads, chunks of " +
         std::to_string(chunk_bytes) + " bytes):\n" + parallel + "\nsequential:\n" + sequential;
}

/// "" when both paths agree on `bytes`, else both results.
inline std::string ComparePicklePaths(std::string_view bytes) {
  std::string fast = DecodedPickleText(bytes, true);
  std::string generic = DecodedPickleText(bytes, false);
  if (fast == generic) return "";
  return "fast path:\n" + fast + "\ngeneric path:\n" + generic;
}

}  // namespace memsnap::testing
