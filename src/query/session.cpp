#include "memsnap/query/session.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "memsnap/io/input.h"
#include "memsnap/model/copy.h"
#include "memsnap/parse/reader.h"
#include "memsnap/query/leaks.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::query {

namespace {

// A file's warnings, kept on its worker and passed on in input order afterwards.
struct KeptWarning {
  std::string path, message;
  bool skipped;
};
using KeptWarnings = std::vector<std::vector<KeptWarning>>;

// A sink that keeps the warnings of file `i` in `kept[i]`.
WarningSink KeepWarnings(KeptWarnings& kept, size_t i) {
  return [&kept, i](const Warning& w) {
    kept[i].push_back({std::string(w.path), std::string(w.message), w.skipped});
  };
}

// Passes the kept warnings on to `sink`, file by file.
void PassOn(const KeptWarnings& kept, const WarningSink& sink) {
  if (!sink) return;
  for (const auto& file : kept) {
    for (const KeptWarning& w : file) sink({w.path, w.message, w.skipped});
  }
}

// Reads one snapshot with the settings; `events`, when given, is told of the trace events as
// they are decoded. The snapshot's diagnostics go to settings.warn (at most ten, then a count).
absl::StatusOr<Snapshot> Read(const std::string& path, const ReadSettings& settings,
                              parse::EventObserver* events) {
  // Draws only on a terminal and only when reading takes more than about a second.
  std::optional<ProgressBar> bar;
  if (settings.progress) {
    bar.emplace("reading " + path, 0, ProgressOptions::Default());
    bar->StartTicker();
  }
  parse::ReadOptions options;
  options.strict = settings.strict;
  options.events = events;
  options.threads = settings.threads;
  options.max_memory = settings.max_memory;
  // A snapshot already in memory (the Python module's) is copied: the query owns what it reads.
  // `events` hears nothing, so a timeline streamed from it is rebuilt from the copy
  // (TimelineStream::Finish).
  const std::shared_ptr<const Snapshot>* in_memory = nullptr;
  if (settings.preloaded != nullptr) {
    if (auto it = settings.preloaded->find(path); it != settings.preloaded->end()) {
      in_memory = &it->second;
    }
  }
  // A name of a snapshot in memory (the Python module's start with a NUL byte) is never a path:
  // one that names none is refused, not cut at the NUL and read from disk.
  if (in_memory == nullptr && path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        "a name holding a NUL byte is not a file, and no snapshot in memory has it");
  }
  absl::StatusOr<Snapshot> snap =
      in_memory != nullptr ? CopySnapshot(**in_memory) : parse::ReadSnapshot(path, options);
  if (!snap.ok()) return snap.status();
  // A snapshot in memory is told by its own name (Python's `name=`), not the handle.
  const std::string& label = in_memory != nullptr ? snap->source.path : path;
  if (settings.strict && !snap->diagnostics.empty()) return snap->diagnostics.AsError(label);
  if (settings.warn) {
    for (const std::string& w : snap->diagnostics.Shown()) settings.warn({label, w});
  }
  return snap;
}

}  // namespace

absl::Status WithPath(std::string_view path, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrCat(Sv(path), ": ", status.message()));
}

Needs NeedsTimeline(const analysis::TimelineOptions& options) {
  Needs n;
  n.timeline = options;
  return n;
}

Session::Session(Snapshot snapshot, absl::StatusOr<analysis::Timeline> timeline,
                 std::optional<analysis::TimelineOptions> options, bool streamed)
    : snapshot_(std::move(snapshot)),
      timeline_(std::move(timeline)),
      options_(std::move(options)),
      streamed_(streamed) {}

