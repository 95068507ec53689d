// The name of an allocation as its owner would say it: a site label per stack and a category per
// lifetime. This is the one place the attribution model plugs in: until it lands the label is the
// innermost Python frame (else the innermost frame upstream's viewers do not hide) and every
// category is "unknown". Callers go through SiteNamer only, so switching is a change here.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "memsnap/model/snapshot.h"

namespace memsnap::analysis {

/// The category of memory whose owner is not known (the only one until attribution lands).
inline constexpr std::string_view kUnknownCategory = "unknown";

/// Labels stacks of one snapshot, caching per StackId. Not thread-safe.
class SiteNamer {
 public:
  explicit SiteNamer(const Snapshot& snapshot);
  /// "filename:line:function" of the stack's site (an installed package's path from its import
  /// root); "[no stack]" when it has no frames. Every site memsnap oom, check --fits and summary's
  /// OOM lines print comes from here.
  /// `before_trace`: the block was allocated before the trace began, so a stack without frames
  /// reads "[allocated before the trace]" (the usual case: recording began after the model was
  /// loaded), not "[no stack]".
  const std::string& Label(StackId stack, bool before_trace = false);
  /// The category of a lifetime allocated with `stack` at device-local event `alloc_event`
  /// (kNoEvent-like 0xffffffff: before the trace). Always kUnknownCategory for now.
  std::string_view Category(StackId stack, uint32_t alloc_event) const;

 private:
  const Snapshot* snap_;
  std::vector<int32_t> slot_;       // StackId -> index into labels_, -1 unknown
  std::deque<std::string> labels_;  // a deque: references stay valid as it grows
};

/// A frame label with an installed package's path cut to its import path
/// (".../site-packages/torch/nn/functional.py:2546:layer_norm" -> "torch/nn/functional.py:...").
std::string ShortenLibraryPath(std::string_view label);

/// What a holder of memory in a category could do about it, as one short phrase
/// ("activation checkpointing or a smaller batch"); empty for categories with no usual lever.
std::string_view CategoryLever(std::string_view category);

}  // namespace memsnap::analysis
