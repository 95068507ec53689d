// Helpers shared by the command files: loading inputs with diagnostics, JSON output.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "memsnap/cli/command.h"
#include "memsnap/model/snapshot.h"
#include "nlohmann/json.hpp"

namespace memsnap::cli {

/// Reads one snapshot, prints its diagnostics to ctx.err (unless --quiet) and fails under
/// --strict when there are any. Errors name the file.
absl::StatusOr<Snapshot> LoadSnapshot(const std::string& path, Context& ctx);

/// Expands the command-line inputs: a directory becomes every regular file in it (sorted), other
/// paths stay as given (the shell expands globs). Errors when nothing is left.
absl::StatusOr<std::vector<std::string>> ExpandInputs(const std::vector<std::string>& inputs);

/// Writes `j` to ctx.out, pretty-printed with two spaces, and a newline.
void PrintJson(const nlohmann::ordered_json& j, Context& ctx);

/// Writes `content` to `path` atomically (a temporary file renamed into place), so a failure never
/// leaves a half-written output. "-" means ctx.out.
absl::Status WriteOutputFile(const std::string& path, std::string_view content, Context& ctx);

}  // namespace memsnap::cli