absl::StatusOr<Session> Session::Open(const std::string& path, const Needs& needs,
                                      const ReadSettings& settings) {
  if (!needs.timeline) {
    absl::StatusOr<Snapshot> snap = Read(path, settings, nullptr);
    if (settings.clock != nullptr) settings.clock->ReadDone();
    if (!snap.ok()) return snap.status();
    Session session(*std::move(snap), absl::FailedPreconditionError("no timeline was asked for"),
                    std::nullopt, false);
    session.categories_ = settings.categories;
    return session;
  }
  const analysis::TimelineOptions& options = *needs.timeline;
  // The curve is sized as the reader sizes its events, instead of growing by doubling on the
  // worker (a gzipped file may still outgrow it).
  std::error_code ec;
  const uintmax_t bytes = path == "-" ? 0 : std::filesystem::file_size(path, ec);
  analysis::TimelineStream stream(options, ec ? 0 : parse::EventsReservedFor(bytes));
  std::optional<parse::BackgroundEventFeed> feed;  // declared after `stream`: it feeds it
  if (analysis::TimelineStream::Streams(options)) {
    // With one thread the pass still streams, inline as the reader publishes.
    feed.emplace(
        [&stream](std::span<const TraceEvent> events, size_t first,
                  std::span<const int64_t> streams) { stream.Feed(events, first, streams); },
        ThreadsFor(settings.threads) > 1);
  }
  absl::StatusOr<Snapshot> snap = Read(path, settings, feed ? &*feed : nullptr);
  if (settings.clock != nullptr) settings.clock->ReadDone();
  if (!snap.ok()) return snap.status();
  size_t fed = 0;
  if (feed) {
    feed->Release();  // the reader already waited; this orders the worker's writes before ours
    if (feed->out_of_memory()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": out of memory building the timeline of ", snap->events.size(),
                       " trace entries (is the address space limited? ulimit -v)"));
    }
    fed = feed->fed();
  }
  absl::StatusOr<analysis::Timeline> tl = stream.Finish(*snap, fed);
  const bool streamed = stream.used_stream();
  Session session(*std::move(snap), std::move(tl), options, streamed);
  session.categories_ = settings.categories;
  return session;
}

Session Session::FromSnapshot(Snapshot snapshot, const Needs& needs,
                              analysis::CategoryNames categories) {
  absl::StatusOr<analysis::Timeline> tl =
      needs.timeline ? analysis::ReconstructTimeline(snapshot, *needs.timeline)
                     : absl::StatusOr<analysis::Timeline>(
                           absl::FailedPreconditionError("no timeline was asked for"));
  Session session(std::move(snapshot), std::move(tl), needs.timeline, false);
  session.categories_ = std::move(categories);
  return session;
}

absl::StatusOr<const analysis::Timeline*> Session::timeline() const {
  if (!timeline_.ok()) {
    return WithPath(path(), timeline_.status());
  }
  return &*timeline_;
}

bool TimelineCovers(const analysis::TimelineOptions& have, const analysis::TimelineOptions& want) {
  if (have.device != want.device) return false;
  if (want.curve && !have.curve) return false;
  switch (want.keep) {
    case analysis::KeepLifetimes::kNone:
      return true;
    case analysis::KeepLifetimes::kAll:
      return have.keep == analysis::KeepLifetimes::kAll;
    case analysis::KeepLifetimes::kLiveAt:
      return have.keep == analysis::KeepLifetimes::kAll ||
             (have.keep == analysis::KeepLifetimes::kLiveAt &&
              have.moment.kind == want.moment.kind && have.moment.value == want.moment.value);
  }
  return false;
}

absl::StatusOr<const analysis::Timeline*> Session::TimelineFor(
    const analysis::TimelineOptions& options) {
  if (options_ && TimelineCovers(*options_, options)) return timeline();
  for (const auto& [have, tl] : extra_) {
    if (TimelineCovers(have, options)) return &tl;
  }
  absl::StatusOr<analysis::Timeline> tl = analysis::ReconstructTimeline(snapshot_, options);
  if (!tl.ok()) {
    return WithPath(path(), tl.status());
  }
  extra_.emplace_back(options, *std::move(tl));
  return &extra_.back().second;
}

namespace {

// `step:N`, `step:N:peak`, `step:N:end`; nullopt when `text` is no step moment.
absl::StatusOr<std::optional<StepMoment>> ParseStep(std::string_view flag, std::string_view text) {
  if (!text.starts_with("step:")) return std::optional<StepMoment>();
  std::string_view rest = text.substr(5);
  StepMoment step;
  const size_t colon = rest.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view part = rest.substr(colon + 1);
    rest = rest.substr(0, colon);
    if (part == "peak") {
      step.part = StepMoment::Part::kPeak;
    } else if (part == "end") {
      step.part = StepMoment::Part::kEnd;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(Sv(flag), " ", Sv(text), ": expected step:N, step:N:peak or step:N:end"));
    }
  }
  if (!absl::SimpleAtoi(Sv(rest), &step.number)) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(flag), " ", Sv(text),
                     ": not a step number; steps count from 0 as `memsnap leaks` lists them "
                     "(step:0, step:3; step:-1 is the last)"));
  }
  return std::optional<StepMoment>(step);
}

}  // namespace

