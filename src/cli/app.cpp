#include "memsnap/cli/app.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <new>
#include <optional>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "memsnap/cli/command.h"
#include "memsnap/cli/common.h"
#include "memsnap/io/output.h"
#include "memsnap/util/build_info.h"
#include "memsnap/util/format.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

namespace {

// RunMain and RunEmbedded: `args` without the program's name; `embedded` is null for the memsnap
// executable. Arguments are strings, never C strings: a name an embedding program gives a
// snapshot in memory may hold a NUL byte (the Python module's do, so that no path is one).
int Run(std::vector<std::string> args, std::ostream& out, std::ostream& err,
        const EmbeddedRun* embedded) {
  CLI::App app{
      "memsnap: analyze PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot).\n"
      "Reads pickle (protocols 2-5), JSON, the _memory_viz HTML page and gzip of any of them.",
      "memsnap"};
  app.require_subcommand(1);
  app.fallthrough();  // global flags (--strict, -q) may follow the subcommand
  app.set_version_flag("--version", std::string(BuildInfo()));
  app.footer(
      "Examples:\n"
      "  memsnap summary snap.pickle\n"
      "  memsnap top snap.pickle --by function\n"
      "  memsnap diff before.pickle after.pickle\n"
      "  memsnap check --baseline base.pickle --tolerance 5% new.pickle\n"
      "  memsnap summary --threads 8 ranks/\n"
      "Exit codes: 0 ok, 1 a check failed, 2 unusable input or usage error.");

  Context ctx;
  ctx.out = &out;
  ctx.err = &err;
  if (embedded != nullptr) {
    ctx.preloaded = embedded->preloaded;
    ctx.preloaded_files = embedded->files;
    ctx.progress = false;
  }
  app.add_flag("--strict", ctx.strict, "Treat warnings about inconsistent input as errors");
  app.add_flag("-q,--quiet", ctx.quiet, "Print no warnings or progress");
  app.add_flag("--timings", ctx.timings, "Print the time spent in each phase to stderr");
  app.add_flag("--force", ctx.force,
               "Let an output overwrite an existing file that is a memory snapshot (an output that "
               "is the same file as an input is always refused), and convert/export write JSON "
               "estimated over --max-output or the free space");
  app.add_option("-j,--threads", ctx.threads,
                 "Threads for reading and analysis: one large pickle decoded on all of them, files "
                 "of a directory read side by side, the timeline pass beside the reader, replay "
                 "configurations (default 0: all cores; 1: everything on one thread), e.g. "
                 "memsnap summary -j 4 ranks/")
      ->check(CLI::Range(0, kMaxThreads));
  std::string max_memory;
  app.add_option("--max-memory", max_memory,
                 "Refuse input whose model would need more memory than this, e.g. 8GiB (exit 2); "
                 "checked as the reader's arrays grow. Default: 75% of physical memory; files "
                 "read side by side share it");

  std::vector<std::string> category_flags, categories_files;
  app.add_option("--category", category_flags,
                 "A category of your own, NAME=REGEX (repeatable): memory whose allocation stack "
                 "has a frame whose 'filename:line:function' the regex finds is NAME, before the "
                 "built-in rules, wherever categories appear, e.g. --category "
                 "lora=peft/tuners (docs/attribution.md, \"User categories\")")
      ->allow_extra_args(false);
  app.add_option("--categories", categories_files,
                 "A file of NAME=REGEX lines, as --category ('#' comments, blank lines); its "
                 "categories come before those of --category")
      ->allow_extra_args(false)
      ->check(InputPaths());

  std::map<CLI::App*, RunFn> runners;
  for (const CommandSpec& spec : AllCommands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    runners[sub] = spec.setup(*sub);
  }

  // An interrupted write leaves no temporary file behind; a host process keeps its own handlers.
  if (embedded == nullptr) io::InstallSignalCleanup();
  auto fail = [&](const CLI::App& sub, const absl::Status& status) {
    err << "memsnap " << sub.get_name() << ": " << status.message() << "\n";
    return static_cast<int>(ExitCode::kBadInput);
  };
  try {
    std::reverse(args.begin(), args.end());  // CLI11 takes them last first
    app.parse(std::move(args));
  } catch (const CLI::ParseError& e) {
    // An output flag that took an input's place (`top --folded snap.pickle` leaves FILE missing)
    // is the problem to report, not the missing input.
    for (const auto& [sub, run] : runners) {
      if (e.get_exit_code() == 0 || !sub->parsed()) continue;  // --help is no error
      if (absl::Status st = CheckOutputs(*sub, ctx); !st.ok()) return fail(*sub, st);
    }
    int code = app.exit(e, out, err);
    // CLI11 returns 0 for --help/--version; every other parse problem is a usage error.
    return code == 0 ? 0 : static_cast<int>(ExitCode::kBadInput);
  }

  ctx.max_memory = DefaultMemoryBudget();
  if (!max_memory.empty()) {
    absl::StatusOr<int64_t> bytes = ParseSize(max_memory);
    if (!bytes.ok() || *bytes <= 0) {
      err << "memsnap: --max-memory: not a size: '" << max_memory << "' (e.g. 8GiB, 512MiB)\n";
      return static_cast<int>(ExitCode::kBadInput);
    }
    ctx.max_memory = static_cast<uint64_t>(*bytes);
  }
  if (embedded == nullptr) SetProgressEnabled(!ctx.quiet);
  // The user's categories: read once, before anything is read, and carried by this invocation's
  // context into every session it opens (query::ReadSettings::categories), whose results carry
  // them to the renderers.
  absl::StatusOr<analysis::UserCategories> user_categories =
      ReadUserCategories(categories_files, category_flags);
  if (user_categories.ok()) ctx.categories = analysis::CategoryNames(std::move(*user_categories));
  for (const auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    if (!user_categories.ok()) return fail(*sub, user_categories.status());
    // Once per invocation, before anything is read: no output may replace an input.
    if (absl::Status st = CheckOutputs(*sub, ctx); !st.ok()) return fail(*sub, st);
    absl::StatusOr<ExitCode> result;
    try {
      result = run(ctx);
    } catch (const std::bad_alloc&) {
      // The allocation sites that know what they asked for return a Status saying so; this is
      // the last line for the others (a vector grown under `ulimit -v`).
      result = absl::ResourceExhaustedError(
          "out of memory (an allocation failed; is the address space limited, ulimit -v?)");
    } catch (const std::filesystem::filesystem_error& e) {
      // Paths are examined with the error_code overloads (io::ListInputDirectory); should one
      // throw all the same, it is still an unusable input named, never an abort.
      const std::string path = e.path1().string();
      result = absl::InvalidArgumentError(
          path.empty() ? std::string(e.what()) : absl::StrCat(path, ": ", e.code().message()));
    }
    if (ctx.timings) Timings::Global().Print(err);
    if (!result.ok()) return fail(*sub, result.status());
    // Standard output is a writer too: a report cut short (a full disk under `> out.txt`) is an
    // error that names it, not an exit 0.
    // (The system's reason is known only when this flush is what fails.)
    const bool failed_before = !out;
    errno = 0;
    out.flush();
    if (!out) {
      const int e = failed_before ? 0 : errno;
      return fail(
          *sub, absl::ResourceExhaustedError(absl::StrCat(
                    "writing standard output: ", e != 0 ? std::strerror(e) : "the write failed")));
    }
    return static_cast<int>(*result);
  }
  return static_cast<int>(ExitCode::kBadInput);
}

}  // namespace

int RunMain(int argc, char** argv, std::ostream& out, std::ostream& err) {
  return Run(std::vector<std::string>(argv + std::min(argc, 1), argv + argc), out, err, nullptr);
}

int RunEmbedded(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                const EmbeddedRun& run) {
  return Run(args, out, err, &run);
}

}  // namespace memsnap::cli
