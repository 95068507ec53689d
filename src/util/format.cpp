#include "memsnap/util/format.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "memsnap/util/strings.h"

namespace memsnap {

namespace {

std::string BytesWithDecimals(int64_t bytes, int decimals) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double magnitude = std::fabs(static_cast<double>(bytes));
  if (magnitude < 1024) return absl::StrCat(bytes, " B");
  int unit = 0;
  while (magnitude >= 1024 && unit < 5) {
    magnitude /= 1024;
    ++unit;
  }
  return absl::StrFormat("%s%.*f %s", bytes < 0 ? "-" : "", decimals, magnitude, kUnits[unit]);
}

}  // namespace

std::string FormatBytes(int64_t bytes) { return BytesWithDecimals(bytes, 1); }

std::string FormatBytesApart(int64_t bytes, int64_t other) {
  std::string text = FormatBytes(bytes);
  for (int decimals = 2; bytes != other && decimals <= 3; ++decimals) {
    if (text != BytesWithDecimals(other, decimals - 1)) break;
    text = BytesWithDecimals(bytes, decimals);
  }
  return text;
}

absl::StatusOr<int64_t> ParseDurationUs(std::string_view text) {
  struct Unit {
    std::string_view suffix;
    double us;
  };
  static constexpr Unit kUnits[] = {
      {"us", 1}, {"\u00b5s", 1}, {"ms", 1e3}, {"min", 60e6}, {"s", 1e6}};
  std::string_view number = text;
  double scale = 0;
  for (const Unit& u : kUnits) {
    if (text.ends_with(u.suffix)) {
      number = text.substr(0, text.size() - u.suffix.size());
      scale = u.us;
      break;
    }
  }
  if (scale == 0) {
    return absl::InvalidArgumentError("a time needs a unit: us, ms, s or min (e.g. +25ms)");
  }
  if (number.starts_with('+')) number.remove_prefix(1);
  double v = 0;
  if (number.empty() || number.starts_with('+') || !absl::SimpleAtod(Sv(number), &v) ||
      !std::isfinite(v) || std::fabs(v * scale) > 9e18) {
    return absl::InvalidArgumentError("not a number of us, ms, s or min");
  }
  return static_cast<int64_t>(std::llround(v * scale));
}

std::string FormatExactBytes(int64_t bytes) { return absl::StrCat(FormatCount(bytes), " B"); }

std::string FormatDuration(int64_t us) {
  const int64_t a = us < 0 ? -us : us;
  constexpr int64_t kMinute = 60'000'000;
  constexpr int64_t kHour = 60 * kMinute;
  constexpr int64_t kDay = 24 * kHour;
  if (a < 1000) return absl::StrCat(a, " us");
  if (a < 1000000) return absl::StrFormat("%.1f ms", static_cast<double>(a) / 1e3);
  if (a < 10 * kMinute) return absl::StrFormat("%.3f s", static_cast<double>(a) / 1e6);
  if (a < kHour) {
    return absl::StrFormat("%d min %.3f s", a / kMinute, static_cast<double>(a % kMinute) / 1e6);
  }
  if (a < 2 * kDay) return absl::StrFormat("%d h %d min", a / kHour, (a % kHour) / kMinute);
  return absl::StrFormat("%.1f days", static_cast<double>(a) / static_cast<double>(kDay));
}

std::string FormatRelativeTime(int64_t us) {
  return absl::StrCat(us < 0 ? "-" : "+", FormatDuration(us));
}

std::string FormatDelta(int64_t bytes) {
  return bytes > 0 ? absl::StrCat("+", FormatBytes(bytes)) : FormatBytes(bytes);
}

absl::StatusOr<int64_t> ParseSize(std::string_view text_in) {
  absl::string_view text = Sv(text_in);
  absl::string_view t = absl::StripAsciiWhitespace(text);
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  absl::string_view number = t.substr(0, i);
  std::string unit = absl::AsciiStrToLower(absl::StripAsciiWhitespace(t.substr(i)));
  double value = 0;
  if (number.empty() || !absl::SimpleAtod(number, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size '", text, "' (expected e.g. 512MiB, 1.5GB, 4096)"));
  }
  double scale = 1;
  if (unit.empty() || unit == "b")
    scale = 1;
  else if (unit == "k" || unit == "kib" || unit == "ki")
    scale = 1024.0;
  else if (unit == "m" || unit == "mib" || unit == "mi")
    scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib" || unit == "gi")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib" || unit == "ti")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    scale = 1e3;
  else if (unit == "mb")
    scale = 1e6;
  else if (unit == "gb")
    scale = 1e9;
  else if (unit == "tb")
    scale = 1e12;
  else {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid size unit in '", text, "' (use B, KiB, MiB, GiB, KB, MB, GB)"));
  }
  double bytes = value * scale;
  if (bytes > 9.2e18)
    return absl::InvalidArgumentError(absl::StrCat("size '", text, "' is too large"));
  return static_cast<int64_t>(std::llround(bytes));
}

absl::StatusOr<double> ParseRatio(std::string_view text_in) {
  absl::string_view text = Sv(text_in);
  absl::string_view t = absl::StripAsciiWhitespace(text);
  bool percent = !t.empty() && t.back() == '%';
  if (percent) t.remove_suffix(1);
  double value = 0;
  if (!absl::SimpleAtod(t, &value) || value < 0 || std::isnan(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid ratio '", text, "' (expected e.g. 5% or 0.05)"));
  }
  return percent ? value / 100.0 : value;
}

std::string FormatAddress(uint64_t address) { return absl::StrFormat("0x%x", address); }

std::string FormatCount(int64_t n) {
  std::string digits = absl::StrCat(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string FormatPercent(double fraction) { return absl::StrFormat("%.1f%%", fraction * 100.0); }

}  // namespace memsnap
