// Output files: every file memsnap writes goes through WriteFileAtomically (docs/design.md,
// "Errors"), so that no failure, signal or crash leaves half a file under the destination's name.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace memsnap::io {

/// Streams what `write` writes into a temporary file beside `path` (`PATH.tmp.PID`) and renames it
/// over `path` only when `write` succeeded and every byte reached the file; on any failure the
/// temporary file is removed and `path` is left as it was. While it is written the temporary file
/// is registered for removal on SIGINT, SIGTERM and SIGHUP (InstallSignalCleanup). Temporary files
/// of `path` left by processes that no longer exist (a SIGKILL) are removed first. Errors name the
/// path and the system's reason ("out.json: No space left on device"). `bytes`, when given,
/// receives the size written. A destination that exists and is neither a regular file nor a
/// directory (/dev/null, a FIFO, /dev/stdout) is written in place: it cannot be replaced.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write,
                                 uint64_t* bytes = nullptr);

/// Installs handlers of SIGINT, SIGTERM and SIGHUP (those not ignored) that remove the temporary
/// files being written, then die of the signal with its default action. Called once by main.
void InstallSignalCleanup();

}  // namespace memsnap::io
