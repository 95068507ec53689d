// The answer block that opens a device's output in `memsnap oom` and `memsnap frag`: a few
// labelled lines ("answer", "fix", ...) in the user's terms, ahead of the evidence.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace memsnap::report {

/// One line of an answer: a short label ("answer", "fix", "cut", "pinned by") and its sentence.
struct AnswerLine {
  std::string label;
  std::string text;
};

/// The lines, indented by two spaces with the label in an 11-character column:
/// "  answer      fragmentation costs ...".
void RenderAnswerLines(const std::vector<AnswerLine>& lines, std::ostream& out);

/// The lines as a JSON array of {"label", "text"}.
nlohmann::ordered_json AnswerLinesToJson(const std::vector<AnswerLine>& lines);

}  // namespace memsnap::report
