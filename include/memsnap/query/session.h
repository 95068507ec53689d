// The query layer's input: one file read once (docs/design.md, "Queries"). A session holds a
// snapshot, the timeline its query declared it needs (rebuilt during the read, on a second core)
// and the read's warnings. Every command, the HTML page and the Python module read their files
// through here, so each figure comes from the same snapshot and timeline whoever asks.
//
//   Needs needs;  needs.timeline = analysis::TimelineOptions{...};
//   ASSIGN_OR_RETURN(Session s, Session::Open("snap.pickle", needs, settings));
//   ASSIGN_OR_RETURN(const analysis::Timeline* tl, s.timeline());
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/compose/ranks.h"
#include "memsnap/analysis/sites/leaks.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/util/timer.h"

namespace memsnap::query {

/// One warning of a read: a diagnostic of the file, or why a file found in a directory was
/// skipped.
struct Warning {
  std::string_view path;
  std::string_view message;
  bool skipped = false;  // the file was left out (not a snapshot)
};
/// Where the read's warnings go.
using WarningSink = std::function<void(const Warning&)>;

/// Snapshots already in memory, by the name a query gives as their path (the Python module's
/// loaded snapshots, python/). The same type as cli::PreloadedSnapshots.
using PreloadedSnapshots = std::map<std::string, std::shared_ptr<const Snapshot>>;

/// How files are read: the global flags, set by the CLI and the Python module alike.
struct ReadSettings {
  bool strict = false;      // diagnostics become errors
  int threads = 0;          // threads that may read and analyse; 0 = all cores
  uint64_t max_memory = 0;  // bytes; 0 = no limit
  bool progress = false;    // may draw a progress line on stderr (a terminal, reads over ~1 s)
  /// Told of each warning, in input order; empty: warnings are dropped (--quiet).
  WarningSink warn;
  /// Told when the read ends (--timings); nullptr: not timed.
  ReadAnalysisClock* clock = nullptr;
  /// Inputs already in memory: a path named here is a copy of that snapshot instead of a read.
  /// Not owned.
  const PreloadedSnapshots* preloaded = nullptr;
  /// The user's categories (--category, --categories; the Python module's `categories=`): every
  /// session read with these settings decides and names categories in them (Session::categories).
  analysis::CategoryNames categories;
};

/// What a query needs of its file, declared before the read so that the timeline's event pass
/// runs beside the reader.
struct Needs {
  /// The timeline and what it keeps; nullopt: the query needs no timeline.
  std::optional<analysis::TimelineOptions> timeline;
};

/// Needs with a timeline built with `options`.
Needs NeedsTimeline(const analysis::TimelineOptions& options);

/// One input file, read once.
class Session {
 public:
  /// Reads `path` ("-": standard input) with the timeline `needs` declares. Errors name the file;
  /// under settings.strict a snapshot with diagnostics is an error. A timeline that cannot be
  /// rebuilt is no error here: timeline() says why.
  static absl::StatusOr<Session> Open(const std::string& path, const Needs& needs,
                                      const ReadSettings& settings);
  /// A session over a snapshot already in memory (the Python module's dict input); its
  /// diagnostics are the snapshot's.
  static Session FromSnapshot(Snapshot snapshot, const Needs& needs,
                              analysis::CategoryNames categories = {});

  const Snapshot& snapshot() const { return snapshot_; }
  /// The file as named when opened ("-" for standard input).
  const std::string& path() const { return snapshot_.source.path; }

  /// The timeline declared in Needs; an error naming the file when it could not be rebuilt (or
  /// none was declared).
  absl::StatusOr<const analysis::Timeline*> timeline() const;
  /// The same, with the timeline's own error unchanged (for commands that go on without one).
  const absl::StatusOr<analysis::Timeline>& timeline_status() const { return timeline_; }
  /// What the timeline was built with; nullopt when none was declared.
  const std::optional<analysis::TimelineOptions>& timeline_options() const { return options_; }
  /// A timeline built with `options`: the session's own when it answers for them (same device
  /// filter, keeps at least as much, a curve when asked), else rebuilt now and kept.
  absl::StatusOr<const analysis::Timeline*> TimelineFor(const analysis::TimelineOptions& options);

  /// The categories every answer of this session is decided and named in: the built-ins and the
  /// user's (ReadSettings::categories). Queries hand them to the analyses' options
  /// (GroupOptions::categories, OomOptions::categories...), and the results carry them to the
  /// renderers, so two sessions with different categories never share a vocabulary.
  const analysis::CategoryNames& categories() const { return categories_; }

