// Helpers shared by the command files: loading inputs with diagnostics, JSON output.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/cli/command.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/parse/event_observer.h"
#include "memsnap/util/timer.h"
#include "nlohmann/json.hpp"

namespace memsnap::cli {

/// Reads one snapshot, prints its diagnostics to ctx.err (unless --quiet) and fails under
/// --strict when there are any. Errors name the file.
/// `events`, when given, is told of the trace events as they are decoded (parse::ReadOptions).
absl::StatusOr<Snapshot> LoadSnapshot(const std::string& path, Context& ctx,
                                      parse::EventObserver* events = nullptr);

/// A snapshot and its timeline.
struct SnapshotTimeline {
  Snapshot snapshot;
  analysis::Timeline timeline;
  bool streamed = false;  // the event pass ran during the read (analysis::TimelineStream)
  /// For ReadAnalysisClock::Print: what the read's times include.
  std::string_view timings_note() const {
    return streamed ? "includes the timeline's event pass, run on a second thread" : "";
  }
};

/// A snapshot and its timeline, or why the timeline could not be rebuilt (the snapshot is good).
struct SnapshotMaybeTimeline {
  Snapshot snapshot;
  absl::StatusOr<analysis::Timeline> timeline;
  bool streamed = false;
};

/// LoadWithTimeline for commands that go on without a timeline, or report its error themselves:
/// only a failed read is an error; the timeline's status comes back unchanged.
absl::StatusOr<SnapshotMaybeTimeline> LoadWithTimelineStatus(
    const std::string& path, const analysis::TimelineOptions& options, Context& ctx,
    ReadAnalysisClock* phases = nullptr);

/// Reads several files with their timelines (options[i] for paths[i]) side by side on up to
/// --threads threads, each timeline's event pass beside its reader when threads are left over.
/// Warnings are printed in path order; the first failed read (in path order) is the error.
absl::StatusOr<std::vector<SnapshotMaybeTimeline>> LoadAllWithTimelines(
    const std::vector<std::string>& paths, const std::vector<analysis::TimelineOptions>& options,
    Context& ctx);

/// Reads one snapshot like LoadSnapshot and rebuilds its timeline, the timeline's event pass
/// running on a second core while the reader decodes (analysis::TimelineStream): what is left
/// after the read is the reconciliation with the final state. `phases`, when given, is told when
/// the read ends. Errors name the file.
absl::StatusOr<SnapshotTimeline> LoadWithTimeline(const std::string& path,
                                                  const analysis::TimelineOptions& options,
                                                  Context& ctx,
                                                  ReadAnalysisClock* phases = nullptr);

/// `--max-output SIZE` and `--force` of the commands whose output can be far larger than their
/// input (convert and export to JSON: JSON repeats every stack a pickle shares through its memo).
struct OutputLimitFlags {
  std::string max_output;  // empty: max(16 GiB, 64x the input)
};
/// Adds --max-output to `sub` (the global --force, Context::force, lifts the limit).
void AddOutputLimitFlags(CLI::App& sub, OutputLimitFlags& flags);
/// Before writing `output` ("-": stdout), about `estimate` bytes (uncompressed) made from
/// `input` of `input_bytes`: an error giving the estimate when it is over the limit
/// (--max-output, default max(16 GiB, 64x the input)) or, for a file written uncompressed, over
/// the free space of its file system (statvfs). The global --force (`force`) skips both.
absl::Status CheckOutputSize(const std::string& output, uint64_t estimate, const std::string& input,
                             uint64_t input_bytes, bool compressed, const OutputLimitFlags& flags,
                             bool force);

/// The share of --threads each of `files` files gets when they are read side by side (at least
/// 1): files side by side first, the threads left over decode within each file.
int ThreadsPerFile(const Context& ctx, size_t files);

/// Expands the command-line inputs: a directory becomes every regular file in it (sorted), other
/// paths stay as given (the shell expands globs). Errors when nothing is left.
absl::StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs);

/// One input of a multi-file command, after ExpandInputs-style expansion.
struct InputFile {
  std::string path;
  bool from_directory = false;  // found by listing a directory (non-snapshots are then skipped)
};

/// Expands inputs like ExpandInputs but remembers which files came from a directory listing.
absl::StatusOr<std::vector<InputFile>> ExpandInputFiles(const std::vector<std::string>& inputs);

