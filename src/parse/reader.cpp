// Container detection by content (docs/reader.md) and dispatch to the decoders.
#include "memsnap/parse/reader.h"

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"
#include "memsnap/util/timer.h"
#include "parse/pickle_decoder.h"

namespace memsnap::parse {

namespace {

// The payload that marks a NotASnapshotError; its value is unused.
constexpr std::string_view kNotASnapshot = "memsnap/not-a-snapshot";

enum class Container { kPickle, kJson, kHtml, kGzip, kEmpty, kUnknown };

Container Detect(std::string_view bytes) {
  if (bytes.empty()) return Container::kEmpty;
  auto b0 = static_cast<unsigned char>(bytes[0]);
  if (io::IsGzip(bytes)) return Container::kGzip;
  if (b0 == 0x80) return Container::kPickle;
  size_t i = 0;
  if (bytes.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // UTF-8 byte order mark
  while (i < bytes.size() &&
         (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t')) {
    ++i;
  }
  if (i == bytes.size()) return Container::kEmpty;
  if (bytes[i] == '{' || bytes[i] == '[') return Container::kJson;
  if (bytes[i] == '<') return Container::kHtml;
  if (bytes.substr(0, 4096).find("\"base64\"") != std::string_view::npos) return Container::kHtml;
  return Container::kUnknown;
}

absl::StatusOr<std::vector<Snapshot>> ParseDetected(io::InputSource& input, bool gzipped, int depth,
                                                    EventObserver* observer, int threads) {
  std::string_view bytes = input.bytes();
  std::vector<Snapshot> out;
  switch (Detect(bytes)) {
    case Container::kEmpty:
      return absl::InvalidArgumentError(absl::StrCat(input.name(), ": file is empty"));
    case Container::kUnknown:
      return NotASnapshotError(absl::StrCat(
          input.name(),
          ": not a memory snapshot (expected a pickle, JSON, an HTML page from _memory_viz, or "
          "gzip of one of these)"));
    case Container::kGzip: {
      if (depth > 0) {
        return absl::InvalidArgumentError(absl::StrCat(input.name(), ": gzip inside gzip"));
      }
      ASSIGN_OR_RETURN(std::string inflated, io::Gunzip(bytes, input.name()));
      auto inner = io::FromString(std::move(inflated), input.name());
      return ParseDetected(*inner, true, depth + 1, observer, threads);
    }
    case Container::kPickle: {
      PickleOptions pickle;
      pickle.threads = ThreadsFor(threads);
      ASSIGN_OR_RETURN(Snapshot snap, ParsePickleWith(input, observer, pickle));
      out.push_back(std::move(snap));
      break;
    }
    case Container::kJson: {
      ASSIGN_OR_RETURN(Snapshot snap, ParseJson(input));
      out.push_back(std::move(snap));
      break;
    }
    case Container::kHtml: {
      ASSIGN_OR_RETURN(std::vector<std::string> payloads, ExtractHtmlPayloads(bytes, input.name()));
      for (size_t i = 0; i < payloads.size(); ++i) {
        std::string name =
            payloads.size() == 1 ? input.name() : absl::StrCat(input.name(), " [payload ", i, "]");
        auto inner = io::FromString(std::move(payloads[i]), name);
        ASSIGN_OR_RETURN(std::vector<Snapshot> snaps,
                         ParseDetected(*inner, gzipped, depth + 1, nullptr, threads));
        for (Snapshot& s : snaps) {
          s.source.container = ContainerFormat::kHtml;
          out.push_back(std::move(s));
        }
      }
      break;
    }
  }
  for (Snapshot& s : out) {
    s.source.path = input.name();
    s.source.gzip = s.source.gzip || gzipped;
    if (s.source.file_bytes == 0) s.source.file_bytes = bytes.size();
  }
  return out;
}

}  // namespace

absl::Status NotASnapshotError(std::string message) {
  absl::Status status = absl::InvalidArgumentError(message);
  status.SetPayload(Sv(kNotASnapshot), absl::Cord("1"));
  return status;
}

bool IsNotASnapshot(const absl::Status& status) {
  return !status.ok() && status.GetPayload(Sv(kNotASnapshot)).has_value();
}

absl::StatusOr<std::vector<Snapshot>> ParseSnapshots(io::InputSource& input,
                                                     const ReadOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Snapshot> snaps,
                   ParseDetected(input, false, 0, options.events, options.threads));
  for (Snapshot& s : snaps) {
    Normalize(s);
    if (options.strict) RETURN_IF_ERROR(s.diagnostics.AsError(s.source.path));
  }
  return snaps;
}

absl::StatusOr<std::vector<Snapshot>> ReadSnapshots(const std::string& path,
                                                    const ReadOptions& options) {
  ScopedTimer timer("read " + path);
  ASSIGN_OR_RETURN(std::unique_ptr<io::InputSource> input, io::OpenFile(path));
  return ParseSnapshots(*input, options);
}

absl::StatusOr<Snapshot> ReadSnapshot(const std::string& path, const ReadOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Snapshot> snaps, ReadSnapshots(path, options));
  if (snaps.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no snapshot found"));
  if (snaps.size() > 1) {
    snaps[0].diagnostics.Warn(
        absl::StrCat("the file embeds ", snaps.size(), " snapshots; using the first"));
  }
  return std::move(snaps[0]);
}

}  // namespace memsnap::parse
