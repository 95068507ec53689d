// memsnap oom FILE: why each recorded OOM happened, or where the run would fail on a device of
// --device-memory SIZE, who held the memory, and which settings fit (proven by replay).
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/allocator_flags.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/query/oom.h"
#include "memsnap/report/oom_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct OomCommandOptions {
  std::string file;
  AllocatorFlags allocator;  // --device-memory, --conf
  int device = -1;
  int top = 5;
  bool json = false;
};
}  // namespace

RunFn SetupOom(CLI::App& sub) {
  auto opts = std::make_shared<OomCommandOptions>();
  sub.add_option("file", opts->file, "Snapshot file (pickle, JSON, HTML, gzip) with a trace")
      ->check(InputPaths())
      ->required();
  AddDeviceMemoryFlag(sub, opts->allocator,
                      "Replay on a device of this size (e.g. 24GiB) and say where the run would "
                      "fail; default: the capacity an oom entry implies (device_free + reserved)");
  sub.add_option("--device", opts->device, "Only this device ordinal (default: every device)");
  AddConfFlag(sub, opts->allocator,
              "A candidate PYTORCH_CUDA_ALLOC_CONF setting to try (repeatable), instead of the "
              "default six; each applies on top of the recorded settings");
  AddStartFlag(sub, opts->allocator);
  sub.add_option("--top", opts->top, "Sites listed among the holders of each OOM (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.footer(
      "Every `oom` entry of the trace is replayed on the capacity it implies; without one, give\n"
      "--device-memory. Candidate settings are replayed on the same capacity in parallel; when\n"
      "the run does not fit, each one's smallest fitting memory is searched by replay (`fits "
      "on`).\n"
      "Verdicts: demand, fragmentation, cache_not_released (docs/oom.md). Exit codes: 0 explained\n"
      "(an OOM or a fit), 2 unusable input (no trace, no capacity).\n"
      "Examples:\n"
      "  memsnap oom crash.pickle\n"
      "  memsnap oom run.pickle --device-memory 24GiB          # would it fit a 24 GiB card?\n"
      "  memsnap oom run.pickle --device-memory 40GiB --conf expandable_segments:True\n"
      "  memsnap oom crash.pickle --json | jq '.ooms[0].verdict'");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    query::OomRequest request;
    request.device = DeviceFlag(opts->device);
    request.candidates = opts->allocator.confs;
    request.start = StartOf(opts->allocator);
    request.top_holders = opts->top;
    request.threads = ctx.threads;  // the global -j: replays at once
    ASSIGN_OR_RETURN(request.device_memory, opts->allocator.DeviceMemory());
    // The timeline (its peaks, and the lifetimes that say what each holder's memory is) is
    // built on a second core while the file is read.
    ASSIGN_OR_RETURN(query::Session session,
                     OpenSession(opts->file, query::OomNeeds(request), ctx));
    ASSIGN_OR_RETURN(analysis::OomReport report, query::OomQuery(request, session));
    if (opts->json) {
      PrintJson(report::OomToJson(report), ctx);
    } else {
      report::RenderOomText(report, *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
