#include "memsnap/cli/common.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/io/input.h"
#include "memsnap/io/output.h"
#include "memsnap/parse/reader.h"
#include "memsnap/report/export_tables.h"
#include "memsnap/util/format.h"
#include "memsnap/util/parallel.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

absl::StatusOr<analysis::UserCategories> ReadUserCategories(const std::vector<std::string>& files,
                                                            const std::vector<std::string>& flags) {
  analysis::UserCategories list;
  for (const std::string& path : files) {
    std::ifstream in(path);
    if (!in) {
      return absl::InvalidArgumentError(
          absl::StrCat("--categories ", path, ": cannot read: ", std::strerror(errno)));
    }
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const size_t first = line.find_first_not_of(" \t");
      if (first == std::string::npos || line[first] == '#') continue;
      const size_t last = line.find_last_not_of(" \t");
      auto where = [&] { return absl::StrCat("--categories ", path, ":", number, ": "); };
      absl::StatusOr<analysis::UserCategory> c =
          analysis::ParseUserCategory(std::string_view(line).substr(first, last - first + 1));
      if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat(where(), c.status().message()));
      if (absl::Status st = analysis::AddUserCategory(list, std::move(*c)); !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where(), st.message()));
      }
    }
    if (in.bad()) {
      return absl::InvalidArgumentError(absl::StrCat("--categories ", path, ": read failed"));
    }
  }
  for (const std::string& flag : flags) {
    absl::StatusOr<analysis::UserCategory> c = analysis::ParseUserCategory(flag);
    if (!c.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--category ", flag, ": ", c.status().message()));
    }
    if (absl::Status st = analysis::AddUserCategory(list, std::move(*c)); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--category ", flag, ": ", st.message()));
    }
  }
  return list;
}

query::ReadSettings ReadSettingsOf(const Context& ctx, ReadAnalysisClock* clock) {
  query::ReadSettings s;
  s.strict = ctx.strict;
  s.threads = ctx.threads;
  s.max_memory = ctx.max_memory;
  s.progress = ctx.progress && !ctx.quiet;
  s.clock = clock;
  s.preloaded = ctx.preloaded;
  s.categories = ctx.categories;
  if (!ctx.quiet) {
    std::ostream* err = ctx.err;
    s.warn = [err](const query::Warning& w) {
      if (w.skipped) {
        *err << "warning: skipping " << w.path << ": " << w.message << "\n";
      } else {
        *err << "warning: " << w.path << ": " << w.message << "\n";
      }
    };
  }
  return s;
}

absl::StatusOr<query::Session> OpenSession(const std::string& path, const query::Needs& needs,
                                           const Context& ctx, ReadAnalysisClock* clock) {
  return query::Session::Open(path, needs, ReadSettingsOf(ctx, clock));
}

absl::StatusOr<std::optional<int64_t>> SizeFlag(std::string_view flag, const std::string& text) {
  if (text.empty()) return std::optional<int64_t>();
  absl::StatusOr<int64_t> v = ParseSize(text);
  if (!v.ok())
    return absl::InvalidArgumentError(absl::StrCat(Sv(flag), ": ", v.status().message()));
  return std::optional<int64_t>(*v);
}

absl::StatusOr<std::optional<int64_t>> DeviceSizeFlag(std::string_view flag,
                                                      const std::string& text) {
  ASSIGN_OR_RETURN(std::optional<int64_t> bytes, SizeFlag(flag, text));
  const bool bare = !text.empty() && std::all_of(text.begin(), text.end(),
                                                 [](char c) { return c >= '0' && c <= '9'; });
  if (bytes && bare && *bytes > 0 && *bytes < (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(Sv(flag), " ", text, ": that is ", text,
                                                   " bytes; write the unit, e.g. ", text, "GiB"));
  }
  return bytes;
}

absl::StatusOr<std::optional<double>> RatioFlag(std::string_view flag, const std::string& text) {
  if (text.empty()) return std::optional<double>();
  absl::StatusOr<double> v = ParseRatio(text);
  if (!v.ok())
    return absl::InvalidArgumentError(absl::StrCat(Sv(flag), ": ", v.status().message()));
  return std::optional<double>(*v);
}

void AddStepFlags(CLI::App& sub, StepFlags& flags) {
  sub.add_option("--step-annotation", flags.annotation,
                 "For step:N moments: steps are the START..END ranges of the annotations this "
                 "name or glob names (ProfilerStep#*); default: ProfilerStep#* when the file has "
                 "it, else the optimizer's steps, else periodicity (docs/leaks.md)");
}

absl::StatusOr<query::MomentArg> MomentFlag(std::string_view flag, const std::string& text,
                                            const StepFlags* steps, analysis::DeviceFilter device) {
  ASSIGN_OR_RETURN(query::MomentArg arg, query::ParseMomentArg(flag, text));
  if (arg.step && steps == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(Sv(flag), " ", text,
                     ": this command takes no step moments; top, blocks, timeline and diff do "
                     "(or give event:N, a time)"));
  }
  if (steps != nullptr) arg.steps.annotation = steps->annotation;
  arg.steps.device = device;
  return arg;
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
    if (in == "-") {
      // Standard input is read like a file: redirected from the output (`< s.pickle`), it is
      // that file.
      struct stat st;
      if (::fstat(STDIN_FILENO, &st) == 0 && st.st_dev == out.st_dev && st.st_ino == out.st_ino) {
        return absl::InvalidArgumentError(absl::StrCat(
            label, ": ", path,
            " is the same file as the input - (standard input); refusing to write over it"));
      }
      continue;
    }
    std::vector<std::string> files{in};
    std::error_code ec;
    if (std::filesystem::is_directory(in, ec)) {
      // The files the command reads there (one listing: io::ListInputDirectory); a directory
      // that cannot be listed fails the command when it is read.
      files = io::ListInputDirectory(in).value_or(std::vector<std::string>{});
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
  // The global flags (--categories) name inputs too.
  std::vector<CLI::Option*> options = sub.get_options();
  if (CLI::App* parent = sub.get_parent(); parent != nullptr) {
    for (CLI::Option* opt : parent->get_options()) options.push_back(opt);
  }
  for (CLI::Option* opt : options) {
    if (HasMark(*opt, kInputMark)) {
      for (const std::string& v : opt->results()) ctx.inputs.push_back(v);
    } else if (HasMark(*opt, kOutputMark)) {
      outputs.push_back(opt);
    }
  }
  ctx.inputs.insert(ctx.inputs.end(), ctx.preloaded_files.begin(), ctx.preloaded_files.end());
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
