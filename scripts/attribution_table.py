#!/usr/bin/env python3
"""Prints the table of docs/attribution.md "How much ends up unknown": for every snapshot in a
folder, the live bytes at the peak (at the end for files without a trace) by category, as
`memsnap top --by category --json` reports them.

  scripts/attribution_table.py CORPUS_DIR [--memsnap build/memsnap]
"""
import argparse
import json
import os
import subprocess
import sys

CATEGORIES = ["parameter", "gradient", "optimizer_state", "activation", "temporary", "input",
              "kv_cache", "autocast_cache", "state", "unknown"]
SHORT = {"parameter": "param", "gradient": "grad", "optimizer_state": "optim", "activation": "act",
         "temporary": "temp", "input": "input", "kv_cache": "kv", "autocast_cache": "autocast",
         "state": "state", "unknown": "**unknown**"}


def size(b):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.1f} {unit}"
        b /= 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus")
    ap.add_argument("--memsnap", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "memsnap"))
    args = ap.parse_args()
    files = sorted(f for f in os.listdir(args.corpus)
                   if f not in ("README.md", "manifest.json") and not f.startswith("."))
    print("| file | live at the peak | " + " | ".join(SHORT[c] for c in CATEGORIES) + " |")
    print("|---|---:|" + "---:|" * len(CATEGORIES))
    totals = {c: 0 for c in CATEGORIES}
    for f in files:
        proc = subprocess.run([args.memsnap, "-q", "top", "--by", "category", "--json",
                               os.path.join(args.corpus, f)], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"| `{f}` | unreadable: {proc.stderr.strip()[:60]} |" + " |" * len(CATEGORIES))
            continue
        j = json.loads(proc.stdout)
        total = j["total_bytes"]
        cats = j["categories"]
        cells = []
        for c in CATEGORIES:
            b = cats.get(c, 0)
            totals[c] += b
            cells.append("-" if b == 0 else f"{100.0 * b / total:.0f}%" if total else "-")
        print(f"| `{f}` | {size(total)} | " + " | ".join(cells) + " |")
    grand = sum(totals.values())
    cells = [f"{100.0 * totals[c] / grand:.1f}%" if grand else "-" for c in CATEGORIES]
    print(f"| **all files** | {size(grand)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
