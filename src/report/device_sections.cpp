#include "memsnap/report/device_sections.h"

#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
#include "memsnap/util/strings.h"

namespace memsnap::report {

std::string CompactDevicesNote(size_t devices, std::string_view command) {
  return absl::StrCat(FormatCount(static_cast<int64_t>(devices)),
                      " devices, one line each (a full section per device up to ",
                      kFullDeviceSections, "): `memsnap ", Sv(command),
                      " --device N` prints device N's");
}

Column& AddDeviceColumn(Table& t) {
  Column& device = t.AddColumn("device", "device", Unit::kId);
  device.min_width = 6;
  device.align = Align::kLeft;
  return device;
}

}  // namespace memsnap::report
