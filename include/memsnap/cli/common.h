// Helpers shared by the command files: the global flags as a query's read settings, typed flag
// values, outputs (checked against the inputs, written atomically), JSON.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "memsnap/analysis/attribution/attribution.h"
#include "memsnap/analysis/timeline/timeline.h"
#include "memsnap/cli/command.h"
#include "memsnap/model/snapshot.h"
#include "memsnap/query/session.h"
#include "memsnap/util/timer.h"
#include "nlohmann/json.hpp"

namespace memsnap::cli {

/// The read settings of the global flags: --strict, -j/--threads, --max-memory, and the read's
/// warnings printed to ctx.err ("warning: FILE: ...") unless --quiet. `clock`: told when the read
/// ends (--timings).
/// The user categories of --categories FILE lines (in file order) then --category flags. Errors
/// name the flag, or the FILE:LINE, and an unreadable file.
absl::StatusOr<analysis::UserCategories> ReadUserCategories(const std::vector<std::string>& files,
                                                            const std::vector<std::string>& flags);

query::ReadSettings ReadSettingsOf(const Context& ctx, ReadAnalysisClock* clock = nullptr);

/// Opens one input file for a query (query::Session::Open with the global flags).
absl::StatusOr<query::Session> OpenSession(const std::string& path, const query::Needs& needs,
                                           const Context& ctx, ReadAnalysisClock* clock = nullptr);

// ---- Flag values, parsed into typed values; every error starts with the flag's name ----

/// A size ("24GiB", "1.5GB", "4096"): "FLAG: not a size ..." otherwise. Empty text: nullopt.
absl::StatusOr<std::optional<int64_t>> SizeFlag(std::string_view flag, const std::string& text);
// A device size (--fits, --device-memory): SizeFlag, and a bare number under 1 MiB is refused as
// a forgotten unit ("--fits 24" would mean 24 bytes). 0 passes; callers that refuse it say so.
absl::StatusOr<std::optional<int64_t>> DeviceSizeFlag(std::string_view flag,
                                                      const std::string& text);
/// A ratio ("5%", "0.05"). Empty text: nullopt.
absl::StatusOr<std::optional<double>> RatioFlag(std::string_view flag, const std::string& text);
/// `--step-annotation GLOB` of the commands whose moments may be training steps (`--at step:N`).
struct StepFlags {
  std::string annotation;
};
void AddStepFlags(CLI::App& sub, StepFlags& flags);

/// `--device N` as every query and analysis takes it (analysis::DeviceFilter): the flag's value,
/// nullopt when it was not given (its storage's -1, or any negative number).
inline analysis::DeviceFilter DeviceFlag(int flag) {
  return flag >= 0 ? analysis::DeviceFilter(flag) : std::nullopt;
}

/// A moment of the grammar (query::ParseMomentArg). `steps`: the command takes step moments
/// (`step:N`), found as these flags say on `device` (nullopt: the busiest); nullptr: a step moment
/// is a usage error naming the flag.
absl::StatusOr<query::MomentArg> MomentFlag(std::string_view flag, const std::string& text,
                                            const StepFlags* steps = nullptr,
                                            analysis::DeviceFilter device = std::nullopt);

/// `--max-output SIZE` and `--force` of the commands whose output can be far larger than their
/// input (convert and export to JSON: JSON repeats every stack a pickle shares through its memo).
struct OutputLimitFlags {
  std::string max_output;  // empty: max(16 GiB, 64x the input)
};
/// Adds --max-output to `sub` (the global --force, Context::force, lifts the limit).
void AddOutputLimitFlags(CLI::App& sub, OutputLimitFlags& flags);
/// Before writing `output` ("-": stdout), about `estimate` bytes (uncompressed) made from
/// `input` of `input_bytes`: an error giving the estimate when it is over the limit
/// (--max-output, default max(16 GiB, 64x the input)) or, for a file written uncompressed, over
/// the free space of its file system (statvfs). The global --force (`force`) skips both.
absl::Status CheckOutputSize(const std::string& output, uint64_t estimate, const std::string& input,
                             uint64_t input_bytes, bool compressed, const OutputLimitFlags& flags,
                             bool force);

/// Writes `j` to ctx.out, pretty-printed with two spaces, and a newline.
void PrintJson(const nlohmann::ordered_json& j, Context& ctx);

/// Marks a flag or positional whose values name files the command reads: `->check(InputPaths())`.
/// It accepts every value; the app collects the marked values into Context::inputs.
CLI::Validator InputPaths();

/// Marks a flag or positional whose value names a file the command writes:
/// `->check(OutputPath())`. Every such value goes through CheckOutputPath once, right after the
/// command line is parsed (CheckOutputs), before anything is read.
CLI::Validator OutputPath();

/// Refuses `path` as the output of `flag` when it is the same file as one of `inputs` (device and
/// inode, after links; a directory input stands for its files; "-" for the file or device
/// standard input reads), and, unless `force`, when it is an existing file that is itself a
/// memory snapshot (parse::LooksLikeSnapshot). "-" and "" pass.
absl::Status CheckOutputPath(std::string_view flag, const std::string& path,
                             const std::vector<std::string>& inputs, bool force);

/// Once per invocation of `sub`: collects the values of its InputPaths options and of the app's
/// (the global --categories) into ctx.inputs and checks the value of each OutputPath option with
/// CheckOutputPath. Reads the parsed results, so it also runs when the parse failed afterwards (a
/// required input missing because a flag took it: `top --folded snap.pickle`).
absl::Status CheckOutputs(CLI::App& sub, Context& ctx);

/// Writes through `write` to `path` ("-": ctx.out) with io::WriteFileAtomically: a temporary file
/// renamed into place, removed on failure and on SIGINT/SIGTERM/SIGHUP. Checks the path again
/// with CheckOutputPath (an output whose path the command chose itself, like report's default,
/// was not seen by CheckOutputs); `flag` names the flag in that message. `bytes`, when given,
/// receives the size written to a file.
absl::Status WriteOutput(const std::string& path, Context& ctx,
                         const std::function<absl::Status(std::ostream&)>& write,
                         std::string_view flag = "", uint64_t* bytes = nullptr);

/// WriteOutput of `content`.
absl::Status WriteOutputFile(const std::string& path, std::string_view content, Context& ctx);

}  // namespace memsnap::cli
