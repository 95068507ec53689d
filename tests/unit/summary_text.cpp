// SummaryText (model_text.h), apart from ModelText so that the fuzz targets, which link no
// analysis, can use ModelText.
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/report/summary_render.h"
#include "model_text.h"

namespace memsnap::testing {

std::string SummaryText(const Snapshot& snap) {
  nlohmann::ordered_json j = report::SummaryToJson(analysis::Summarize(snap));
  j.erase("source");
  j.erase("file");
  j.erase("format");
  return j.dump(1);
}

}  // namespace memsnap::testing
