// `memsnap replay --backend cuda`: load, replay on the GPU, render.
#include "absl/strings/str_cat.h"
#include "memsnap/cli/common.h"
#include "memsnap/cli/replay_cuda.h"
#include "memsnap/report/replay_cuda_render.h"
#include "memsnap/util/status_macros.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

absl::StatusOr<ExitCode> RunCudaReplayCommand(const CudaReplayCliOptions& o,
                                              const ConfigBuilder& build_configs, Context& ctx) {
  if (o.verify) {
    return absl::InvalidArgumentError(
        "--verify compares the simulator with the trace; it does not apply to --backend cuda");
  }
  if (o.csv) return absl::InvalidArgumentError("--csv is not available with --backend cuda");
  ASSIGN_OR_RETURN(std::vector<std::string> files, query::ExpandInputPaths(o.files));
  nlohmann::ordered_json all = nlohmann::ordered_json::array();
  for (size_t i = 0; i < files.size(); ++i) {
    ASSIGN_OR_RETURN(query::Session session, OpenSession(files[i], query::Needs{}, ctx));
    const Snapshot& snap = session.snapshot();
    ASSIGN_OR_RETURN(std::vector<analysis::ReplayConfig> configs, build_configs(snap));
    absl::StatusOr<analysis::CudaReplayReport> rep =
        analysis::RunCudaReplay(snap, configs, o.replay);
    if (!rep.ok()) {
      // Driver problems name no file; trace problems do.
      if (absl::IsFailedPrecondition(rep.status()) || absl::IsInvalidArgument(rep.status())) {
        return rep.status();
      }
      return absl::Status(rep.status().code(),
                          absl::StrCat(files[i], ": ", Sv(ToStd(rep.status().message()))));
    }
    if (o.json) {
      all.push_back(report::CudaReplayToJson(*rep));
    } else {
      if (i > 0) *ctx.out << "\n";
      report::RenderCudaReplayText(*rep, *ctx.out);
    }
  }
  if (o.json) PrintJson(files.size() > 1 ? all : all[0], ctx);
  return ExitCode::kOk;
}

}  // namespace memsnap::cli