absl::StatusOr<MomentArg> ParseMomentArg(std::string_view flag, std::string_view text) {
  MomentArg arg;
  arg.flag = std::string(flag);
  arg.text = std::string(text);
  ASSIGN_OR_RETURN(arg.step, ParseStep(flag, text));
  if (arg.step) return arg;  // the point is known once the file's steps are (ResolveMomentArg)
  ASSIGN_OR_RETURN(arg.moment, analysis::ParseMoment(text, flag));
  return arg;
}

analysis::TimelineOptions TimelineOptionsAt(const MomentArg& arg, analysis::TimelineOptions to) {
  if (!arg.step) return to;
  to.keep = analysis::KeepLifetimes::kAll;
  to.moment = analysis::Moment{};
  to.curve = true;
  return to;
}

absl::StatusOr<analysis::TimelinePoint> StepPoint(const MomentArg& arg, const Snapshot& snap,
                                                  const analysis::Timeline& timeline,
                                                  const analysis::DeviceTimeline& dt, bool from,
                                                  std::string* described) {
  const StepMoment& step = *arg.step;
  analysis::StepOptions options = arg.steps;
  options.device = dt.device;
  absl::StatusOr<analysis::StepInfo> found = analysis::DetectSteps(snap, timeline, options);
  if (!found.ok()) {
    return absl::Status(found.status().code(),
                        absl::StrCat(arg.flag, " ", arg.text, ": ", found.status().message()));
  }
  const analysis::StepInfo& info = *found;
  const int64_t n = static_cast<int64_t>(info.ranges.size());
  const std::string why = StepsNote(info);  // why so few steps were found, when it is known
  if (n == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        arg.flag, " ", arg.text, ": no steps found on device ", dt.device,
        why.empty() ? "" : absl::StrCat(" (", why, ")"),
        "; give --step-annotation GLOB, or a moment of another kind (event:N, a time)"));
  }
  const int64_t k = step.number < 0 ? n + step.number : step.number;
  if (k < 0 || k >= n) {
    return absl::InvalidArgumentError(
        absl::StrCat(arg.flag, " ", arg.text, ": out of range: device ", dt.device, " has ", n,
                     n == 1 ? " step" : " steps", " (step:0 to step:", n - 1, ", found by ",
                     info.method, ")", n == 1 && !why.empty() ? absl::StrCat("; ", why) : ""));
  }
  const analysis::StepRange& range = info.ranges[static_cast<size_t>(k)];
  const int64_t begin = range.first_event();
  const int64_t end = range.end_event();  // exclusive
  using Part = StepMoment::Part;
  analysis::TimelinePoint p;
  std::string which;
  if (from && step.part == Part::kDefault) {
    p = analysis::TimelinePoint::Before(static_cast<uint32_t>(begin));
    which = "its start";
  } else if (step.part == Part::kEnd || (step.part == Part::kDefault && arg.flag == "--to")) {
    p = analysis::TimelinePoint::After(static_cast<uint32_t>(end - 1));
    which = "its end";
  } else {
    std::optional<analysis::LiveCurveRef> curve = dt.live_curve();
    if (!curve) return absl::InternalError("the peak of a step needs a timeline with its curve");
    p = analysis::TimelinePoint::After(static_cast<uint32_t>(begin));
    for (int64_t e = begin; e < end; ++e) {
      const analysis::TimelinePoint at = analysis::TimelinePoint::After(static_cast<uint32_t>(e));
      if (curve->At(at) > curve->At(p)) p = at;
    }
    which = "its peak";
  }
  if (described != nullptr) {
    *described =
        absl::StrCat("step ", k, " (events ", begin, "..", end - 1, ", found by ", info.method,
                     "): ", which, ", ", analysis::DescribeEvent(snap, dt, p));
  }
  return p;
}