  /// Whether the timeline's event pass ran during the read (analysis::TimelineStream).
  bool streamed() const { return streamed_; }
  /// For ReadAnalysisClock::Print: what the read's times include.
  std::string_view timings_note() const {
    return streamed_ ? "includes the timeline's event pass, run on a second thread" : "";
  }

 private:
  Session(Snapshot snapshot, absl::StatusOr<analysis::Timeline> timeline,
          std::optional<analysis::TimelineOptions> options, bool streamed);

  Snapshot snapshot_;
  absl::StatusOr<analysis::Timeline> timeline_;
  std::optional<analysis::TimelineOptions> options_;  // what timeline_ was built with
  bool streamed_ = false;
  analysis::CategoryNames categories_;
  /// Timelines rebuilt by TimelineFor for other options (rare: the Python module's sessions).
  std::vector<std::pair<analysis::TimelineOptions, analysis::Timeline>> extra_;
};

/// `status` with "PATH: " in front of its message (the file an error is about), its code kept.
absl::Status WithPath(std::string_view path, const absl::Status& status);

/// Whether a timeline built with `have` answers every question one built with `want` would.
bool TimelineCovers(const analysis::TimelineOptions& have, const analysis::TimelineOptions& want);

/// A training step of the moment grammar (docs/cli.md, "Moments"): `step:N` is the peak of step
/// N, `step:N:end` its last event. Steps are numbered from 0 as `leaks` lists them; a negative N
/// counts from the last (-1). As --from, `step:N` is where step N begins; as --to, where it ends.
struct StepMoment {
  enum class Part : uint8_t { kDefault, kPeak, kEnd };
  int64_t number = 0;
  Part part = Part::kDefault;
};

/// A moment flag as the user wrote it and as parsed (analysis::ParseMoment): `--at peak`.
struct MomentArg {
  std::string flag = "--at";
  std::string text = "peak";
  analysis::Moment moment;
  /// A step moment; `moment` is then a placeholder until ResolveMomentArg (or ResolveWindow)
  /// finds the steps of the file.
  std::optional<StepMoment> step;
  /// How steps are found (--step-annotation, --device): analysis::DetectSteps, as `leaks` does.
  analysis::StepOptions steps;
  /// After ResolveMomentArg, for a step: what the moment is ("step 3 (events 69..90, by
  /// annotation train_step): its peak, event:85 (+0.085 s)").
  std::string described;
};
/// Parses `text` as the moment of `flag`; errors name the flag.
absl::StatusOr<MomentArg> ParseMomentArg(std::string_view flag, std::string_view text);
/// The moment resolved on every device of `timeline` (analysis::ResolveMoment), after checking
/// it lies within each device's trace (analysis::CheckMoment): the one place a moment of the
/// grammar becomes a point of the trace. A step moment is found on the device its steps are found
/// on (StepOptions::device, else the busiest) and `arg.moment` becomes that point: the event
/// there when that device alone has events, else its time, which the other devices take as any
/// time. Timelines of step moments need their live curve (periodicity) and every lifetime
/// (NeedsFor).
struct ResolvedMoment {
  MomentArg arg;
  std::vector<std::pair<int32_t, analysis::TimelinePoint>> points;  // (device, point)
};
absl::StatusOr<ResolvedMoment> ResolveMomentArg(const MomentArg& arg, const Snapshot& snap,
                                                const analysis::Timeline& timeline);
/// The timeline options a query at `arg` needs, from those it needs at a plain moment: a step
/// moment is not known before the read, so every lifetime is kept, and the curve finds the steps.
analysis::TimelineOptions TimelineOptionsAt(const MomentArg& arg, analysis::TimelineOptions to);
/// The point of step moment `arg` on device `dt` of `timeline`: the steps of that device
/// (DetectSteps); as `from`, where the step begins. Errors name the flag: no steps found (why),
/// a step number past the last. Fills `described` when given.
absl::StatusOr<analysis::TimelinePoint> StepPoint(const MomentArg& arg, const Snapshot& snap,
                                                  const analysis::Timeline& timeline,
                                                  const analysis::DeviceTimeline& dt, bool from,
                                                  std::string* described = nullptr);

// ---- Several files (one per rank, a directory, a glob) ----

/// One input of a multi-file query.
struct InputFile {
  std::string path;
  bool from_directory = false;  // found by listing a directory (non-snapshots are then skipped)
};

/// Expands the inputs: a directory becomes the entries io::ListInputDirectory lists (sorted; hidden
/// files and .md files left out; an entry that cannot be read as a file is kept, and fails when it
/// is opened), other paths stay as given. Errors name the directory that cannot be listed or holds
/// nothing to read.
absl::StatusOr<std::vector<InputFile>> ExpandInputs(const std::vector<std::string>& inputs);

/// ExpandInputs' paths alone.
absl::StatusOr<std::vector<std::string>> ExpandInputPaths(const std::vector<std::string>& inputs);

/// Opens every path (needs[i] for paths[i]) side by side on up to settings.threads threads,
/// keeping every session (a diff's two files). Warnings in path order; the first failed read, in
/// path order, is the error.
absl::StatusOr<std::vector<Session>> OpenAll(const std::vector<std::string>& paths,
                                             const std::vector<Needs>& needs,
                                             const ReadSettings& settings);

/// A file ForEachFile left out of its results, and why (the reader's error without the path).
using analysis::LeftOutFile;

/// What ForEachFile left out. A file found in a directory whose content is not a snapshot at all
/// (parse::IsNotASnapshot: a README, a manifest) is skipped, with a warning. A snapshot that fails
/// to read (truncated, corrupt, empty), or a file given by name that is not a snapshot, is
/// unreadable: an error, never a skip.
struct LeftOut {
  /// In: true lists unreadable files in `unreadable` and goes on with the others (a CI gate that
  /// reports every rank); false (the default) fails the whole call with the first one's error.
  bool keep_going = false;
  std::vector<LeftOutFile> skipped;     // in input order
  std::vector<LeftOutFile> unreadable;  // in input order; only with keep_going
};

/// The share of settings.threads each of `files` files gets when they are read side by side (at
/// least 1): files side by side first, the threads left over decode within each file.
int ThreadsPerFile(const ReadSettings& settings, size_t files);

/// Opens every file (with `needs`) in parallel and runs `fn` on each session on its worker, so
/// only the results, not the snapshots, are kept; results come back in input order, each with
/// its path. Warnings go to settings.warn in input order. Skipped and unreadable files: LeftOut.
template <class R>
using PerFile = std::vector<std::pair<std::string, R>>;
template <class R>
absl::StatusOr<PerFile<R>> ForEachFile(const std::vector<InputFile>& files, const Needs& needs,
                                       const ReadSettings& settings,
                                       const std::function<absl::StatusOr<R>(Session&)>& fn,
                                       LeftOut* left_out = nullptr);

namespace internal {
/// What became of one input of OpenEach.
enum class Opened : char { kRead, kSkipped, kUnreadable };
/// Opens files[i] in parallel, calling fn(i, session) on the worker; per-file status (fn's, or
/// why the file was left out) and in `opened` what became of each.
std::vector<absl::Status> OpenEach(const std::vector<InputFile>& files, const Needs& needs,
                                   const ReadSettings& settings,
                                   const std::function<absl::Status(size_t, Session&)>& fn,
                                   std::vector<Opened>& opened);
/// Collects OpenEach's outcome into results and `left_out` (see ForEachFile).
absl::Status Collect(const std::vector<InputFile>& files, const std::vector<absl::Status>& status,
                     const std::vector<Opened>& opened, LeftOut* left_out,
                     std::vector<size_t>& kept);
}  // namespace internal

template <class R>
absl::StatusOr<PerFile<R>> ForEachFile(const std::vector<InputFile>& files, const Needs& needs,
                                       const ReadSettings& settings,
                                       const std::function<absl::StatusOr<R>(Session&)>& fn,
                                       LeftOut* left_out) {
  std::vector<std::optional<R>> results(files.size());
  std::vector<internal::Opened> opened;
  std::vector<absl::Status> status = internal::OpenEach(
      files, needs, settings,
      [&](size_t i, Session& s) -> absl::Status {
        absl::StatusOr<R> r = fn(s);
        if (!r.ok()) return r.status();
        results[i] = *std::move(r);
        return absl::OkStatus();
      },
      opened);
  std::vector<size_t> kept;
  absl::Status st = internal::Collect(files, status, opened, left_out, kept);
  if (!st.ok()) return st;
  PerFile<R> out;
  for (size_t i : kept) out.emplace_back(files[i].path, *std::move(results[i]));
  return out;
}

}  // namespace memsnap::query
