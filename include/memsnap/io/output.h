// Output files: every file memsnap writes goes through WriteFileAtomically (docs/design.md,
// "Errors"), so that no failure, signal or crash leaves half a file under the destination's name.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>

#include "absl/status/status.h"

namespace memsnap::io {

/// Streams what `write` writes into a temporary file beside `path` and renames it over `path`
/// only when `write` succeeded and every byte reached the file; on any failure the temporary file
/// is removed and `path` is left as it was. The temporary file is `.memsnap-<16 random hex
/// digits>.tmp` in the folder of the file written (short, so any output name that fits NAME_MAX
/// works), created with O_EXCL, locked (flock) while it is written, marked with the extended
/// attribute `user.memsnap` where the file system has them, and registered for removal on SIGINT,
/// SIGTERM and SIGHUP (InstallSignalCleanup). Such files a process left in that folder when it
/// could not remove them (a SIGKILL) are removed first: only files in that pattern, regular, owned
/// by this user, with one link, marked (or empty), and not locked; never any other file. A
/// symlink stays a symlink: the file it leads to is written (its temporary file beside it). A
/// file that is replaced keeps its permission bits. Errors name the path and the system's reason
/// ("out.json: No space left on device"). `bytes`, when given, receives the size written. A
/// destination that exists and is neither a regular file nor a directory (/dev/null, a FIFO,
/// /dev/stdout) is written in place: it cannot be replaced.
absl::Status WriteFileAtomically(const std::string& path,
                                 const std::function<absl::Status(std::ostream&)>& write,
                                 uint64_t* bytes = nullptr);

/// Installs handlers of SIGINT, SIGTERM and SIGHUP (those not ignored) that remove the temporary
/// files being written, then die of the signal with its default action. Called once by main.
void InstallSignalCleanup();

}  // namespace memsnap::io
