// Small pieces that several renderers share (not a public interface).
#pragma once

#include <cstdint>
#include <string>

#include "memsnap/model/limits.h"
#include "memsnap/report/workload_render.h"
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

/// A device's workload (analysis::WorkloadEvidence) for JSON, the one serializer summary, top,
/// oom and the report use: {"kind", "evidence" (the text), "stacks", "backward", ...}.
inline nlohmann::ordered_json WorkloadToJson(const analysis::WorkloadEvidence& w) {
  return {{"kind", std::string(WorkloadName(w.kind))},
          {"title", std::string(WorkloadTitle(w.kind))},
          {"evidence", WorkloadEvidenceText(w)},
          {"stacks", w.stacks},
          {"backward", w.backward},
          {"optimizer", w.optimizer},
          {"forward", w.forward},
          {"generation", w.generation},
          {"kv_cache", w.kv_cache},
          {"adapters", w.adapters},
          {"pretrained", w.pretrained},
          {"evaluation", w.evaluation},
          {"no_grad", w.no_grad},
          {"ended_in_oom", w.ended_in_oom}};
}

}  // namespace memsnap::report::internal
