// `memsnap blocks`: block lifetimes (live at a moment, or all) with filters, as rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/filter.h"
#include "memsnap/analysis/timeline.h"

namespace memsnap::analysis {

struct BlockQuery {
  bool all = false;                     // every lifetime instead of those live at `at`
  Moment at{Moment::Kind::kEnd, 0};     // used when !all
  int64_t min_size = 0;                 // requested bytes
  std::optional<int64_t> stream;        // only this stream
  std::string stack_regex;              // only lifetimes with a frame whose text matches
  FilterOptions filter;                 // for the frames shown
  size_t frames_shown = 3;
};

struct BlockRow {
  int32_t device = 0;
  BlockLifetime lifetime;
  int64_t alloc_time_us = kNoTime, free_time_us = kNoTime;
  std::vector<std::string> frames;  // innermost first, filtered, at most frames_shown
};

struct BlocksReport {
  std::vector<BlockRow> rows;  // live: requested desc, then device, address, version;
                               // all: device, then first event, then address, version
  int64_t total_bytes = 0;     // Σ requested over rows
};

/// Selects lifetimes from `timeline`. Errors: invalid regexes (naming the flag).
absl::StatusOr<BlocksReport> SelectBlocks(const Snapshot& snap, const Timeline& timeline,
                                          const BlockQuery& query);

}  // namespace memsnap::analysis
