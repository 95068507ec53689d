#include "memsnap/cli/common.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/io/output.h"
#include "memsnap/model/copy.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/util/format.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

namespace {
// The snapshot `path` names among the inputs already in memory (Context::preloaded), or null.
const Snapshot* Preloaded(const std::string& path, const Context& ctx) {
  if (ctx.preloaded == nullptr) return nullptr;
  auto it = ctx.preloaded->find(path);
  return it == ctx.preloaded->end() ? nullptr : it->second.get();
}

absl::StatusOr<Snapshot> ReadOrCopy(const std::string& path, Context& ctx,
                                    parse::EventObserver* events) {
  // A snapshot in memory is copied: the command owns what it loads. `events` hears nothing, so a
  // timeline streamed from it is rebuilt from the copy (TimelineStream::Finish).
  if (const Snapshot* in_memory = Preloaded(path, ctx)) return CopySnapshot(*in_memory);
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
  options.max_memory = ctx.max_memory;
  return parse::ReadSnapshot(path, options);
}
}  // namespace

absl::StatusOr<Snapshot> LoadSnapshot(const std::string& path, Context& ctx,
                                      parse::EventObserver* events) {
  absl::StatusOr<Snapshot> snap = ReadOrCopy(path, ctx, events);
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
    if (feed->out_of_memory()) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": out of memory building the timeline of ", snap->events.size(),
                       " trace entries (is the address space limited? ulimit -v)"));
    }
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
        local.max_memory = ctx.max_memory / side_by_side;  // the files read at once share it
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

void AddOutputLimitFlags(CLI::App& sub, OutputLimitFlags& flags) {
  sub.add_option("--max-output", flags.max_output,
                 "Refuse to write JSON larger than this, estimated before writing (default: 16GiB "
                 "or 64x the input, whichever is larger; JSON repeats every stack in full; the "
                 "global --force writes it anyway)");
}

absl::Status CheckOutputSize(const std::string& output, uint64_t estimate, const std::string& input,
                             uint64_t input_bytes, bool compressed, const OutputLimitFlags& flags,
                             bool force) {
  if (force) return absl::OkStatus();
  uint64_t limit = std::max<uint64_t>(uint64_t{16} << 30, 64 * input_bytes);
  std::string limit_from = "the default limit, 16 GiB or 64x the input";
  if (!flags.max_output.empty()) {
    absl::StatusOr<int64_t> bytes = ParseSize(flags.max_output);
    if (!bytes.ok() || *bytes < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--max-output: not a size: '", flags.max_output, "'"));
    }
    limit = static_cast<uint64_t>(*bytes);
    limit_from = "--max-output";
  }
  auto refuse = [&](std::string_view over) {
    std::string ratio;
    if (input_bytes > 0)
      ratio = absl::StrCat(", ", estimate / input_bytes, "x the ",
                           FormatBytes(static_cast<int64_t>(input_bytes)), " input ", input);
    return absl::InvalidArgumentError(absl::StrCat(
        output == "-" ? std::string("stdout") : output,
        compressed ? ": the JSON (before gzip) would be about " : ": the JSON would be about ",
        FormatBytes(static_cast<int64_t>(estimate)), " (", estimate, " bytes", ratio,
        ": JSON repeats every stack in full where a pickle shares it), over ", Sv(over),
        "; nothing was written. --force writes it anyway; ",
        compressed ? "a pickle is far smaller" : "a pickle, or --gzip, is far smaller"));
  };
  if (estimate > limit) {
    return refuse(absl::StrCat(FormatBytes(static_cast<int64_t>(limit)), " (", limit_from, ")"));
  }
  if (output != "-" && !compressed) {
    std::filesystem::path dir = std::filesystem::absolute(output).parent_path();
    struct statvfs fs;
    if (::statvfs(dir.c_str(), &fs) == 0) {
      const uint64_t free = static_cast<uint64_t>(fs.f_bavail) * fs.f_frsize;
      if (estimate > free) {
        return refuse(absl::StrCat("the ", FormatBytes(static_cast<int64_t>(free)),
                                   " free on the file system of ", dir.string()));
      }
    }
  }
  return absl::OkStatus();
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
        local.max_memory = ctx.max_memory / side_by_side;  // the files read at once share it
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

namespace {
constexpr const char* kInputMark = "memsnap-input";
constexpr const char* kOutputMark = "memsnap-output";

CLI::Validator Mark(const char* name) {
  return CLI::Validator([](std::string&) { return std::string(); }, "", name);
}

bool HasMark(CLI::Option& opt, const char* name) {
  try {
    return opt.get_validator(name) != nullptr;
  } catch (const CLI::OptionNotFound&) {
    return false;
  }
}

// "--folded" for a flag, "output" for a positional.
std::string FlagLabel(const CLI::Option& opt) {
  return opt.nonpositional() ? opt.get_name() : opt.get_name(true);
}

// The first 64 KiB of `path`, enough to tell a snapshot (parse::LooksLikeSnapshot).
std::string Head(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::string head(64 << 10, '\0');
  f.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(f.gcount()));
  return head;
}
}  // namespace

