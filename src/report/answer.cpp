#include "memsnap/report/answer.h"

#include "absl/strings/str_format.h"

namespace memsnap::report {

void RenderAnswerLines(const std::vector<AnswerLine>& lines, std::ostream& out) {
  for (const AnswerLine& l : lines) out << absl::StrFormat("  %-11s %s\n", l.label, l.text);
}

nlohmann::ordered_json AnswerLinesToJson(const std::vector<AnswerLine>& lines) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const AnswerLine& l : lines) j.push_back({{"label", l.label}, {"text", l.text}});
  return j;
}

}  // namespace memsnap::report
