// SummaryText (model_text.h), apart from ModelText so that the fuzz targets, which link no
// analysis, can use ModelText.
#include "memsnap/analysis/sites/summary.h"
#include "memsnap/report/summary_render.h"
#include "model_text.h"

namespace memsnap::testing {

std::string SummaryText(const Snapshot& snap) {
  analysis::SummaryReport r = analysis::Summarize(snap);
  // The reader's warnings locate what they found by the container's terms (a pickle's byte
  // offset, JSON's key path), like the source fields erased below.
  r.read_warnings.clear();
  nlohmann::ordered_json j = report::SummaryToJson(r);
  j.erase("source");
  j.erase("file");
  j.erase("format");
  return j.dump(1);
}

}  // namespace memsnap::testing
