// `memsnap blocks`: block lifetimes (live at a moment, or all) with filters, as rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/timeline/filter.h"
#include "memsnap/analysis/timeline/timeline.h"

namespace memsnap::analysis {

struct BlockQuery {
  bool all = false;                  // every lifetime instead of those live at `at`
  Moment at{Moment::Kind::kEnd, 0};  // used when !all
  int64_t min_size = 0;              // requested bytes
  std::optional<int64_t> stream;     // only this stream
  std::string stack_regex;           // only lifetimes with a frame whose text matches
  FilterOptions filter;              // for the frames shown
  size_t frames_shown = 3;           // the label and up to this many - 1 context lines
  CategoryNames categories;          // the session's (GroupOptions::categories)
};

struct BlockRow {
  int32_t device = 0;
  BlockLifetime lifetime;
  int64_t alloc_time_us = kNoTime, free_time_us = kNoTime;
  /// The site's label (distinct among the report's sites; PreWindowRow for pre-window lifetimes,
  /// whose stack is the free's) and the lifetime's category.
  std::string site;
  std::string head;  // the first line of `site` in text output (SiteLabel::head)
  CategoryVerdict category;
  /// Callers the head does not show (text output), in stack order: at least frames_shown - 1
  /// and through the one that tells the site apart (`second`: it does).
  std::vector<std::pair<std::string, bool>> context;
  int32_t stack = -1;  // index into BlocksReport::stacks; -1: no frames recorded
  /// The `user_metadata` and `compile_context` of its alloc entry (AllocExtraOf); empty when it
  /// has none.
  std::string user_metadata, compile_context;
  /// The `user_metadata` of the `annotate` entries at its address while it was live (after its
  /// alloc, before its free was requested), in trace order; several can accumulate.
  std::vector<std::string> annotations;
};

struct BlocksReport {
  std::vector<BlockRow> rows;  // live: requested desc, then device, address, version;
                               // all: device, then first event, then address, version
  int64_t total_bytes = 0;     // Σ requested over rows
  /// The rows' stacks, filtered, frame texts innermost first, in order of first use.
  std::vector<std::vector<std::string>> stacks;
  CategoryNames categories;  // what the rows' categories are named (BlockQuery::categories)
};

/// Selects lifetimes from `timeline`. Errors: invalid regexes (naming the flag).
absl::StatusOr<BlocksReport> SelectBlocks(const Snapshot& snap, const Timeline& timeline,
                                          const BlockQuery& query);

}  // namespace memsnap::analysis
