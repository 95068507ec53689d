// Container detection by content (docs/reader.md) and dispatch to the decoders.
#include "memsnap/parse/reader.h"

#include <cstring>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "memsnap/util/format.h"
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

absl::Status OverBudget(std::string_view name, uint64_t need, std::string_view what,
                        uint64_t budget) {
  return absl::ResourceExhaustedError(
      absl::StrCat(Sv(name), ": ", Sv(what), " needs about ",
                   FormatBytes(static_cast<int64_t>(need)), ", over the memory budget of ",
                   FormatBytes(static_cast<int64_t>(budget)), " (--max-memory)"));
}

absl::StatusOr<std::vector<Snapshot>> ParseDetected(io::InputSource& input, bool gzipped, int depth,
                                                    EventObserver* observer, int threads,
                                                    uint64_t budget) {
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
      // The trailer's size (mod 2^32) is checked before inflating; the inflating itself stops at
      // the budget.
      constexpr uint64_t kGzipCap = uint64_t{64} << 30;
      if (budget != 0 && bytes.size() >= 18) {
        uint32_t isize;
        std::memcpy(&isize, bytes.data() + bytes.size() - 4, 4);
        if (isize > budget) return OverBudget(input.name(), isize, "inflating the gzip", budget);
      }
      absl::StatusOr<std::string> inflated =
          io::Gunzip(bytes, input.name(), budget != 0 ? std::min(budget, kGzipCap) : kGzipCap);
      if (!inflated.ok() && budget != 0 && budget < kGzipCap &&
          absl::StrContains(inflated.status().message(), "inflates beyond")) {
        return OverBudget(input.name(), budget + 1, "inflating the gzip", budget);
      }
      if (!inflated.ok()) return inflated.status();
      auto inner = io::FromString(*std::move(inflated), input.name());
      return ParseDetected(*inner, true, depth + 1, observer, threads, budget);
    }
    case Container::kPickle: {
      PickleOptions pickle;
      pickle.threads = ThreadsFor(threads);
      pickle.max_memory = budget;
      ASSIGN_OR_RETURN(Snapshot snap, ParsePickleWith(input, observer, pickle));
      out.push_back(std::move(snap));
      break;
    }
    case Container::kJson: {
      // simdjson's document takes about twice the text (docs/reader.md, "Containers").
      if (budget != 0 && 2 * static_cast<uint64_t>(bytes.size()) > budget) {
        return OverBudget(input.name(), 2 * static_cast<uint64_t>(bytes.size()),
                          "the JSON document", budget);
      }
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
                         ParseDetected(*inner, gzipped, depth + 1, nullptr, threads, budget));
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

bool LooksLikeSnapshotAt(std::string_view head, int depth) {
  auto has = [&](std::string_view key) { return head.find(key) != std::string_view::npos; };
  switch (Detect(head)) {
    case Container::kPickle:
      return head.size() >= 2 && head[1] >= 2 && head[1] <= 5;
    case Container::kGzip:
      return depth == 0 && LooksLikeSnapshotAt(io::GunzipPrefix(head, 64 << 10), 1);
    case Container::kJson:
      return has("\"segments\"") || has("\"device_traces\"") ||
             (has("\"blocks\"") && has("\"total_size\""));
    case Container::kHtml:
      return has("\"base64\"");
    case Container::kEmpty:
    case Container::kUnknown:
      return false;
  }
  return false;
}

}  // namespace

bool LooksLikeSnapshot(std::string_view head) { return LooksLikeSnapshotAt(head, 0); }
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
  ASSIGN_OR_RETURN(std::vector<Snapshot> snaps, ParseDetected(input, false, 0, options.events,
                                                              options.threads, options.max_memory));
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
  absl::StatusOr<std::vector<Snapshot>> snaps = ParseSnapshots(*input, options);
  // A file truncated or rewritten under the reader: whatever the parse said, it was not about
  // this file.
  RETURN_IF_ERROR(input->CheckUnchanged());
  return snaps;
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