absl::StatusOr<ResolvedMoment> ResolveMomentArg(const MomentArg& arg, const Snapshot& snap,
                                                const analysis::Timeline& timeline) {
  ResolvedMoment r;
  r.arg = arg;
  if (arg.step) {
    // The steps' device: the one asked for, else the busiest (as DetectSteps picks it).
    const analysis::DeviceTimeline* dt = nullptr;
    int with_events = 0;
    for (const analysis::DeviceTimeline& d : timeline.devices) {
      with_events += d.num_events > 0;
      if (arg.steps.device ? d.device == *arg.steps.device
                           : dt == nullptr || d.num_events > dt->num_events) {
        dt = &d;
      }
    }
    if (dt == nullptr || dt->num_events == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          arg.flag, " ", arg.text,
          dt == nullptr ? ": no such device" : ": the file has no trace, so no steps"));
    }
    ASSIGN_OR_RETURN(analysis::TimelinePoint p,
                     StepPoint(arg, snap, timeline, *dt, false, &r.arg.described));
    const int64_t time = dt->TimeOf(snap, p);
    if (with_events > 1 && dt->has_time && time != kNoTime) {
      r.arg.moment = analysis::Moment{analysis::Moment::Kind::kTime, time};
    } else {
      r.arg.moment = analysis::Moment{analysis::Moment::Kind::kEvent, p.index()};
    }
    r.arg.step.reset();
    for (const analysis::DeviceTimeline& d : timeline.devices) {
      if (&d == dt) {
        r.points.emplace_back(d.device, p);
      } else {
        // The same time on another device, clamped to its trace.
        r.points.emplace_back(d.device, analysis::ResolveMoment(snap, d, r.arg.moment));
      }
    }
    return r;
  }
  for (const analysis::DeviceTimeline& dt : timeline.devices) {
    RETURN_IF_ERROR(analysis::CheckMoment(snap, dt, arg.moment, arg.flag, arg.text));
    r.points.emplace_back(dt.device, analysis::ResolveMoment(snap, dt, arg.moment));
  }
  return r;
}

absl::StatusOr<std::vector<InputFile>> ExpandInputs(const std::vector<std::string>& inputs) {
  std::vector<InputFile> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      ASSIGN_OR_RETURN(std::vector<std::string> files, io::ListInputDirectory(in));
      if (files.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            in, ": the directory holds no file to read (hidden files and .md files are not read)"));
      }
      for (auto& f : files) out.push_back(InputFile{std::move(f), true});
    } else {
      out.push_back(InputFile{in, false});
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("no input files");
  return out;
}

absl::StatusOr<std::vector<std::string>> ExpandInputPaths(const std::vector<std::string>& inputs) {
  ASSIGN_OR_RETURN(std::vector<InputFile> files, ExpandInputs(inputs));
  std::vector<std::string> out;
  for (InputFile& f : files) out.push_back(std::move(f.path));
  return out;
}

absl::StatusOr<std::vector<Session>> OpenAll(const std::vector<std::string>& paths,
                                             const std::vector<Needs>& needs,
                                             const ReadSettings& settings) {
  const size_t n = paths.size();
  const size_t side_by_side = std::min(ThreadsFor(settings.threads), n);
  std::vector<std::optional<absl::StatusOr<Session>>> opened(n);
  KeptWarnings warnings(n);
  ParallelFor(
      n,
      [&](size_t i) {
        ReadSettings local = settings;
        if (side_by_side > 1) {
          local.progress = false;  // one line per file would interleave
          if (settings.warn) local.warn = KeepWarnings(warnings, i);
        }
        local.clock = nullptr;
        // The threads left over run the timelines' event passes beside the readers.
        local.threads = ThreadsPerFile(settings, n);
        local.max_memory = settings.max_memory / std::max<size_t>(1, side_by_side);
        if (side_by_side <= 1 && i > 0 && !opened[i - 1]->ok()) {  // one at a time: stop there
          opened[i] = opened[i - 1]->status();
          return;
        }
        opened[i] = Session::Open(paths[i], needs[i], local);
      },
      side_by_side);
  if (settings.clock != nullptr) settings.clock->ReadDone();
  std::vector<Session> out;
  PassOn(warnings, settings.warn);
  for (size_t i = 0; i < n; ++i) {
    if (!opened[i]->ok()) return opened[i]->status();
    out.push_back(*std::move(*opened[i]));
  }
  return out;
}

