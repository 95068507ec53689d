#!/usr/bin/env python3
"""Fails when a source file includes a header of a layer its own layer may not depend on.

  check_layers.py --root=DIR --layer=NAME:DEP,DEP ... [--layer=...]

The build runs it (cmake/layers.cmake passes the rules; every memsnap_<layer> library waits for
it), so a wrong-direction #include fails `cmake --build` before anything compiles. It checks:

  - every file under src/ and include/memsnap/ belongs to a known layer: src/<layer>/...,
    include/memsnap/<layer>/..., or src/main.cpp (the layer `main`). A layer may have
    sub-layers (rules named `<layer>/<sub>`): then its files live in src/<layer>/<sub>/ and
    include/memsnap/<layer>/<sub>/, and a rule that names `<layer>` alone allows all of them;
  - every #include (and __has_include) of a project header names its own layer or one of the
    layers it may depend on: "memsnap/<layer>/x.h" (public headers), "<layer>/x.h" (private
    headers under src/, which only their own layer may include) or "x.h" beside the file;
  - the table "Layers" of docs/design.md lists the same dependencies as the rules given here, so
    the documented architecture is the enforced one.

Each problem is printed as `file:line: what is wrong` with the rule it breaks; exit status 1.
"""
import argparse
import os
import re
import sys

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]')
HAS_INCLUDE_RE = re.compile(r'__has_include\s*\(\s*["<]([^">]+)[">]\s*\)')
DESIGN_ROW_RE = re.compile(r'^\|\s*`src/([a-z_]+(?:/[a-z_]+)?)(?:/|\.cpp)?`\s*\|[^|]*\|\s*([^|]*?)\s*\|\s*$')


def parse_rules(specs):
    rules = {}
    for spec in specs:
        name, _, deps = spec.partition(":")
        rules[name] = set(d for d in deps.split(",") if d)
    return rules


def parents(rules):
    """Layers that are split into sub-layers: `analysis` for `analysis/sites`."""
    return {name.split("/")[0] for name in rules if "/" in name}


def expand(deps, rules):
    """Dependencies with a split layer's name replaced by all of its sub-layers."""
    out = set()
    for d in deps:
        subs = {n for n in rules if n.startswith(d + "/")}
        out |= subs if subs else {d}
    return out


def sub_layer(parts, split):
    """parts[0] is a layer folder's name: that layer, or its sub-layer when it is split."""
    if parts[0] in split:
        return f"{parts[0]}/{parts[1]}" if len(parts) >= 3 else None
    return parts[0]


SPLIT = set()  # set by main(): the layers split into sub-layers


def layer_of(rel):
    """The layer of a file path relative to the root, or None when it is in no layer folder."""
    parts = rel.split("/")
    if parts[0] == "src":
        if len(parts) == 2:
            return "main" if parts[1] == "main.cpp" else None
        return sub_layer(parts[1:], SPLIT)
    if parts[0] == "include" and len(parts) >= 4 and parts[1] == "memsnap":
        return sub_layer(parts[2:], SPLIT)
    return None


def project_header(root, rel, included, layers):
    """(layer, private) of an included project header, or None for a system/third-party one."""
    parts = included.split("/")
    if parts[0] == "memsnap" and len(parts) >= 3:
        return sub_layer(parts[1:], SPLIT), False
    if len(parts) >= 2 and (parts[0] in layers or parts[0] in SPLIT) and os.path.exists(
            os.path.join(root, "src", included)):
        return sub_layer(parts, SPLIT), True
    if len(parts) == 1 and os.path.exists(os.path.join(root, os.path.dirname(rel), included)):
        return layer_of(rel), rel.startswith("src/")
    return None


def check_sources(root, rules):
    problems = []
    layers = set(rules) - {"main"}
    files = []
    for top in ("src", os.path.join("include", "memsnap")):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith((".cpp", ".h", ".cc", ".hpp")):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    for rel in sorted(files):
        rel = rel.replace(os.sep, "/")
        own = layer_of(rel)
        if own not in rules:
            problems.append(f"{rel}:1: not in any layer: a file must live in src/<layer>/ or "
                            f"include/memsnap/<layer>/ for a layer of cmake/layers.cmake "
                            f"({', '.join(sorted(layers))}); add a new layer there and to the "
                            f"table in docs/design.md")
            continue
        allowed = expand(rules[own], rules) | {own}
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                names = HAS_INCLUDE_RE.findall(line) + INCLUDE_RE.findall(line)
                for included in names:
                    target = project_header(root, rel, included, layers)
                    if target is None:
                        continue
                    layer, private = target
                    if layer not in allowed:
                        deps = ", ".join(sorted(rules[own])) or "nothing"
                        problems.append(
                            f'{rel}:{lineno}: includes "{included}": layer {own} may not depend on '
                            f'{layer} ({own} may depend on: {deps}; see the table "Layers" in '
                            f'docs/design.md and cmake/layers.cmake)')
                    elif private and layer != own:
                        problems.append(
                            f'{rel}:{lineno}: includes "{included}": headers under src/{layer}/ '
                            f'are private to layer {layer}; move what {own} needs to '
                            f'include/memsnap/{layer}/')
    return problems


def check_design(root, rules):
    path = os.path.join(root, "docs", "design.md")
    documented = {}
    rows = {}
    in_layers = False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("## "):
                in_layers = line.strip() == "## Layers"
                continue
            m = DESIGN_ROW_RE.match(line.rstrip("\n")) if in_layers else None
            if not m:
                continue
            name = m.group(1)
            cell = m.group(2)
            deps = set() if cell in ("", "—", "-", "nothing") else {
                d.strip() for d in cell.split(",")}
            documented[name] = deps
            rows[name] = lineno
    problems = []
    for name in sorted(set(rules) | set(documented)):
        if name not in documented:
            problems.append(f"docs/design.md:1: the table \"Layers\" has no row for layer {name} "
                            f"(cmake/layers.cmake: {', '.join(sorted(rules[name])) or 'nothing'})")
        elif name not in rules:
            problems.append(f"docs/design.md:{rows[name]}: layer {name} is not in "
                            f"cmake/layers.cmake")
        elif documented[name] != rules[name]:
            problems.append(
                f"docs/design.md:{rows[name]}: layer {name} may depend on "
                f"{', '.join(sorted(documented[name])) or 'nothing'} here but on "
                f"{', '.join(sorted(rules[name])) or 'nothing'} in cmake/layers.cmake: "
                f"make them say the same")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, help="the source tree")
    parser.add_argument("--layer", action="append", default=[], help="NAME:DEP,DEP,...")
    args = parser.parse_args()
    rules = parse_rules(args.layer)
    SPLIT.update(parents(rules))
    unknown = {d for deps in rules.values() for d in deps} - set(rules) - SPLIT
    if unknown:
        print(f"check_layers: rules name unknown layers: {', '.join(sorted(unknown))}",
              file=sys.stderr)
        return 2
    problems = check_sources(args.root, rules) + check_design(args.root, rules)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} problem(s): the layers of docs/design.md are "
              f"broken", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
