// Small pieces that several renderers share (not a public interface).
#pragma once

#include <cstdint>
#include <string>

#include "memsnap/model/limits.h"
#include "memsnap/util/format.h"
#include "nlohmann/json.hpp"

namespace memsnap::report::internal {

/// A time in microseconds for JSON: null when there is none (kNoTime).
inline nlohmann::ordered_json TimeToJson(int64_t t) {
  return t == kNoTime ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(t);
}

/// A check's figure as text: a percent when it is a ratio, else bytes.
inline std::string FigureText(double v, bool is_ratio) {
  return is_ratio ? FormatPercent(v) : FormatBytes(static_cast<int64_t>(v));
}

}  // namespace memsnap::report::internal
