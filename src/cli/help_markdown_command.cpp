// memsnap help-markdown (hidden): prints docs/cli.md, generated from the same CLI11 app that
// parses the command line. A unit test checks docs/cli.md is up to date.
#include "cli/cli_docs.h"
#include "memsnap/cli/commands_list.h"

namespace memsnap::cli {

RunFn SetupHelpMarkdown(CLI::App& sub) {
  sub.group("");  // hidden: not in --help, docs/cli.md or completion
  sub.footer("Example:\n  memsnap help-markdown > docs/cli.md");
  const CLI::App* self = &sub;
  return [self](Context& ctx) -> absl::StatusOr<ExitCode> {
    *ctx.out << RenderCliMarkdown(DescribeApp(*self->get_parent()));
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
