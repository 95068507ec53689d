// Input bytes: a read-only mmap of a file, or memory handed in by tests and fuzzers
// (docs/coding-guidelines.md §13). gzip input is inflated into an owned buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace memsnap::io {

class InputSource {
 public:
  virtual ~InputSource() = default;
  /// The whole input. Valid until the source is destroyed.
  virtual std::string_view bytes() const = 0;
  /// Name used in error messages (the path, or "<memory>").
  virtual const std::string& name() const = 0;
  /// Tells the OS that bytes before `offset` will not be read again, so their pages can leave the
  /// resident set (a multi-GB file then costs little memory while it is decoded). A hint only.
  virtual void ReleaseBefore(uint64_t offset) {}
  /// The same for bytes [begin, end), which may be read again (the pages then fault back in).
  /// Safe to call from several threads.
  virtual void ReleaseRange(uint64_t begin, uint64_t end) {}
  /// Copies bytes [offset, offset + n) into `out` (the range must lie inside bytes()) without
  /// bringing them into the resident set where it can: a mapped file reads them with pread, so
  /// that a walk over small pieces of a large file (the FRAME headers every 64 KiB) maps no pages
  /// (the kernel maps 16 pages around each one that faults). Safe to call from several threads.
  virtual void Peek(uint64_t offset, void* out, size_t n) const;
  /// Bytes that may be read (never used) after the end of bytes(): the zero-filled tail of the
  /// last page of an mmap, or the spare capacity of an owned buffer. Parsers that over-read
  /// (simdjson needs SIMDJSON_PADDING bytes) copy the input only when this is too small.
  virtual size_t padding() const { return 0; }
  /// Fails ("FILE: file changed while it was read") when the file under a mapping was truncated
  /// (its lost pages read as zeros instead of killing the process with SIGBUS) or its size or
  /// modification time changed since it was opened. Readers call it after parsing, and its error
  /// takes precedence over theirs: what they saw was not the file.
  virtual absl::Status CheckUnchanged() const { return absl::OkStatus(); }
};

/// Maps `path` read-only. Errors name the path ("snap.pickle: No such file or directory"). What is
/// not a regular file (a FIFO, a device, a socket) is refused without being opened; "-" reads
/// standard input whole into memory, named "<stdin>".
absl::StatusOr<std::unique_ptr<InputSource>> OpenFile(const std::string& path);

/// The entries of directory `dir` that memsnap reads as its inputs (a directory of ranks), as
/// `dir/NAME`, sorted: every entry but hidden ones (a leading '.') and .md files, and of the
/// directories (or links to one) only those named like a snapshot file (.pickle, .pkl, .json,
/// .html, .gz...: `rank3.pickle/` looks like a rank). An entry that cannot be read as a file (a
/// dangling or looping symbolic link, a FIFO, a socket, such a directory) is listed all the same:
/// opening it fails with an error naming it, so no rank is ever left out unseen. The one listing
/// of a directory: the commands read these files and the output checks compare with them. Errors
/// name `dir` and the system's reason ("ranks: Permission denied"); nothing here throws.
absl::StatusOr<std::vector<std::string>> ListInputDirectory(const std::string& dir);

/// Wraps bytes the caller keeps alive.
std::unique_ptr<InputSource> FromMemory(std::string_view bytes, std::string name = "<memory>");

/// Owns `bytes` (used for inflated gzip and decoded base64 payloads).
std::unique_ptr<InputSource> FromString(std::string bytes, std::string name);

/// True when `bytes` starts with the gzip magic 1f 8b.
bool IsGzip(std::string_view bytes);

/// Inflates the start of a gzip stream: at most `max_output` bytes, what came out before an error
/// (for a look at a file's head: parse::LooksLikeSnapshot).
std::string GunzipPrefix(std::string_view bytes, size_t max_output);

/// Inflates a gzip stream. Refuses output larger than `max_output` bytes (a gzip bomb).
absl::StatusOr<std::string> Gunzip(std::string_view bytes, std::string_view name,
                                   uint64_t max_output = uint64_t{64} << 30);

}  // namespace memsnap::io
