#!/usr/bin/env python3
"""Fails when a command file of src/cli does work that belongs to the query layer.

  check_thin_cli.py SOURCE_DIR

docs/design.md ("Queries"): every file is read through query::Session, timelines are built by
the session, and moments are resolved by query::ResolveMomentArg, so that every command, the page
and the Python module answer from the same reading. A command file (src/cli/*_command.cpp, and
the helpers beside them) that calls the reader, rebuilds a timeline, or parses or resolves a
moment on its own is named here with the line, and the exit status is 1."""
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
]


def main():
    root = sys.argv[1]
    cli = os.path.join(root, "src", "cli")
    problems = []
    for name in sorted(os.listdir(cli)):
        if not name.endswith(".cpp"):
            continue
        with open(os.path.join(cli, name), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                for pattern, why in FORBIDDEN:
                    if pattern.search(line):
                        problems.append(f"src/cli/{name}:{lineno}: {why}: {line.strip()}")
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_thin_cli: {len(problems)} problem(s); see docs/design.md, \"Queries\"",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
