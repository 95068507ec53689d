// The snapshot object itself, as `torch.cuda.memory._snapshot()` returns it (dicts, lists, ints,
// strs, None, bools, floats), read into the model without a file or a pickle in between. It is the
// JSON reader (src/parse/json_reader.cpp) with Python objects for values: every key is resolved and
// set through the one schema (src/parse/schema.h) and its setters, and the snapshot is normalized
// like any file (Normalize), so a dict and its pickle give the same model.
#pragma once

#include <Python.h>

#include <string>

#include "absl/status/statusor.h"
#include "memsnap/model/snapshot.h"

namespace memsnap::python {

/// Reads `root` (a snapshot dict, or the 1.13 list of segments) into a normalized Snapshot named
/// `name` (its SourceInfo::path, and the start of every error message). Errors name the key path:
///   "<dict>: /device_traces/0/12/size: expected int, got str"
/// The caller holds the GIL; no Python code runs during the read (the objects are only looked at).
absl::StatusOr<Snapshot> ReadObject(PyObject* root, const std::string& name);

}  // namespace memsnap::python
