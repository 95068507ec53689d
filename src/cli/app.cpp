#include "memsnap/cli/app.h"

#include <iostream>
#include <map>

#include "CLI/CLI.hpp"
#include "memsnap/cli/command.h"
#include "memsnap/util/build_info.h"
#include "memsnap/util/format.h"
#include "memsnap/util/memory.h"
#include "memsnap/util/progress.h"
#include "memsnap/util/timer.h"

namespace memsnap::cli {

int RunMain(int argc, char** argv, std::ostream& out, std::ostream& err) {
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
  app.add_flag("--strict", ctx.strict, "Treat warnings about inconsistent input as errors");
  app.add_flag("-q,--quiet", ctx.quiet, "Print no warnings or progress");
  app.add_flag("--timings", ctx.timings, "Print the time spent in each phase to stderr");
  app.add_option("-j,--threads", ctx.threads,
                 "Threads for reading and analysis: one large pickle decoded on all of them, files "
                 "of a directory read side by side, the timeline pass beside the reader, replay "
                 "configurations (default 0: all cores; 1: everything on one thread), e.g. "
                 "memsnap summary -j 4 ranks/")
      ->check(CLI::Range(0, 4096));
  std::string max_memory;
  app.add_option("--max-memory", max_memory,
                 "Refuse input whose model would need more memory than this, e.g. 8GiB (exit 2); "
                 "checked as the reader's arrays grow. Default: 75% of physical memory; files "
                 "read side by side share it");

  std::map<const CLI::App*, RunFn> runners;
  for (const CommandSpec& spec : AllCommands()) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    runners[sub] = spec.setup(*sub);
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
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
  SetProgressEnabled(!ctx.quiet);
  for (const auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    absl::StatusOr<ExitCode> result = run(ctx);
    if (ctx.timings) Timings::Global().Print(err);
    if (!result.ok()) {
      err << "memsnap " << sub->get_name() << ": " << result.status().message() << "\n";
      return static_cast<int>(ExitCode::kBadInput);
    }
    return static_cast<int>(*result);
  }
  return static_cast<int>(ExitCode::kBadInput);
}

}  // namespace memsnap::cli
