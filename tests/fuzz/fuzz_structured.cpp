// libFuzzer target, structure-aware (issue 20): its mutator decodes the input as a snapshot,
// changes fields of the model (sizes, addresses, times, actions, states, frames, counts:
// tests/unit/snapshot_mutator.h) and writes it back with the project's own pickle writer, so
// fuzzing explores what a snapshot means, not only its bytes; inputs that do not decode are
// mutated as bytes. Each input then goes through the reader (plain and --strict), Normalize, the
// timeline with its curve, and the fast-path/generic-path comparison of the pickle decoder.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fuzz_common.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/io/input.h"
#include "memsnap/parse/reader.h"
#include "pickle_paths.h"
#include "snapshot_mutator.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace {
constexpr size_t kCropEvents = 256;   // entries per device trace in a cut-down snapshot
constexpr size_t kCropSegments = 16;  // segments in it
}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size,
                                          unsigned int seed) {
  memsnap::testing::SnapshotMutator mutator(seed);
  // One mutation in eight stays at the byte level: it reaches what the writer never writes.
  if (mutator.Below(8) == 0) return LLVMFuzzerMutate(data, size, max_size);
  auto input = memsnap::io::FromMemory(std::string_view(reinterpret_cast<const char*>(data), size),
                                       "mutant");
  auto snaps = memsnap::parse::ParseSnapshots(*input);
  if (!snaps.ok() || snaps->empty()) return LLVMFuzzerMutate(data, size, max_size);
  memsnap::Snapshot& snap = (*snaps)[0];
  // Big inputs (whole real-size snapshots) are mostly cut down to a window of their records
  // before the mutation: executing a 200 KB snapshot costs ~100 times a 2 KB one, and a small
  // window of real records reaches the same code. One in eight stays whole, so what only whole
  // files have (long traces, many segments) is still mutated.
  if ((snap.events.size() > kCropEvents || snap.segments.size() > kCropSegments) &&
      mutator.Below(8) != 0) {
    mutator.Crop(snap, static_cast<uint32_t>(1 + mutator.Below(kCropEvents)),
                 1 + mutator.Below(kCropSegments));
  }
  mutator.Mutate(snap);
  const std::string bytes = mutator.Encode(snap);
  if (bytes.empty() || bytes.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto input = memsnap::io::FromMemory(bytes, std::string(memsnap::fuzz::kName));
  auto snaps = memsnap::parse::ParseSnapshots(*input);
  if (!snaps.ok()) {
    memsnap::fuzz::CheckError(snaps.status());
  } else {
    for (memsnap::Snapshot& snap : *snaps) {
      // --strict is this read's diagnostics as an error (parse::ParseSnapshots): it must name
      // the file, without a second read.
      if (absl::Status strict = snap.diagnostics.AsError(snap.source.path); !strict.ok()) {
        memsnap::fuzz::CheckError(strict);
      }
      auto timeline = memsnap::analysis::ReconstructTimeline(snap);
      if (!timeline.ok()) std::abort();  // the timeline takes whatever the reader accepts
      for (const memsnap::analysis::DeviceTimeline& d : timeline->devices) {
        if (!d.FindLive(memsnap::analysis::TimelinePoint::End(d.num_events))) std::abort();
      }
    }
  }
  if (size > 0 && data[0] == 0x80) {
    const std::string diff = memsnap::testing::ComparePicklePaths(bytes);
    if (!diff.empty()) {
      std::fprintf(stderr, "fast and generic paths differ:\n%s\n", diff.c_str());
      std::abort();
    }
  }
  return 0;
}