int ThreadsPerFile(const ReadSettings& settings, size_t files) {
  const size_t threads = ThreadsFor(settings.threads);
  const size_t side_by_side = std::max<size_t>(1, std::min(threads, files));
  return static_cast<int>(std::max<size_t>(1, threads / side_by_side));
}

namespace internal {

namespace {
// `status`'s message without `path: ` in front (the reason a file was left out).
std::string ReasonOf(const std::string& path, const absl::Status& status) {
  std::string_view m = ToStd(status.message());
  const std::string prefix = path + ": ";
  if (m.substr(0, prefix.size()) == prefix) m.remove_prefix(prefix.size());
  return std::string(m);
}
}  // namespace

std::vector<absl::Status> OpenEach(const std::vector<InputFile>& files, const Needs& needs,
                                   const ReadSettings& settings,
                                   const std::function<absl::Status(size_t, Session&)>& fn,
                                   std::vector<Opened>& opened) {
  std::vector<absl::Status> status(files.size());
  KeptWarnings warnings(files.size());
  opened.assign(files.size(), Opened::kRead);  // each worker writes its own element
  // Files side by side, and the threads left over decode within each file (never more threads
  // than settings.threads asks for in all).
  const size_t threads = ThreadsFor(settings.threads);
  const size_t side_by_side = std::max<size_t>(1, std::min(threads, files.size()));
  ParallelFor(
      files.size(),
      [&](size_t i) {
        ReadSettings local = settings;
        local.progress = false;  // one line per file would interleave
        local.clock = nullptr;
        local.threads = ThreadsPerFile(settings, files.size());
        local.max_memory = settings.max_memory / side_by_side;  // the files read at once share it
        if (settings.warn) local.warn = KeepWarnings(warnings, i);
        absl::StatusOr<Session> s = Session::Open(files[i].path, needs, local);
        if (!s.ok()) {
          status[i] = s.status();
          // A directory may hold other files (a README, a manifest): skip what is not a snapshot
          // at all. A snapshot that fails to read (a truncated rank) is never skipped: a gate
          // that passed on the ranks it could read would pass on what it never saw.
          if (files[i].from_directory && parse::IsNotASnapshot(s.status())) {
            opened[i] = Opened::kSkipped;
            if (local.warn) {
              local.warn({files[i].path, ToStd(s.status().message()), true});
            }
          } else {
            opened[i] = Opened::kUnreadable;
          }
        } else {
          status[i] = fn(i, *s);
        }
      },
      side_by_side);
  PassOn(warnings, settings.warn);
  return status;
}

absl::Status Collect(const std::vector<InputFile>& files, const std::vector<absl::Status>& status,
                     const std::vector<Opened>& opened, LeftOut* left_out,
                     std::vector<size_t>& kept) {
  std::vector<LeftOutFile> skipped, unreadable;
  const bool keep_going = left_out != nullptr && left_out->keep_going;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& path = files[i].path;
    if (opened[i] == Opened::kSkipped) {
      skipped.push_back({path, ReasonOf(path, status[i])});
    } else if (opened[i] == Opened::kUnreadable && keep_going) {
      unreadable.push_back({path, ReasonOf(path, status[i])});
    } else if (!status[i].ok()) {
      return status[i];
    } else {
      kept.push_back(i);
    }
  }
  if (kept.empty() && unreadable.empty()) {
    std::string names;
    for (const LeftOutFile& f : skipped) {
      absl::StrAppend(&names, names.empty() ? " (skipped: " : ", ", f.path);
    }
    return absl::InvalidArgumentError(
        absl::StrCat("no snapshot files among the inputs", names, names.empty() ? "" : ")"));
  }
  if (left_out != nullptr) {
    left_out->skipped = std::move(skipped);
    left_out->unreadable = std::move(unreadable);
  }
  return absl::OkStatus();
}

}  // namespace internal

}  // namespace memsnap::query
