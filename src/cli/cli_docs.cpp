#include "cli/cli_docs.h"

#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"

namespace memsnap::cli {

namespace {

OptionDoc DescribeOption(const CLI::Option& opt) {
  OptionDoc d;
  d.positional = !opt.nonpositional();
  if (d.positional) {
    d.names.push_back(opt.get_name(true));
  } else {
    for (const std::string& s : opt.get_snames()) d.names.push_back("-" + s);
    for (const std::string& l : opt.get_lnames()) d.names.push_back("--" + l);
  }
  d.takes_value = opt.get_type_size_max() > 0 && opt.get_items_expected_max() > 0;
  d.required = opt.get_required();
  d.many = opt.get_items_expected_max() > 1;
  if (d.takes_value) d.type = opt.get_type_name();
  // An IsMember check describes itself as "{a,b,c}".
  size_t open = d.type.find('{'), close = d.type.rfind('}');
  if (open != std::string::npos && close != std::string::npos && close > open) {
    d.choices = absl::StrSplit(d.type.substr(open + 1, close - open - 1), ',', absl::SkipEmpty());
  }
  d.default_value = opt.get_default_str();
  d.description = opt.get_description();
  return d;
}

std::vector<OptionDoc> DescribeOptions(const CLI::App& app) {
  std::vector<OptionDoc> positionals, named;
  const CLI::Option* help = app.get_help_ptr();
  for (const CLI::Option* opt : app.get_options()) {
    if (opt == help || opt->get_group().empty()) continue;
    OptionDoc d = DescribeOption(*opt);
    (d.positional ? positionals : named).push_back(std::move(d));
  }
  positionals.insert(positionals.end(), named.begin(), named.end());
  return positionals;
}

std::string Cell(const std::string& text) {
  // Markdown table cells: escape pipes, keep one line.
  return absl::StrReplaceAll(text, {{"|", "\\|"}, {"\n", " "}});
}

std::string Usage(const std::string& app, const CommandDoc& c) {
  std::string out = absl::StrCat(app, " ", c.name, " [OPTIONS]");
  for (const OptionDoc& o : c.options) {
    if (!o.positional) continue;
    std::string p = o.names[0] + (o.many ? "..." : "");
    absl::StrAppend(&out, " ", o.required ? p : absl::StrCat("[", p, "]"));
  }
  return out;
}

void OptionTable(const std::vector<OptionDoc>& options, std::ostream& out) {
  if (options.empty()) return;
  out << "| Option | Value | Description |\n|---|---|---|\n";
  for (const OptionDoc& o : options) {
    std::string value = o.takes_value ? o.type : "";
    if (!o.default_value.empty())
      absl::StrAppend(&value, value.empty() ? "" : " ", "(default ", o.default_value, ")");
    std::string desc = o.description;
    if (o.required) desc += " (required)";
    out << "| `" << absl::StrJoin(o.names, ", ") << "` | " << Cell(value) << " | " << Cell(desc)
        << " |\n";
  }
  out << "\n";
}

std::string Indent(const std::string& text) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(text, '\n'))
    absl::StrAppend(&out, "    ", line, "\n");
  return out;
}

}  // namespace

AppDoc DescribeApp(const CLI::App& root) {
  AppDoc d;
  d.name = root.get_name();
  d.description = root.get_description();
  d.footer = root.get_footer();
  d.global = DescribeOptions(root);
  for (const CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) {
    if (sub->get_group().empty()) continue;  // hidden
    CommandDoc c;
    c.name = sub->get_name();
    c.description = sub->get_description();
    c.footer = sub->get_footer();
    c.options = DescribeOptions(*sub);
    d.commands.push_back(std::move(c));
  }
  return d;
}

namespace {
// The moment grammar (query::ParseMomentArg), shared by --at, --from and --to.
constexpr const char* kMomentsMarkdown = R"(## Moments

`--at`, `--from` and `--to` name a moment of the trace, each device at its own:

| Moment | Means |
|---|---|
| `peak` | the most live bytes (`--at` only) |
| `end` | after the last event: the dumped state |
| `event:N` | after trace event N of the device (from 0; negative counts from the last) |
| `+25ms`, `1.5s`, `-5s` | a time since the trace's first event (with `-`: before its last) |
| `1700000123456`, `abs:T` | a time_us as the file records it |
| `step:N` | training step N, numbered from 0 as `memsnap leaks` lists them (`step:-1`: the last). As `--at`, the step's peak (what a step needs is the most it holds at once); as `--from`, where the step begins; as `--to`, where it ends. `step:N:end` is the step's last event, `step:N:peak` its peak |

Steps are found as `memsnap leaks` finds them (docs/leaks.md, "Finding the step"): the
START..END ranges of `--step-annotation GLOB` (`train_step`, `ProfilerStep#*`), else
torch.profiler's `ProfilerStep#*` ranges when the file has them, else the training step's
phases (each step ends where its optimizer step ends), else the periodicity of the live bytes.
One training step is one step, never cut at the layers of its forward pass; in a trace that runs
a model, repeats are steps only when a backward pass or an optimizer step runs twice, or each
holds a call of the model (a forward pass's layers never are). Steps are those of
the busiest device (or `--device`); the other devices take the same time. `top`, `blocks`,
`timeline` and `diff` (`--step N`: each file at the peak of its own step N) take steps.

)";
}  // namespace

