#include "memsnap/report/export_tables.h"

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::report {

using analysis::LocalEvent;

namespace {

/// RFC 4180: quote when the field has a comma, quote or newline; double the quotes.
std::string CsvField(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string EventField(LocalEvent e) {
  std::optional<uint32_t> i = e.index();
  return i ? absl::StrCat(*i) : "";
}

// "time_us,time_rel_us" of a lifetime's event (relative to the device's first event).
std::string TimeFields(const Snapshot& snap, const analysis::DeviceTimeline& dt, LocalEvent e) {
  if (!e.seen()) return ",";
  const int64_t t = dt.TimeOf(snap, e);
  const int64_t t0 = dt.TimeOf(snap, analysis::TimelinePoint::After(0));
  if (t == kNoTime) return ",";
  return absl::StrCat(t, ",", t0 == kNoTime ? std::string() : absl::StrCat(t - t0));
}

}  // namespace

void WriteLifetimesCsv(const Snapshot& snap, const analysis::Timeline& timeline,
                       const analysis::LifetimeSites& sites, std::ostream& out) {
  out << "device,address,version,class,requested_bytes,rounded_bytes,stream,alloc_event,"
         "free_requested_event,free_completed_event,alloc_time_us,alloc_time_rel_us,free_time_us,"
         "free_time_rel_us,site,category\n";
  std::string line;
  size_t row = 0;  // sites lists every lifetime in this order (query::ExportQuery)
  for (size_t d = 0; d < timeline.devices.size(); ++d) {
    const analysis::DeviceTimeline& dt = timeline.devices[d];
    for (size_t i = 0; i < dt.blocks.size(); ++i, ++row) {
      const analysis::BlockLifetime& b = dt.blocks[i];
      line = absl::StrCat(
          dt.device, ",", FormatAddress(b.address), ",", b.version, ",",
          Sv(analysis::LifetimeClassName(b.cls)), ",", b.requested_size, ",", b.rounded_size, ",",
          b.stream, ",", EventField(b.alloc_event), ",", EventField(b.free_requested_event), ",",
          EventField(b.free_completed_event), ",", TimeFields(snap, dt, b.alloc_event), ",",
          TimeFields(snap, dt, b.free_completed_event), ",",
          CsvField(sites.labels[sites.site[row]]), ",",
          Sv(sites.categories.Name(sites.category[row])), "\n");
      out << line;
    }
  }
}

}  // namespace memsnap::report
