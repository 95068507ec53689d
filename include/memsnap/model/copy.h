// A deep copy of a Snapshot. The model is move-only (its StringPool owns the bytes its views point
// into), so a copy is made on purpose, not by accident: the Python module keeps a snapshot in
// memory and each command it runs takes a copy (cli::Context::preloaded, python/).
#pragma once

#include "memsnap/model/snapshot.h"

namespace memsnap {

/// The same snapshot in memory of its own: every string under the id it had, every record as it
/// was.
Snapshot CopySnapshot(const Snapshot& snapshot);

}  // namespace memsnap
