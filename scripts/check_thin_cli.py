#!/usr/bin/env python3
"""Fails when a command file of src/cli does work that belongs to the query layer, or a renderer
of src/report decides what it prints.

  check_thin_cli.py SOURCE_DIR

docs/design.md ("Queries"): every file is read through query::Session, timelines are built by
the session, and moments are resolved by query::ResolveMomentArg, so that every command, the page
and the Python module answer from the same reading. A command file (src/cli/*_command.cpp, and
the helpers beside them) that calls the reader, rebuilds a timeline, or parses or resolves a
moment on its own is named here with the line, and the exit status is 1. So is a command or a
renderer (src/report, include/memsnap/report) that groups or categorizes lifetimes itself: a
block's site and kind are decided once, by analysis through the query layer (issue 32), and a
renderer only prints them. Rows of figures are a typed Table (docs/coding-guidelines.md §15,
docs/tables.md): a renderer that writes a Markdown table by hand, or pads the columns of a text
table with printf widths, is named too."""
import os
import re
import sys

FORBIDDEN = [
    (re.compile(r'\bparse::ReadSnapshot\b'), "reads a file itself (use OpenSession / query::Session)"),
    (re.compile(r'\bReconstructTimeline\b'), "rebuilds a timeline itself (declare it in the query's Needs)"),
    (re.compile(r'\bTimelineStream\b'), "runs a timeline pass itself (query::Session does)"),
    (re.compile(r'\banalysis::ParseMoment\b'), "parses a moment itself (MomentFlag / query::ParseMomentArg)"),
    (re.compile(r'\banalysis::(ResolveMoment|CheckMoment)\b'),
     "resolves a moment itself (query::ResolveMomentArg)"),
    (re.compile(r'\bGroupContext\b'), "groups or categorizes lifetimes itself (a query decides)"),
]

# What a renderer may not do: decide a lifetime's site or category (that is analysis, asked
# through a query: query::ExportQuery, analysis::LifetimeSitesOf).
RENDERER_FORBIDDEN = [
    (re.compile(r'\bGroupContext\b'), "categorizes or groups lifetimes itself (read the query's result)"),
    (re.compile(r'\bCategoriz(e|er|ers)\b'), "categorizes lifetimes itself (read the query's result)"),
    (re.compile(r'\bSiteLabels\b'), "labels sites itself (read the query's result)"),
]

# A table written by hand instead of through report/table_render.h: a Markdown separator row, or
# a format string with two or more padded fields ("%12s %-16s").
HAND_TABLE_RULES = [
    (re.compile(r'"[^"\n]*\|\s*:?---'), "writes a Markdown table by hand (build a Table)"),
    (re.compile(r'"[^"\n]*%-?(\*|\d+)[sd][^"\n]*%-?(\*|\d+)[sd]'),
     "pads table columns by hand (build a Table)"),
]
# The generic renderers themselves; replay_render.cpp pads the fields of one event line (a segment
# event's action, address and size), not a table.
HAND_TABLES_ALLOWED = {"table_render.cpp", "replay_render.cpp"}


def scan(root, folder, suffixes, rules, problems, skip=()):
    where = os.path.join(root, folder)
    for name in sorted(os.listdir(where)):
        if not name.endswith(suffixes) or name in skip:
            continue
        with open(os.path.join(where, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                if line.lstrip().startswith("//"):
                    continue  # a comment may name what the code must not do
                for pattern, why in rules:
                    if pattern.search(line):
                        problems.append(f"{folder}/{name}:{lineno}: {why}: {line.strip()}")


def main():
    root = sys.argv[1]
    problems = []
    scan(root, os.path.join("src", "cli"), (".cpp",), FORBIDDEN, problems)
    scan(root, os.path.join("src", "report"), (".cpp", ".h"), RENDERER_FORBIDDEN, problems)
    scan(root, os.path.join("include", "memsnap", "report"), (".h",), RENDERER_FORBIDDEN, problems)
    report = os.path.join("src", "report")
    scan(root, report, (".cpp",), HAND_TABLE_RULES[:1], problems, HAND_TABLES_ALLOWED)
    scan(root, report, (".cpp",), HAND_TABLE_RULES[1:], problems, HAND_TABLES_ALLOWED)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_thin_cli: {len(problems)} problem(s); see docs/design.md, \"Queries\"",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
