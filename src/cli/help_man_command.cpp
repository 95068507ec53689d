// memsnap help-man (hidden): prints the man page, generated from the same CLI11 app that parses
// the command line. The build writes it to build/memsnap.1 and `cmake --install` puts it in
// share/man/man1 (cmake/install.cmake).
#include "absl/strings/str_cat.h"
#include "cli/cli_docs.h"
#include "memsnap/cli/commands_list.h"
#include "memsnap/util/build_info.h"
#include "memsnap/util/strings.h"

namespace memsnap::cli {

RunFn SetupHelpMan(CLI::App& sub) {
  sub.group("");  // hidden: not in --help, docs/cli.md or completion
  sub.footer("Example:\n  memsnap help-man > memsnap.1 && man -l memsnap.1");
  const CLI::App* self = &sub;
  return [self](Context& ctx) -> absl::StatusOr<ExitCode> {
    *ctx.out << RenderManPage(DescribeApp(*self->get_parent()),
                              absl::StrCat("memsnap ", Sv(Version())));
    return ExitCode::kOk;
  };
}

}  // namespace memsnap::cli
