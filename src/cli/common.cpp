#include "memsnap/cli/common.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

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
  options.threads = ctx.threads;
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

absl::StatusOr<SnapshotMaybeTimeline> LoadWithTimelineStatus(
    const std::string& path, const analysis::TimelineOptions& options, Context& ctx,
    ReadAnalysisClock* phases) {
  // The curve is sized as the reader sizes its events, instead of growing by doubling on the
  // worker (a gzipped file may still outgrow it).
  std::error_code ec;
  const uintmax_t bytes = std::filesystem::file_size(path, ec);
  analysis::TimelineStream stream(options, ec ? 0 : parse::EventsReservedFor(bytes));
  std::optional<parse::BackgroundEventFeed> feed;  // declared after `stream`: it feeds it
  if (analysis::TimelineStream::Streams(options)) {
    // With one thread the pass still streams, inline as the reader publishes.
    feed.emplace(
        [&stream](std::span<const TraceEvent> events, size_t first,
                  std::span<const int64_t> streams) { stream.Feed(events, first, streams); },
        ThreadsFor(ctx.threads) > 1);
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
  return SnapshotMaybeTimeline{*std::move(snap), std::move(tl), stream.used_stream()};
}

absl::StatusOr<SnapshotTimeline> LoadWithTimeline(const std::string& path,
                                                  const analysis::TimelineOptions& options,
                                                  Context& ctx, ReadAnalysisClock* phases) {
  ASSIGN_OR_RETURN(SnapshotMaybeTimeline loaded,
                   LoadWithTimelineStatus(path, options, ctx, phases));
  if (!loaded.timeline.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", loaded.timeline.status().message()));
  }
  return SnapshotTimeline{std::move(loaded.snapshot), *std::move(loaded.timeline), loaded.streamed};
}

absl::StatusOr<std::vector<SnapshotMaybeTimeline>> LoadAllWithTimelines(
    const std::vector<std::string>& paths, const std::vector<analysis::TimelineOptions>& options,
    Context& ctx) {
  const size_t n = paths.size();
  const size_t threads = ThreadsFor(ctx.threads);
  const size_t side_by_side = std::min(threads, n);
  std::vector<std::optional<absl::StatusOr<SnapshotMaybeTimeline>>> loaded(n);
  std::vector<std::string> warnings(n);
  ParallelFor(
      n,
      [&](size_t i) {
        Context local = ctx;
        std::ostringstream err;
        if (side_by_side > 1) {
          local.err = &err;
          local.progress = false;  // one line per file would interleave
        }
        // The threads left over run the timelines' event passes beside the readers.
        local.threads = ThreadsPerFile(ctx, n);
        if (side_by_side == 1 && i > 0 && !loaded[i - 1]->ok()) {  // one at a time: stop there
          loaded[i] = loaded[i - 1]->status();
          return;
        }
        loaded[i] = LoadWithTimelineStatus(paths[i], options[i], local);
        warnings[i] = err.str();
      },
      side_by_side);
  std::vector<SnapshotMaybeTimeline> out;
  for (size_t i = 0; i < n; ++i) {
    *ctx.err << warnings[i];
    if (!loaded[i]->ok()) return loaded[i]->status();
    out.push_back(*std::move(*loaded[i]));
  }
  return out;
}

int ThreadsPerFile(const Context& ctx, size_t files) {
  const size_t threads = ThreadsFor(ctx.threads);
  const size_t side_by_side = std::max<size_t>(1, std::min(threads, files));
  return static_cast<int>(std::max<size_t>(1, threads / side_by_side));
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
      if (ec) return absl::InvalidArgumentError(absl::StrCat(in, ": ", ec.message()));
      if (files.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            in, ": the directory holds no file to read (hidden files and .md files are not read)"));
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

namespace {
// LoadWithTimelineStatus when `timeline` is given (the event pass beside the reader when the file
// has a thread left, inline as the reader publishes otherwise); else LoadSnapshot.
absl::StatusOr<SnapshotMaybeTimeline> LoadMaybeWithTimeline(
    const std::string& path, const analysis::TimelineOptions* timeline, Context& ctx) {
  if (timeline != nullptr) return LoadWithTimelineStatus(path, *timeline, ctx);
  ASSIGN_OR_RETURN(Snapshot snap, LoadSnapshot(path, ctx));
  return SnapshotMaybeTimeline{std::move(snap), analysis::Timeline{}, false};
}
}  // namespace

std::vector<absl::Status> LoadEach(
    const std::vector<InputFile>& inputs, Context& ctx, const analysis::TimelineOptions* timeline,
    const std::function<absl::Status(size_t, const Snapshot&, MaybeTimeline)>& fn,
    std::vector<Loaded>& loaded) {
  std::vector<absl::Status> status(inputs.size());
  std::vector<std::string> warnings(inputs.size());
  loaded.assign(inputs.size(), Loaded::kRead);  // each worker writes its own element
  // Files side by side, and the threads left over decode within each file (never more threads
  // than --threads asks for in all).
  const size_t threads = ThreadsFor(ctx.threads);
  const size_t side_by_side = std::max<size_t>(1, std::min(threads, inputs.size()));
  ParallelFor(
      inputs.size(),
      [&](size_t i) {
        Context local = ctx;
        std::ostringstream err;
        local.err = &err;
        local.progress = false;  // one line per file would interleave
        local.threads = ThreadsPerFile(ctx, inputs.size());
        absl::StatusOr<SnapshotMaybeTimeline> snap =
            LoadMaybeWithTimeline(inputs[i].path, timeline, local);
        if (!snap.ok()) {
          status[i] = snap.status();
          // A directory may hold other files (a README, a manifest): skip what is not a snapshot
          // at all. A snapshot that fails to read (a truncated rank) is never skipped: a gate
          // that passed on the ranks it could read would pass on what it never saw.
          if (inputs[i].from_directory && parse::IsNotASnapshot(snap.status())) {
            loaded[i] = Loaded::kSkipped;
            if (!ctx.quiet) {
              err << "warning: skipping " << inputs[i].path << ": " << snap.status().message()
                  << "\n";
            }
          } else {
            loaded[i] = Loaded::kUnreadable;
          }
        } else {
          status[i] = fn(i, snap->snapshot, timeline != nullptr ? &snap->timeline : nullptr);
        }
        warnings[i] = err.str();
      },
      side_by_side);
  for (size_t i = 0; i < inputs.size(); ++i) *ctx.err << warnings[i];
  return status;
}

std::string ReasonOf(const std::string& path, const absl::Status& status) {
  std::string_view m = ToStd(status.message());
  const std::string prefix = path + ": ";
  if (m.substr(0, prefix.size()) == prefix) m.remove_prefix(prefix.size());
  return std::string(m);
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
