// The command line described as data, walked from the CLI11 app that `memsnap` itself parses with,
// so `memsnap help-markdown` (docs/cli.md) and `memsnap completion bash` can never drift from the
// real flags. Hidden subcommands (CLI11 group "") and --help are left out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "CLI/CLI.hpp"

namespace memsnap::cli {

struct OptionDoc {
  std::vector<std::string> names;  // "-o", "--output"; the positional name for positionals
  bool positional = false;
  bool takes_value = true;  // false for flags
  bool required = false;
  bool many = false;                 // accepts several values
  std::string type;                  // CLI11's type text, e.g. "TEXT:{perfetto,folded,csv}"
  std::vector<std::string> choices;  // from an IsMember check, else empty
  std::string default_value;
  std::string description;
};

struct CommandDoc {
  std::string name, description, footer;
  std::vector<OptionDoc> options;  // positionals first, in declaration order
};

struct AppDoc {
  std::string name, description, footer;
  std::vector<OptionDoc> global;
  std::vector<CommandDoc> commands;  // in registry order
};

/// Walks `root` (the memsnap app, after the registry added its subcommands).
AppDoc DescribeApp(const CLI::App& root);

/// docs/cli.md: an index of commands, then per command its usage, options and examples.
std::string RenderCliMarkdown(const AppDoc& app);

/// A man page (roff, section 1) with the same content as docs/cli.md: name, synopsis, global
/// options, then per command its usage, options and examples; exit status. `version` goes in the
/// page's footer ("memsnap 0.1.0"). Installed as share/man/man1/memsnap.1 (`memsnap help-man`).
std::string RenderManPage(const AppDoc& app, std::string_view version);

/// A bash completion script: subcommands, each command's options, values of choice options,
/// file names elsewhere. Install: `memsnap completion bash > /etc/bash_completion.d/memsnap`.
std::string RenderBashCompletion(const AppDoc& app);

}  // namespace memsnap::cli
