// memsnap frag FILE...: fragmentation of the allocator's segments (docs/fragmentation.md). With
// several files (one per rank) they are analysed in parallel and compared in a per-rank table.
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "memsnap/cli/allocator_flags.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/cli/common.h"
#include "memsnap/query/frag.h"
#include "memsnap/report/frag_render.h"
#include "memsnap/util/status_macros.h"

namespace memsnap::cli {

namespace {
struct FragCommandOptions {
  std::vector<std::string> files;
  std::string at = "end";
  report::FragRenderOptions render;
  int samples = 20;
  bool csv = false;
  bool json = false;
  bool no_replay = false;
  std::vector<std::string> candidates;
  AllocatorFlags allocator;  // --start
  int device = -1;           // --device N (DeviceFlag)
};

}  // namespace

RunFn SetupFrag(CLI::App& sub) {
  auto opts = std::make_shared<FragCommandOptions>();
  sub.add_option("files", opts->files,
                 "Snapshot file (pickle, JSON, HTML, gzip); several files (or a directory of "
                 "ranks) give a per-rank table")
      ->check(InputPaths())
      ->required();
  sub.add_option("--at", opts->at,
                 "Which state to report: end (the snapshot), peak (= peak-reserved), "
                 "peak-allocated, event:N or a time (reconstructed from the trace)")
      ->default_val("end");
  sub.add_option("--top", opts->render.top, "Segments in the segment map (0 = all)")
      ->check(CLI::NonNegativeNumber)
      ->default_val(20);
  sub.add_option("--width", opts->render.bar_width, "Characters per segment bar")
      ->check(CLI::Range(8, 400))
      ->default_val(40);
  sub.add_flag("--timeline", opts->render.timeline,
               "Print the fragmentation figures sampled over the trace instead");
  sub.add_option("--samples", opts->samples, "Samples in the --timeline (per device)")
      ->check(CLI::Range(2, 100000))
      ->default_val(20);
  sub.add_flag("--csv", opts->csv,
               "With --timeline, or with several files (one row per rank): CSV instead of a "
               "table");
  sub.add_flag("--json", opts->json, "Machine-readable output (includes every segment)");
  sub.add_option("--device", opts->device,
                 "Only this device: its answer, segments and figures (past 64 devices the text "
                 "prints one line per device instead of every device's tables)");
  sub.add_flag("--no-replay", opts->no_replay,
               "Skip the replays behind the answer's `fix` line (each candidate setting searched "
               "for the least memory it fits on)");
  sub.add_option("--conf", opts->candidates,
                 "A PYTORCH_CUDA_ALLOC_CONF to try for the `fix` line (repeatable), on top of the "
                 "recorded settings; replaces the default candidates");
  AddStartFlag(sub, opts->allocator);
  sub.footer(
      "Each device opens with the answer: what fragmentation costs at the reserved peak\n"
      "(stranded bytes, and the verdict: small below 5% of reserved or 128 MiB, moderate below\n"
      "15%, large above), and the allocator setting with which the run fits on the least\n"
      "memory, found by replaying the trace (--no-replay skips the replays). Past 64 devices\n"
      "the answers are one line per device and the per-device tables are left out; --device N\n"
      "reports that device alone.\n"
      "Definitions (docs/fragmentation.md):\n"
      "  internal waste   block size - requested bytes, over active blocks\n"
      "  free             inactive (cached) blocks; pending-free blocks are counted apart\n"
      "  external frag    1 - largest free block / free bytes, per (device, pool, stream,\n"
      "                   small/large); totals: 1 - sum of the groups' largest / free\n"
      "  stranded         free and pending bytes that empty_cache cannot release (inside split\n"
      "                   segments that hold an allocated block; partial pages of expandable "
      "ones)\n"
      "  releasable       bytes empty_cache would return (free segments, whole free pages)\n"
      "  what fits        the largest request served from cached blocks without new memory\n"
      "Examples:\n"
      "  memsnap frag snap.pickle\n"
      "  memsnap frag snap.pickle --top 0 --width 80\n"
      "  memsnap frag snap.pickle --at peak\n"
      "  memsnap frag snap.pickle --conf max_split_size_mb:64   # try your own setting\n"
      "  memsnap frag snap.pickle --at event:1200    # the state after trace event 1200\n"
      "  memsnap frag snap.pickle --timeline --samples 50 --csv > frag.csv\n"
      "  memsnap frag --json snap.pickle | jq .external_fragmentation\n"
      "  memsnap frag ranks/          # per-rank fragmentation, outliers called out\n"
      "  memsnap frag ranks/ --csv > ranks.csv   # one row per rank, for a spreadsheet");
  return [opts](Context& ctx) -> absl::StatusOr<ExitCode> {
    analysis::FragOptions options;
    options.at_text = opts->at;
    if (opts->at == "end") {
      options.at = analysis::FragMoment::kEnd;
    } else if (opts->at == "peak" || opts->at == "peak-reserved") {
      options.at = analysis::FragMoment::kPeakReserved;
    } else if (opts->at == "peak-allocated") {
      options.at = analysis::FragMoment::kPeakAllocated;
    } else {
      // event:N or a time, read by the parser `top --at` uses.
      ASSIGN_OR_RETURN(query::MomentArg at, MomentFlag("--at", opts->at));
      options.moment = at.moment;
      options.at = analysis::FragMoment::kMoment;
    }
    options.device = DeviceFlag(opts->device);
    query::FragRequest request;
    request.options = options;
    if (opts->render.timeline) request.options.timeline_samples = opts->samples;
    request.replay = !opts->no_replay;
    request.candidates = opts->candidates;
    request.start = StartOf(opts->allocator);
    request.threads = ctx.threads;  // the global -j: replays at once
    ASSIGN_OR_RETURN(std::vector<query::InputFile> inputs, query::ExpandInputs(opts->files));
    if (inputs.size() > 1) {
      ASSIGN_OR_RETURN(query::FragRanksResult ranks,
                       query::FragRanksQuery(request, inputs, ReadSettingsOf(ctx)));
      if (opts->csv) {
        report::RenderFragRanksCsv(ranks, *ctx.out);
      } else if (opts->json) {
        PrintJson(report::FragRanksToJson(ranks), ctx);
      } else {
        report::RenderFragRanksText(ranks, *ctx.out);
      }
      return ExitCode::kOk;
    }
    ASSIGN_OR_RETURN(query::Session session, OpenSession(inputs[0].path, query::FragNeeds(), ctx));
    ASSIGN_OR_RETURN(analysis::FragReport report, query::FragQuery(request, session));
    if (opts->json) {
      PrintJson(report::FragToJson(report), ctx);
    } else if (opts->render.timeline && opts->csv) {
      report::RenderFragTimelineCsv(report, *ctx.out);
    } else if (opts->render.timeline) {
      report::RenderFragTimelineText(report, *ctx.out);
    } else {
      report::RenderFragText(report, opts->render, *ctx.out);
    }
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