CLI::Validator InputPaths() { return Mark(kInputMark); }
CLI::Validator OutputPath() { return Mark(kOutputMark); }

absl::Status CheckOutputPath(std::string_view flag, const std::string& path,
                             const std::vector<std::string>& inputs, bool force) {
  if (path.empty() || path == "-") return absl::OkStatus();
  struct stat out;
  if (::stat(path.c_str(), &out) != 0 || !S_ISREG(out.st_mode)) return absl::OkStatus();
  const std::string label = flag.empty() ? path : absl::StrCat(Sv(flag), " ", path);
  auto same = [&](const std::string& in) {
    struct stat st;
    return ::stat(in.c_str(), &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino;
  };
  for (const std::string& in : inputs) {
    if (in == "-") continue;
    std::vector<std::string> files{in};
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      files.clear();
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        files.push_back(entry.path().string());
      }
    }
    for (const std::string& f : files) {
      if (same(f)) {
        return absl::InvalidArgumentError(absl::StrCat(label, ": ", path,
                                                       " is the same file as the input ", f,
                                                       "; refusing to write over it"));
      }
    }
  }
  if (!force && parse::LooksLikeSnapshot(Head(path))) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": ", path, " is a memory snapshot; refusing to overwrite it (use --force)"));
  }
  return absl::OkStatus();
}

absl::Status CheckOutputs(CLI::App& sub, Context& ctx) {
  ctx.inputs.clear();
  std::vector<CLI::Option*> outputs;
  for (CLI::Option* opt : sub.get_options()) {
    if (HasMark(*opt, kInputMark)) {
      for (const std::string& v : opt->results()) ctx.inputs.push_back(v);
    } else if (HasMark(*opt, kOutputMark)) {
      outputs.push_back(opt);
    }
  }
  for (CLI::Option* opt : outputs) {
    for (const std::string& v : opt->results()) {
      RETURN_IF_ERROR(CheckOutputPath(FlagLabel(*opt), v, ctx.inputs, ctx.force));
    }
  }
  return absl::OkStatus();
}

absl::Status WriteOutput(const std::string& path, Context& ctx,
                         const std::function<absl::Status(std::ostream&)>& write,
                         std::string_view flag, uint64_t* bytes) {
  if (path == "-") {
    absl::Status st = write(*ctx.out);
    ctx.out->flush();
    return st;
  }
  RETURN_IF_ERROR(CheckOutputPath(flag, path, ctx.inputs, ctx.force));
  return io::WriteFileAtomically(path, write, bytes);
}

absl::Status WriteOutputFile(const std::string& path, std::string_view content, Context& ctx) {
  return WriteOutput(path, ctx, [&](std::ostream& out) {
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    return absl::OkStatus();
  });
}

}  // namespace memsnap::cli