std::string RenderCliMarkdown(const AppDoc& app) {
  std::ostringstream out;
  out << "# " << app.name << " command-line reference\n\n"
      << "<!-- Generated by `memsnap help-markdown > docs/cli.md`; do not edit by hand. -->\n\n"
      << app.description << "\n\n"
      << "Usage: `" << app.name << " [GLOBAL OPTIONS] COMMAND [OPTIONS] ARGS...`\n\n";
  out << "| Command | Description |\n|---|---|\n";
  for (const CommandDoc& c : app.commands) {
    out << "| [`" << c.name << "`](#" << app.name << "-" << c.name << ") | " << Cell(c.description)
        << " |\n";
  }
  out << "\n## Global options\n\n";
  OptionTable(app.global, out);
  if (!app.footer.empty()) out << Indent(app.footer) << "\n";
  out << kMomentsMarkdown;
  for (const CommandDoc& c : app.commands) {
    out << "## " << app.name << " " << c.name << "\n\n"
        << c.description << "\n\n"
        << "Usage: `" << Usage(app.name, c) << "`\n\n";
    OptionTable(c.options, out);
    if (!c.footer.empty()) out << Indent(c.footer) << "\n";
  }
  std::string text = out.str();
  while (text.size() > 1 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n') {
    text.pop_back();
  }
  return text;
}

namespace {

// Text for a roff line: backslashes escaped, and a line that starts with '.' or '\'' (a request
// to roff) protected with the zero-width \&.
std::string Roff(std::string_view text) {
  std::string out;
  bool first = true;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
    if (!first) out += '\n';
    first = false;
    if (!line.empty() && (line[0] == '.' || line[0] == '\'')) out += "\\&";
    out += absl::StrReplaceAll(line, {{"\\", "\\e"}});
  }
  return out;
}

// Roff() for filled text, with a break point after every comma: a list of choices without
// spaces ("TEXT:{site,stack,...}", "(parameter,gradient,...)") may be wider than the page, and
// `man` warns that it "can't break line". roff's \: breaks there without a hyphen.
std::string RoffFilled(std::string_view text) {
  return absl::StrReplaceAll(Roff(text), {{",", ",\\:"}});
}

// An option name in bold, its dashes as roff's minus so that searching the page for "--at" works.
std::string RoffOption(const std::string& name) {
  return absl::StrCat("\\fB", absl::StrReplaceAll(name, {{"-", "\\-"}}), "\\fR");
}

void ManOptions(const std::vector<OptionDoc>& options, std::ostream& out) {
  for (const OptionDoc& o : options) {
    std::vector<std::string> names;
    for (const std::string& n : o.names) {
      names.push_back(o.positional ? absl::StrCat("\\fI", Roff(n), "\\fR") : RoffOption(n));
    }
    out << ".TP\n" << absl::StrJoin(names, ", ");
    if (!o.positional && o.takes_value) out << " \\fI" << RoffFilled(o.type) << "\\fR";
    out << "\n" << RoffFilled(o.description);
    if (!o.default_value.empty()) out << " (default: " << RoffFilled(o.default_value) << ")";
    if (o.required) out << " (required)";
    out << "\n";
  }
}

// A footer (notes, then "Examples:" and indented command lines) as a literal, unfilled block.
void ManFooter(const std::string& footer, std::ostream& out) {
  if (footer.empty()) return;
  out << ".PP\n.nf\n" << Roff(footer) << "\n.fi\n";
}

}  // namespace

