#!/usr/bin/env python3
"""A memsnap whose one path computes a figure its own way: the test of the consistency test.

  MEMSNAP_REAL=path/to/memsnap MEMSNAP_BREAK=WHAT broken_memsnap.py ARGS...

runs the real memsnap and, for the command WHAT names, changes one figure of its output the way a
path with its own definition would (a reserved peak one event later, a kind of memory split into a
row of its own, a --fits failure whose value stays under its limit, an export that files blocks from
before the trace under a kind of their own, a `frag` that searches its fit on its own). check_consistency.py must
report a disagreement for each (tests/CMakeLists.txt runs it with --expect-fail).
"""
import csv
import io
import json
import os
import subprocess
import sys


def main():
    real, what, args = os.environ["MEMSNAP_REAL"], os.environ["MEMSNAP_BREAK"], sys.argv[1:]
    p = subprocess.run([real, *args], capture_output=True, text=True)
    out = p.stdout
    cmd = args[0] if args else ""
    if "--json" in args and out.strip():
        j = json.loads(out)
        if what == "frag-reserved-event" and cmd == "frag":
            for pk in j.get("peaks", []):
                pk["peak_reserved"]["event_index"] += 1
        elif what == "category-row" and cmd == "top" and "category" in args:
            rows = j.get("rows", [])
            if rows and rows[0]["bytes"] > 1:
                half = rows[0]["bytes"] // 2
                rows[0]["bytes"] -= half
                rows.append({"key": "[allocated before the trace]", "bytes": half})
        elif what == "fits-value" and cmd == "check":
            for c in j.get("checks", []):
                if c.get("metric") == "fits" and not c.get("passed"):
                    c["value"] = c["limit"] - 1
                    c["over"] = -1
        elif what == "fits-own-search" and cmd == "frag":
            # frag searching on its own, to a coarser step: its need 2 MiB above the others'.
            for a in j.get("answers", []):
                fix = a.get("fix") or {}
                if fix.get("recorded_fits_on_bytes"):
                    fix["recorded_fits_on_bytes"] += 2 << 20
        elif what == "timeline-reserved" and cmd == "timeline":
            for d in j.get("devices", []):
                d["peak_reserved_bytes"] += 1
        out = json.dumps(j)
    elif what == "export-category" and cmd == "export" and "csv" in args:
        # A writer that categorizes on its own: blocks from before the trace in a row of their own.
        rows = list(csv.reader(io.StringIO(out)))
        for r in rows[1:]:
            if r[3] in ("pre-window", "ghost"):
                r[-1] = "[allocated before the trace]"
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows(rows)
        out = buf.getvalue()
    sys.stdout.write(out)
    sys.stderr.write(p.stderr)
    return p.returncode


if __name__ == "__main__":
    sys.exit(main())