/// What AnalyzeEach left out of its results. A file found in a directory whose content is not a
/// snapshot at all (parse::IsNotASnapshot: a README, a manifest) is skipped, with a warning. A
/// snapshot that fails to read (truncated, corrupt, empty), or a file given by name that is not a
/// snapshot, is unreadable: an error, never a skip.
struct LeftOutInputs {
  /// In: true lists unreadable files in `unreadable` and goes on with the others (a CI gate that
  /// reports every rank); false (the default) fails the whole call with the first one's error.
  bool keep_going = false;
  std::vector<analysis::LeftOutFile> skipped;     // in input order
  std::vector<analysis::LeftOutFile> unreadable;  // in input order; only with keep_going
};

/// Reads every input in parallel on all cores and runs `analyze` on each snapshot on the worker
/// thread, so only the results (not the snapshots) are kept. Results come back in input order.
/// A file found in a directory that is not a snapshot is skipped with a warning (and listed in
/// `left_out` when given); a snapshot that fails to read fails the whole call with an error naming
/// it, or with left_out->keep_going is listed there; an error of `analyze` fails the call.
/// Warnings are printed in input order.
template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEach(
    const std::vector<std::string>& inputs, Context& ctx,
    const std::function<absl::StatusOr<R>(const Snapshot&)>& analyze,
    LeftOutInputs* left_out = nullptr);

/// AnalyzeEach over inputs already expanded (e.g. paths derived from ExpandInputFiles that keep
/// its from_directory marks).
template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEach(
    const std::vector<InputFile>& files, Context& ctx,
    const std::function<absl::StatusOr<R>(const Snapshot&)>& analyze,
    LeftOutInputs* left_out = nullptr);

/// What an analysis of AnalyzeEachWithTimeline gets: a snapshot and its timeline, or why the
/// timeline could not be rebuilt (the snapshot is good).
template <class R>
using AnalyzeWithTimelineFn =
    std::function<absl::StatusOr<R>(const Snapshot&, const absl::StatusOr<analysis::Timeline>&)>;

/// AnalyzeEach with each file's timeline rebuilt with `options` while the file is read
/// (LoadWithTimelineStatus: the event pass runs beside the reader when the file has a thread
/// left), for analyses that need one: one timeline pass per file, during its read.
template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEachWithTimeline(
    const std::vector<InputFile>& files, const analysis::TimelineOptions& options, Context& ctx,
    const AnalyzeWithTimelineFn<R>& analyze, LeftOutInputs* left_out = nullptr);

/// Checks a parsed --at/--from/--to value against every device of `timeline`: an error naming the
/// flag when it lies outside a device's trace (analysis::CheckMoment).
absl::Status CheckMomentFlag(std::string_view flag, std::string_view text,
                             const analysis::Moment& moment, const Snapshot& snap,
                             const analysis::Timeline& timeline);

/// Writes `j` to ctx.out, pretty-printed with two spaces, and a newline.
void PrintJson(const nlohmann::ordered_json& j, Context& ctx);

/// Marks a flag or positional whose values name files the command reads: `->check(InputPaths())`.
/// It accepts every value; the app collects the marked values into Context::inputs.
CLI::Validator InputPaths();

/// Marks a flag or positional whose value names a file the command writes:
/// `->check(OutputPath())`. Every such value goes through CheckOutputPath once, right after the
/// command line is parsed (CheckOutputs), before anything is read.
CLI::Validator OutputPath();

/// Refuses `path` as the output of `flag` when it is the same file as one of `inputs` (device and
/// inode, after links; a directory input stands for its files), and, unless `force`, when it is an
/// existing file that is itself a memory snapshot (parse::LooksLikeSnapshot). "-" and "" pass.
absl::Status CheckOutputPath(std::string_view flag, const std::string& path,
                             const std::vector<std::string>& inputs, bool force);

/// Once per invocation of `sub`: collects the values of its InputPaths options into ctx.inputs and
/// checks the value of each OutputPath option with CheckOutputPath. Reads the parsed results, so
/// it also runs when the parse failed afterwards (a required input missing because a flag took it:
/// `top --folded snap.pickle`).
absl::Status CheckOutputs(CLI::App& sub, Context& ctx);

/// Writes through `write` to `path` ("-": ctx.out) with io::WriteFileAtomically: a temporary file
/// renamed into place, removed on failure and on SIGINT/SIGTERM/SIGHUP. Checks the path again
/// with CheckOutputPath (an output whose path the command chose itself, like report's default,
/// was not seen by CheckOutputs); `flag` names the flag in that message. `bytes`, when given,
/// receives the size written to a file.
absl::Status WriteOutput(const std::string& path, Context& ctx,
                         const std::function<absl::Status(std::ostream&)>& write,
                         std::string_view flag = "", uint64_t* bytes = nullptr);

