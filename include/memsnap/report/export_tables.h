// Flat exports of `memsnap export`: a CSV of block lifetimes, and a streamed, atomic output file
// shared by `export` and `report`.
#pragma once

#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "memsnap/analysis/sites/lifetime_sites.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::report {

/// One row per block lifetime (analysis::BlockLifetime), devices ascending, lifetimes in order of
/// first appearance:
///   device,address,version,class,requested_bytes,rounded_bytes,stream,alloc_event,
///   free_requested_event,free_completed_event,alloc_time_us,free_time_us,site,category
/// Events are device-local indices, times the trace's time_us (of alloc and free_completed);
/// empty when not seen. `site` is the site's label (distinct among the file's sites, as `top`
/// names them), `category` the lifetime's category of memory (attribution.h): both read from
/// `sites`, which lists every lifetime of `timeline` in the order above (query::ExportQuery).
void WriteLifetimesCsv(const Snapshot& snap, const analysis::Timeline& timeline,
                       const analysis::LifetimeSites& sites, std::ostream& out);

}  // namespace memsnap::report
