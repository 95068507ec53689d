// The file header shown by both pages.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "memsnap/report/html_report.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "report/html_report_internal.h"

namespace memsnap::report {

using Json = nlohmann::ordered_json;

namespace internal {

Json FileJson(const Snapshot& snap) {
  Json j;
  j["path"] = snap.source.path;
  j["file_bytes"] = snap.source.file_bytes;
  j["segments"] = snap.segments.size();
  j["blocks"] = snap.blocks.size();
  j["events"] = snap.events.size();
  int64_t reserved = 0, active = 0;
  for (const Segment& s : snap.segments) reserved += s.total_size;
  for (const Block& b : snap.blocks) {
    if (b.is_active()) active += b.requested_size;
  }
  j["reserved_bytes"] = reserved;
  j["live_bytes"] = active;
  if (snap.settings.present) j["alloc_conf"] = snap.settings.conf;
  return j;
}

}  // namespace internal

}  // namespace memsnap::report
