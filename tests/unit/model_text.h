// A canonical text dump of a Snapshot (segments, blocks, events, stacks as text, settings,
// annotations), independent of string/frame/stack id numbering: two readers that produce the same
// model produce the same text. Used by the reader equivalence tests.
#pragma once

#include <string>

#include "memsnap/model/snapshot.h"

namespace memsnap::testing {

/// Every field of the model that a reader fills, one record per line.
std::string ModelText(const Snapshot& snap);

/// analysis::Summarize rendered as JSON, without the `source` fields that name the container nor
/// the reader's warnings (SummaryReport::read_warnings), which locate by offset or key path.
std::string SummaryText(const Snapshot& snap);

}  // namespace memsnap::testing
