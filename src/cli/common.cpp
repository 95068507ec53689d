#include "memsnap/cli/common.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

absl::StatusOr<Snapshot> LoadSnapshot(const std::string& path, Context& ctx,
                                      parse::EventObserver* events) {
  // Draws only on a terminal and only when reading takes more than about a second.
  std::optional<ProgressBar> bar;
  if (ctx.progress && !ctx.quiet) {
    bar.emplace("reading " + path, 0, ProgressOptions::Default());
    bar->StartTicker();
  }
  parse::ReadOptions options;
  options.strict = ctx.strict;
  options.events = events;
  absl::StatusOr<Snapshot> snap = parse::ReadSnapshot(path, options);
  if (!snap.ok()) return snap.status();
  if (ctx.strict && !snap->diagnostics.empty()) return snap->diagnostics.AsError(path);
  if (!ctx.quiet) {
    constexpr size_t kMaxShown = 10;
    const auto& w = snap->diagnostics.warnings;
    for (size_t i = 0; i < w.size() && i < kMaxShown; ++i) {
      *ctx.err << "warning: " << path << ": " << w[i] << "\n";
    }
    if (w.size() > kMaxShown) {
      *ctx.err << "warning: " << path << ": " << (w.size() - kMaxShown)
               << " more warning(s) not shown\n";
    }
  }
  return snap;
}

absl::StatusOr<SnapshotTimeline> LoadWithTimeline(const std::string& path,
                                                  const analysis::TimelineOptions& options,
                                                  Context& ctx, ReadAnalysisClock* phases) {
  // The curve is sized as the reader sizes its events, instead of growing by doubling on the
  // worker (a gzipped file may still outgrow it).
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  analysis::TimelineStream stream(options, ec ? 0 : parse::EventsReservedFor(bytes));
  std::optional<parse::BackgroundEventFeed> feed;  // declared after `stream`: it feeds it
  if (analysis::TimelineStream::Streams(options)) {
    feed.emplace([&stream](std::span<const TraceEvent> events, size_t first) {
      stream.Feed(events, first);
    });
  }
  absl::StatusOr<Snapshot> snap = LoadSnapshot(path, ctx, feed ? &*feed : nullptr);
  if (phases != nullptr) phases->ReadDone();
  if (!snap.ok()) return snap.status();
  size_t fed = 0;
  if (feed) {
    feed->Release();  // the reader already waited; this orders the worker's writes before ours
    fed = feed->fed();
  }
  absl::StatusOr<analysis::Timeline> tl = stream.Finish(*snap, fed);
  if (!tl.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", tl.status().message()));
  return SnapshotTimeline{*std::move(snap), *std::move(tl), stream.used_stream()};
}

absl::StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs) {
  ASSIGN_OR_RETURN(std::vector<InputFile> files, ExpandInputFiles(inputs));
  std::vector<std::string> out;
  for (auto& f : files) out.push_back(std::move(f.path));
  return out;
}

absl::StatusOr<std::vector<InputFile>> ExpandInputFiles(const std::vector<std::string>& inputs) {
  std::vector<InputFile> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      std::vector<std::string> files;
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        if (entry.is_regular_file() && entry.path().filename().string()[0] != '.' &&
            entry.path().extension() != ".md") {
          files.push_back(entry.path().string());
        }
      }
      std::sort(files.begin(), files.end());
      for (auto& f : files) out.push_back(InputFile{std::move(f), true});
    } else {
      out.push_back(InputFile{in, false});
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("no input files");
  return out;
}

namespace internal {

std::vector<absl::Status> LoadEach(const std::vector<InputFile>& inputs, Context& ctx,
                                   const std::function<absl::Status(size_t, const Snapshot&)>& fn,
                                   std::vector<bool>& skipped) {
  std::vector<absl::Status> status(inputs.size());
  std::vector<std::string> warnings(inputs.size());
  skipped.assign(inputs.size(), false);
  std::vector<char> skip(inputs.size(), 0);  // vector<bool> is not safe to write concurrently
  ParallelFor(inputs.size(), [&](size_t i) {
    Context local = ctx;
    std::ostringstream err;
    local.err = &err;
    local.progress = false;  // one line per file would interleave
    absl::StatusOr<Snapshot> snap = LoadSnapshot(inputs[i].path, local);
    if (!snap.ok()) {
      // A directory may hold other files (a README, a manifest): skip what is not a snapshot.
      if (inputs[i].from_directory && absl::IsInvalidArgument(snap.status())) {
        skip[i] = 1;
        if (!ctx.quiet) {
          err << "warning: skipping " << inputs[i].path << ": " << snap.status().message() << "\n";
        }
      } else {
        status[i] = snap.status();
      }
    } else {
      status[i] = fn(i, *snap);
    }
    warnings[i] = err.str();
  });
  for (size_t i = 0; i < inputs.size(); ++i) {
    *ctx.err << warnings[i];
    skipped[i] = skip[i] != 0;
  }
  return status;
}

}  // namespace internal

absl::Status CheckMomentFlag(std::string_view flag, std::string_view text,
                             const analysis::Moment& moment, const Snapshot& snap,
                             const analysis::Timeline& timeline) {
  for (const analysis::DeviceTimeline& dt : timeline.devices) {
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, moment, flag, text));
  }
  return absl::OkStatus();
}

void PrintJson(const nlohmann::ordered_json& j, Context& ctx) {
  // Strings come from the snapshot and may hold invalid UTF-8: replace, never throw.
  *ctx.out << j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
}

absl::Status WriteOutputFile(const std::string& path, std::string_view content, Context& ctx) {
  return report::WriteStreamedOutput(path, *ctx.out, [&](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return absl::OkStatus();
  });
}

}  // namespace memsnap::cli
