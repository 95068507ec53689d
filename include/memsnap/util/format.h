// Sizes and numbers the way users write and read them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace memsnap {

/// 1536 -> "1.5 KiB", 0 -> "0 B", -2097152 -> "-2.0 MiB". Powers of 1024.
std::string FormatBytes(int64_t bytes);
/// A duration with its unit: "25ms", "+1.5s", "250us", "2min", "-5s" -> microseconds (signed).
/// Errors say what is wrong ("a time needs a unit: us, ms, s or min").
absl::StatusOr<int64_t> ParseDurationUs(std::string_view text);
/// FormatBytes, with as many decimals (up to 3) as it takes not to read as `other` when the two
/// differ: a run that needs 11.03 GiB does not read "fits on 11.0 GiB" beside an 11.0 GiB device.
std::string FormatBytesApart(int64_t bytes, int64_t other);
/// Bytes exactly, with thousands separators: 3865470566 -> "3,865,470,566 B".
std::string FormatExactBytes(int64_t bytes);
/// A length of time in microseconds, unsigned: 350 -> "350 us", 25300 -> "25.3 ms", 1500000 ->
/// "1.500 s", 612000000 -> "10 min 12.000 s", 2 h 5 min -> "2 h 5 min", 151 days -> "151.2 days".
std::string FormatDuration(int64_t us);
/// A time since the start of a trace, in microseconds: FormatDuration with its sign, "+350 us",
/// "+25.3 ms", "+1.500 s", "+10 min 12.000 s".
std::string FormatRelativeTime(int64_t us);
/// Like FormatBytes but with an explicit sign for positive values: "+1.0 MiB".
std::string FormatDelta(int64_t bytes);
/// Accepts "512MiB", "1.5GB", "20 MiB", "4096", "2g", "80GiB". KB/MB/GB are powers of 1000,
/// KiB/MiB/GiB and bare K/M/G powers of 1024.
absl::StatusOr<int64_t> ParseSize(std::string_view text);
/// Accepts "5%", "0.05". Returns a fraction.
absl::StatusOr<double> ParseRatio(std::string_view text);
/// "0x7f3a00000000"
std::string FormatAddress(uint64_t address);
/// 1234567 -> "1,234,567"
std::string FormatCount(int64_t n);
/// Percentage with one decimal: 0.1234 -> "12.3%".
std::string FormatPercent(double fraction);

}  // namespace memsnap