/// WriteOutput of `content`.
absl::Status WriteOutputFile(const std::string& path, std::string_view content, Context& ctx);

namespace internal {
/// The timeline a file of LoadEach comes with: nullptr when none was asked for.
using MaybeTimeline = const absl::StatusOr<analysis::Timeline>*;

/// What became of one input of LoadEach.
enum class Loaded : char {
  kRead,        // read; its status is fn's
  kSkipped,     // found in a directory and not a snapshot; its status is why
  kUnreadable,  // a snapshot that failed to read, or a named file that is none; status is why
};

/// Loads inputs[i] in parallel (with its timeline when `timeline` is given), calling
/// `fn(i, snapshot, timeline)` on the worker; returns per-file status, and in `loaded` what became
/// of each file (see AnalyzeEach).
std::vector<absl::Status> LoadEach(
    const std::vector<InputFile>& inputs, Context& ctx, const analysis::TimelineOptions* timeline,
    const std::function<absl::Status(size_t, const Snapshot&, MaybeTimeline)>& fn,
    std::vector<Loaded>& loaded);

/// `status`'s message without `path: ` in front (the reason a file was left out).
std::string ReasonOf(const std::string& path, const absl::Status& status);

/// AnalyzeEach and AnalyzeEachWithTimeline (`timeline` nullptr: none, and `analyze` is given
/// nullptr for it).
template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEach(
    const std::vector<InputFile>& files, Context& ctx, const analysis::TimelineOptions* timeline,
    const std::function<absl::StatusOr<R>(const Snapshot&, MaybeTimeline)>& analyze,
    LeftOutInputs* left_out) {
  std::vector<std::optional<R>> results(files.size());
  std::vector<Loaded> loaded;
  std::vector<absl::Status> status = LoadEach(
      files, ctx, timeline,
      [&](size_t i, const Snapshot& snap, MaybeTimeline tl) -> absl::Status {
        absl::StatusOr<R> r = analyze(snap, tl);
        if (!r.ok()) return r.status();
        results[i] = std::move(*r);
        return absl::OkStatus();
      },
      loaded);
  std::vector<std::pair<std::string, R>> out;
  std::vector<analysis::LeftOutFile> skipped, unreadable;
  const bool keep_going = left_out != nullptr && left_out->keep_going;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].path;
    if (loaded[i] == Loaded::kSkipped) {
      skipped.push_back({path, ReasonOf(path, status[i])});
    } else if (loaded[i] == Loaded::kUnreadable && keep_going) {
      unreadable.push_back({path, ReasonOf(path, status[i])});
    } else if (!status[i].ok()) {
      return status[i];
    } else {
      out.emplace_back(path, std::move(*results[i]));
    }
  }
  if (out.empty() && unreadable.empty()) {
    std::string names;
    for (const analysis::LeftOutFile& f : skipped) {
      absl::StrAppend(&names, names.empty() ? " (skipped: " : ", ", f.path);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("no snapshot files among the inputs", names, names.empty() ? "" : ")"));
  }
  if (left_out != nullptr) {
    left_out->skipped = std::move(skipped);
    left_out->unreadable = std::move(unreadable);
  }
  return out;
}
}  // namespace internal

template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEach(
    const std::vector<std::string>& inputs, Context& ctx,
    const std::function<absl::StatusOr<R>(const Snapshot&)>& analyze, LeftOutInputs* left_out) {
  absl::StatusOr<std::vector<InputFile>> files = ExpandInputFiles(inputs);
  if (!files.ok()) return files.status();
  return AnalyzeEach<R>(*files, ctx, analyze, left_out);
}

template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEach(
    const std::vector<InputFile>& files, Context& ctx,
    const std::function<absl::StatusOr<R>(const Snapshot&)>& analyze, LeftOutInputs* left_out) {
  return internal::AnalyzeEach<R>(
      files, ctx, nullptr,
      [&](const Snapshot& snap, internal::MaybeTimeline) { return analyze(snap); }, left_out);
}

template <class R>
absl::StatusOr<std::vector<std::pair<std::string, R>>> AnalyzeEachWithTimeline(
    const std::vector<InputFile>& files, const analysis::TimelineOptions& options, Context& ctx,
    const AnalyzeWithTimelineFn<R>& analyze, LeftOutInputs* left_out) {
  return internal::AnalyzeEach<R>(
      files, ctx, &options,
      [&](const Snapshot& snap, internal::MaybeTimeline tl) { return analyze(snap, *tl); },
      left_out);
}

}  // namespace memsnap::cli
