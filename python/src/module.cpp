// memsnap._memsnap: the C++ side of the Python module (python/memsnap/__init__.py is the rest).
//
// It holds no analysis of its own. A snapshot is read once (a path, bytes, or the snapshot dict
// itself: object_reader.h) and kept in memory; every method then runs the very command line the
// CLI would run, in this process (cli::RunEmbedded), with the snapshot handed in by name
// (cli::Context::preloaded), and returns what the command printed: its --json output for results,
// its text for a failed check. So Python and the CLI cannot disagree: they are the same code.
//
// The GIL is released while a file or bytes are read and while a command runs; reading a Python
// object needs it (the objects are Python's).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/cli/app.h"
#include "memsnap/io/input.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/parse/reader.h"
#include "memsnap/util/progress.h"
#include "object_reader.h"

namespace py = pybind11;

namespace memsnap::python {
namespace {

/// Raised as memsnap._memsnap.Error with the reader's message (file, offset or key path).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A snapshot read into memory, shared by the Python object and the commands that run on it.
struct Loaded {
  std::shared_ptr<const Snapshot> snapshot;
  std::string file;  // the file it was read from (absolute); empty for bytes and objects
};

struct ReadFlags {
  bool strict = false;
  int threads = 0;
  uint64_t max_memory = 0;
};

// What cli::LoadSnapshot does after a read: --strict turns the reader's warnings into an error.
Loaded Finish(absl::StatusOr<Snapshot> snap, const std::string& name, const ReadFlags& flags) {
  if (!snap.ok()) throw Error(std::string(snap.status().message()));
  if (flags.strict && !snap->diagnostics.empty()) {
    throw Error(std::string(snap->diagnostics.AsError(name).message()));
  }
  return Loaded{std::make_shared<const Snapshot>(*std::move(snap)), ""};
}

parse::ReadOptions OptionsOf(const ReadFlags& flags) {
  parse::ReadOptions options;
  options.strict = flags.strict;
  options.threads = flags.threads;
  options.max_memory = flags.max_memory;
  return options;
}

Loaded ReadPath(const std::string& path, const ReadFlags& flags) {
  absl::StatusOr<Snapshot> snap;
  {
    py::gil_scoped_release release;
    snap = parse::ReadSnapshot(path, OptionsOf(flags));
  }
  Loaded loaded = Finish(std::move(snap), path, flags);
  std::error_code ec;
  loaded.file = std::filesystem::absolute(path, ec).string();
  return loaded;
}

Loaded ReadBytes(const py::bytes& data, const std::string& name, const ReadFlags& flags) {
  char* buffer = nullptr;
  Py_ssize_t size = 0;
  if (PyBytes_AsStringAndSize(data.ptr(), &buffer, &size) != 0) throw py::error_already_set();
  absl::StatusOr<Snapshot> snap;
  {
    // `data` is immutable and referenced by the caller while the GIL is released.
    py::gil_scoped_release release;
    std::unique_ptr<io::InputSource> input =
        io::FromMemory(std::string_view(buffer, static_cast<size_t>(size)), name);
    absl::StatusOr<std::vector<Snapshot>> snaps = parse::ParseSnapshots(*input, OptionsOf(flags));
    if (!snaps.ok()) {
      snap = snaps.status();
    } else if (snaps->empty()) {
      snap = absl::InvalidArgumentError(name + ": no snapshot found");
    } else {
      if (snaps->size() > 1) {
        (*snaps)[0].diagnostics.Warn("the input embeds " + std::to_string(snaps->size()) +
                                     " snapshots; using the first");
      }
      snap = std::move((*snaps)[0]);
    }
  }
  return Finish(std::move(snap), name, flags);
}

Loaded ReadPyObject(const py::handle& root, const std::string& name, const ReadFlags& flags) {
  return Finish(ReadObject(root.ptr(), name), name, flags);
}

/// Runs `memsnap ARGS...` in this process with `preloaded` as inputs already in memory, by the
/// names ARGS gives them (python/memsnap/__init__.py makes names no path can be); returns (exit
/// code, standard output, standard error). The files they were read from count as inputs: no
/// output of the command replaces one.
std::tuple<int, std::string, std::string> Run(const std::vector<std::string>& args,
                                              const std::map<std::string, Loaded>& preloaded) {
  cli::PreloadedSnapshots inputs;
  cli::EmbeddedRun run;
  for (const auto& [name, loaded] : preloaded) {
    inputs[name] = loaded.snapshot;
    if (!loaded.file.empty()) run.files.push_back(loaded.file);
  }
  run.preloaded = &inputs;
  std::ostringstream out, err;
  int code;
  {
    py::gil_scoped_release release;
    code = cli::RunEmbedded(args, out, err, run);
  }
  return {code, out.str(), err.str()};
}

}  // namespace
}  // namespace memsnap::python

PYBIND11_MODULE(_memsnap, m) {
  using namespace memsnap::python;
  m.doc() = "memsnap's C++ core (use the memsnap package, not this module)";
  // A command run from Python never draws a progress line on the host's terminal.
  memsnap::SetProgressEnabled(false);
  py::register_exception<Error>(m, "Error");
  m.attr("MAX_THREADS") = memsnap::cli::kMaxThreads;  // load()'s `threads`, as the CLI's -j

  py::class_<Loaded>(m, "Loaded")
      .def_property_readonly("name", [](const Loaded& l) { return l.snapshot->source.path; })
      .def_property_readonly("warnings",
                             [](const Loaded& l) { return l.snapshot->diagnostics.warnings; })
      .def_property_readonly("events", [](const Loaded& l) { return l.snapshot->events.size(); })
      .def_property_readonly("segments",
                             [](const Loaded& l) { return l.snapshot->segments.size(); });

  auto flags = [](bool strict, int threads, uint64_t max_memory) {
    return ReadFlags{strict, threads, max_memory};
  };
  m.def(
      "read_path",
      [flags](const std::string& path, bool strict, int threads, uint64_t max_memory) {
        return ReadPath(path, flags(strict, threads, max_memory));
      },
      py::arg("path"), py::arg("strict") = false, py::arg("threads") = 0, py::arg("max_memory") = 0,
      "Reads a snapshot file (any format the CLI reads).");
  m.def(
      "read_bytes",
      [flags](const py::bytes& data, const std::string& name, bool strict, int threads,
              uint64_t max_memory) {
        return ReadBytes(data, name, flags(strict, threads, max_memory));
      },
      py::arg("data"), py::arg("name"), py::arg("strict") = false, py::arg("threads") = 0,
      py::arg("max_memory") = 0, "Reads a snapshot from the bytes of a file.");
  m.def(
      "read_object",
      [flags](const py::handle& root, const std::string& name, bool strict) {
        return ReadPyObject(root, name, flags(strict, 0, 0));
      },
      py::arg("root"), py::arg("name"), py::arg("strict") = false,
      "Reads the snapshot object itself (the dict torch.cuda.memory._snapshot() returns).");
  m.def("run", &Run, py::arg("args"), py::arg("preloaded"),
        "Runs `memsnap ARGS...` in this process; returns (exit code, stdout, stderr).");
}