std::string RenderManPage(const AppDoc& app, std::string_view version) {
  std::ostringstream out;
  std::string upper = absl::AsciiStrToUpper(app.name);
  out << ".\\\" Generated by `" << app.name << " help-man`; do not edit by hand.\n"
      << ".TH " << upper << " 1 \"\" \"" << Roff(version) << "\" \"User Commands\"\n"
      << ".nh\n.ad l\n"  // no hyphenation, ragged right: flag names and paths stay whole
      << ".SH NAME\n"
      << app.name << " \\- analyze PyTorch CUDA memory snapshots\n"
      << ".SH SYNOPSIS\n"
      << ".B " << app.name << "\n"
      << "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] \\fIARGS\\fR...\n"
      << ".SH DESCRIPTION\n"
      << RoffFilled(app.description) << "\n"
      << ".PP\nCommands:\n";
  for (const CommandDoc& c : app.commands) {
    out << ".TP\n.B " << c.name << "\n" << RoffFilled(c.description) << "\n";
  }
  out << ".SH GLOBAL OPTIONS\n";
  ManOptions(app.global, out);
  ManFooter(app.footer, out);
  out << ".SH COMMANDS\n";
  for (const CommandDoc& c : app.commands) {
    out << ".SS \"" << Roff(Usage(app.name, c)) << "\"\n" << RoffFilled(c.description) << "\n";
    ManOptions(c.options, out);
    ManFooter(c.footer, out);
  }
  out << ".SH EXIT STATUS\n"
      << "0 success; 1 a check failed (\\fBcheck\\fR, \\fBleaks \\-\\-fail\\-on\\-leak\\fR); "
      << "2 unusable input or a usage error.\n"
      << ".SH SEE ALSO\n"
      << "\\fB" << app.name << " \\fICOMMAND\\fB \\-\\-help\\fR; cli.md (in share/doc/" << app.name
      << "), this page as markdown.\n";
  return out.str();
}

namespace {

std::string Words(const std::vector<std::string>& words) { return absl::StrJoin(words, " "); }

std::vector<std::string> OptionNames(const std::vector<OptionDoc>& options, bool with_value) {
  std::vector<std::string> out;
  for (const OptionDoc& o : options) {
    if (o.positional || o.takes_value != with_value) continue;
    out.insert(out.end(), o.names.begin(), o.names.end());
  }
  return out;
}

}  // namespace

std::string RenderBashCompletion(const AppDoc& app) {
  std::ostringstream out;
  std::vector<std::string> commands;
  for (const CommandDoc& c : app.commands) commands.push_back(c.name);
  std::vector<std::string> global = OptionNames(app.global, false);
  std::vector<std::string> global_values = OptionNames(app.global, true);
  global.insert(global.end(), global_values.begin(), global_values.end());
  global.push_back("--help");
  const std::string fn = absl::StrCat("_", app.name);
  out << "# bash completion for " << app.name << " (generated by `" << app.name
      << " completion bash`).\n"
      << "# Install: " << app.name
      << " completion bash > ~/.local/share/bash-completion/completions/" << app.name << "\n"
      << fn << "() {\n"
      << "  local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"\" cmd=\"\" i\n"
      << "  ((COMP_CWORD > 0)) && prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
      << "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      << "    case \"${COMP_WORDS[i]}\" in -*) ;; *) cmd=\"${COMP_WORDS[i]}\"; break ;; esac\n"
      << "  done\n"
      << "  if [[ -z \"$cmd\" ]]; then\n"
      << "    if [[ \"$cur\" == -* ]]; then\n"
      << "      COMPREPLY=($(compgen -W \"" << Words(global) << "\" -- \"$cur\"))\n"
      << "    else\n"
      << "      COMPREPLY=($(compgen -W \"" << Words(commands) << "\" -- \"$cur\"))\n"
      << "    fi\n"
      << "    return 0\n"
      << "  fi\n"
      << "  local flags=\"\" valued=\"\"\n"
      << "  case \"$cmd\" in\n";
  for (const CommandDoc& c : app.commands) {
    std::vector<std::string> flags = OptionNames(c.options, false);
    flags.push_back("--help");
    std::vector<std::string> valued = OptionNames(c.options, true);
    out << "    " << c.name << ") flags=\"" << Words(flags) << "\"; valued=\"" << Words(valued)
        << "\" ;;\n";
  }
  out << "  esac\n"
      << "  case \"$cmd $prev\" in\n";
  for (const CommandDoc& c : app.commands) {
    for (const OptionDoc& o : c.options) {
      if (o.positional || o.choices.empty()) continue;
      std::vector<std::string> patterns;
      for (const std::string& n : o.names)
        patterns.push_back(absl::StrCat("\"", c.name, " ", n, "\""));
      out << "    " << absl::StrJoin(patterns, "|") << ")\n"
          << "      COMPREPLY=($(compgen -W \"" << Words(o.choices)
          << "\" -- \"$cur\")); return 0 ;;\n";
    }
  }
  out << "  esac\n"
      << "  if [[ \"$cur\" == -* ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"$flags $valued " << Words(global) << "\" -- \"$cur\"))\n"
      << "    return 0\n"
      << "  fi\n"
      << "  COMPREPLY=($(compgen -f -- \"$cur\"))\n"
      << "}\n"
      << "complete -o filenames -o bashdefault -F " << fn << " " << app.name << "\n";
  return out.str();
}

}  // namespace memsnap::cli
