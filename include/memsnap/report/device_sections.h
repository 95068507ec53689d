// How many devices a text output gives a full section each (issue 54, "Near-linear cost"): past
// that count the per-device text of summary, timeline, frag and diff is one line per device, so
// 100,000 devices print a table, not 100,000 sections; `--device N` prints one device's section.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "memsnap/util/table.h"

namespace memsnap::report {

/// The most devices a text output gives a full section each. A normal file has 1 to 8 devices; a
/// node has up to 16 and a file of many ranks merged could have 64 without reaching it.
inline constexpr size_t kFullDeviceSections = 64;

/// Whether `devices` sections are too many: then one line per device (docs/cli.md).
inline bool CompactDevices(size_t devices) { return devices > kFullDeviceSections; }

/// The line that says the sections became a table: "100,000 devices, one line each (a full
/// section per device up to 64): `memsnap summary --device N` prints device N's".
std::string CompactDevicesNote(size_t devices, std::string_view command);

/// The first column of a one-line-per-device table: the device ordinal, left-aligned.
Column& AddDeviceColumn(Table& t);

}  // namespace memsnap::report
