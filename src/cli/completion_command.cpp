// memsnap completion bash: prints a bash completion script generated from the command table.
#include <memory>

#include "cli/cli_docs.h"
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

RunFn SetupCompletion(CLI::App& sub) {
  auto shell = std::make_shared<std::string>();
  sub.add_option("shell", *shell, "The shell (only bash for now)")
      ->required()
      ->check(CLI::IsMember({"bash"}));
  sub.footer(
      "Examples:\n"
      "  source <(memsnap completion bash)\n"
      "  memsnap completion bash > ~/.local/share/bash-completion/completions/memsnap");
  const CLI::App* self = &sub;
  return [self, shell](Context& ctx) -> absl::StatusOr<ExitCode> {
    *ctx.out << RenderBashCompletion(DescribeApp(*self->get_parent()));
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
