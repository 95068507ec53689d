// memsnap replay FILE...: replay a trace through the allocator simulator under several
// configurations; --verify checks the simulator against the recorded segment events.
#include <memory>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/allocator_flags.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/replay_cuda.h"
#include "memsnap/query/replay.h"
#include "memsnap/report/replay_render.h"
#include "memsnap/util/format.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

namespace {

struct ReplayCommandOptions {
  std::vector<std::string> files;
  AllocatorFlags settings;  // --conf, --device-memory
  std::vector<std::string> sweeps;
  std::string allocator;
  int device = -1;
  bool json = false;
  std::string csv;
  bool verify = false;
  std::string empty_cache = "heuristic";
  std::string start = "recorded";
  std::string backend = "sim";  // --backend cuda: replay_cuda_cli.cpp
  int gpu = 0;
  double scale = 1.0;
};

// The request of the flags (the configurations: query::ReplayConfigs).
query::ReplayRequest RequestOf(const ReplayCommandOptions& o) {
  query::ReplayRequest r;
  r.allocator = o.allocator;
  r.confs = o.settings.confs;
  r.sweeps = o.sweeps;
  return r;
}

}  // namespace

RunFn SetupReplay(CLI::App& sub) {
  auto opts = std::make_shared<ReplayCommandOptions>();
  sub.add_option("files", opts->files, "Snapshot files (pickle, JSON, HTML, gzip) or directories")
      ->check(InputPaths())
      ->required();
  AddConfFlag(sub, opts->settings,
              "A PYTORCH_CUDA_ALLOC_CONF string to compare (repeatable), applied on top of the "
              "recorded settings");
  sub.add_option("--sweep", opts->sweeps,
                 "KEY=V1,V2,...: one configuration per value (repeatable)");
  sub.add_option("--allocator", opts->allocator,
                 "Shorthand: native, expandable or cudaMallocAsync (--backend cuda only)")
      ->check(CLI::IsMember({"native", "expandable", "cudaMallocAsync"}));
  AddDeviceMemoryFlag(
      sub, opts->settings,
      "Device capacity, e.g. 80GiB (default: implied by an oom entry, else unlimited)");
  sub.add_option("--device", opts->device, "Device ordinal (default: the first with a trace)");
  sub.add_flag("--json", opts->json, "Machine-readable output");
  sub.add_option("--csv", opts->csv,
                 "Write the reserved-bytes curve as CSV to this path ('-': stdout)")
      ->check(OutputPath());
  sub.add_flag("--verify", opts->verify,
               "Compare the simulator's segment events under the recorded settings with the "
               "trace; exit 1 unless they match exactly");
  sub.add_option(
         "--empty-cache", opts->empty_cache,
         "Explicit empty_cache() calls: heuristic (infer from segment_free bursts) or ignore")
      ->check(CLI::IsMember({"heuristic", "ignore"}));
  sub.add_option("--start", opts->start,
                 "Blocks alive before the trace: recorded (default: start from the segments alive "
                 "then, rebuilt from the snapshot; `warm` is its older name) or cold (allocate "
                 "them first, in address order); docs/figures.md")
      ->check(CLI::IsMember({"recorded", "warm", "cold"}));
  sub.add_option("--backend", opts->backend,
                 "sim (default): predict; cuda: replay on a real GPU (see docs/gpu.md)")
      ->check(CLI::IsMember({"sim", "cuda"}));
  sub.add_option("--gpu", opts->gpu, "--backend cuda: the CUDA device ordinal to replay on");
  sub.add_option("--scale", opts->scale,
                 "--backend cuda: multiply every size by this factor when the trace does not fit");
  sub.footer(
      "Examples:\n"
      "  memsnap replay snap.pickle --allocator expandable\n"
      "  memsnap replay snap.pickle --sweep max_split_size_mb=128,256,512 --device-memory 40GiB\n"
      "  memsnap replay snap.pickle --conf expandable_segments:True,max_split_size_mb:512 --csv "
      "curve.csv\n"
      "  memsnap replay --verify --json snap.pickle | jq .verify.matched\n"
      "  memsnap replay snap.pickle --backend cuda --allocator cudaMallocAsync --gpu 1 --scale "
      "0.5");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    if (opts->backend == "cuda") {
      CudaReplayCliOptions co{opts->files, {}, opts->json, opts->verify, !opts->csv.empty()};
      co.replay.gpu = opts->gpu;
      co.replay.device = DeviceFlag(opts->device);
      co.replay.scale = opts->scale;
      co.replay.warm_start = opts->start == "warm";  // a GPU replay starts cold unless asked
      co.replay.empty_cache = opts->empty_cache == "ignore" ? analysis::EmptyCacheMode::kIgnore
                                                            : analysis::EmptyCacheMode::kHeuristic;
      return RunCudaReplayCommand(
          co, [&](const Snapshot& s) { return query::ReplayConfigs(RequestOf(*opts), s); }, ctx);
    }
    if (opts->allocator == "cudaMallocAsync" || opts->scale != 1.0) {
      return absl::InvalidArgumentError(
          "--allocator cudaMallocAsync and --scale need --backend cuda (a real GPU)");
    }
    query::ReplayRequest request = RequestOf(*opts);
    analysis::ReplayOptions& ro = request.options;
    ro.device = DeviceFlag(opts->device);
    ro.verify = opts->verify;
    ro.curve = !opts->csv.empty();
    ro.max_threads = ctx.threads;  // --threads, a global option
    ro.warm_start = opts->start != "cold";
    ro.empty_cache = opts->empty_cache == "ignore" ? analysis::EmptyCacheMode::kIgnore
                                                   : analysis::EmptyCacheMode::kHeuristic;
    ASSIGN_OR_RETURN(ro.device_memory, opts->settings.DeviceMemory());
    ASSIGN_OR_RETURN(std::vector<std::string> files, query::ExpandInputPaths(opts->files));
    const bool many = files.size() > 1;
    nlohmann::ordered_json all = nlohmann::ordered_json::array();
    std::string csv;
    bool all_exact = true;
    for (size_t i = 0; i < files.size(); ++i) {
      ASSIGN_OR_RETURN(query::Session session, OpenSession(files[i], query::Needs{}, ctx));
      const Snapshot& snap = session.snapshot();
      // A setting that does not parse fails the command, in a batch too.
      RETURN_IF_ERROR(query::ReplayConfigs(request, snap).status());
      absl::StatusOr<analysis::ReplayReport> rep = query::ReplayQuery(request, session);
      if (!rep.ok()) {
        const std::string msg(rep.status().message());  // "FILE: why"
        if (!many) return rep.status();
        const std::string prefix = files[i] + ": ";
        const std::string why = msg.starts_with(prefix) ? msg.substr(prefix.size()) : msg;
        // In a batch, a file without a trace is reported and skipped.
        if (opts->json) {
          all.push_back({{"file", files[i]}, {"skipped", why}});
        } else {
          if (i > 0) *ctx.out << "\n";
          *ctx.out << "skipped " << msg << "\n";
        }
        continue;
      }
      if (rep->verify && !rep->verify->exact()) all_exact = false;
      if (opts->json) {
        all.push_back(report::ReplayToJson(*rep, snap));
      } else {
        if (i > 0) *ctx.out << "\n";
        report::RenderReplayText(*rep, snap, *ctx.out);
      }
      if (ro.curve) {
        std::string part = report::ReplayCurveCsv(*rep);
        csv += i == 0 ? part : part.substr(part.find('\n') + 1);
      }
    }
    if (opts->json) PrintJson(many ? all : all[0], ctx);
    if (ro.curve) RETURN_IF_ERROR(WriteOutputFile(opts->csv, csv, ctx));
    return opts->verify && !all_exact ? ExitCode::kCheckFailed : ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
