#!/usr/bin/env python3
"""Cost grows with the input, not faster (issue 54, "Cost that grows faster than the input").

Each shape of bench/cost_shapes.py is written at N and 4N: one-block segments on as many devices
(with and without a trace entry each), and a trace whose every entry has a frame of its own. Every
command is run on both; its CPU time and peak RSS, less those of the same command on a one-entry
file of the shape (the fixed cost of a start), must grow at most GROWTH times (a linear cost grows
4 times, N log N a little more, a quadratic one 16 times). The figures are ratios of two runs of
the same build on the same machine, never absolute times: speed itself is measured in bench/
(docs/BENCHMARKS.md, docs/coding-guidelines.md §9). A ratio over the bound is measured again,
from more runs, before it fails. Usage: check_cost_growth.py MEMSNAP SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

MEMSNAP, SOURCE = sys.argv[1], sys.argv[2]
SHAPES = os.path.join(SOURCE, "bench", "cost_shapes.py")

GROWTH = 8.0  # the bound on cost(4N) / cost(N)
FLOOR_S, FLOOR_RSS = 0.02, 8 << 20  # a cost below these is too small to tell a ratio

# (shape, N, commands): N large enough that a quadratic pass shows over the fixed cost.
CASES = [
    ("devices", 4000, [["summary"], ["top"], ["timeline"], ["blocks"], ["frag", "--no-replay"],
                       ["check", "--max-reserved", "1TiB"], ["report", "-o", "{out}.html"],
                       ["diff", "{file}"], ["export", "-f", "perfetto", "-o", "{out}.json"]]),
    ("traced-devices", 3000, [["summary"], ["top"], ["frag", "--no-replay"],
                              ["check", "--max-reserved", "1TiB"], ["report", "-o", "{out}.html"],
                              ["oom", "--device-memory", "1TiB"]]),
    ("frames", 25000, [["summary"], ["top"], ["blocks"], ["leaks"], ["frag", "--no-replay"],
                       ["report", "-o", "{out}.html"], ["diff", "{file}"]]),
]
failures = []


def make(shape, n, path):
    # In a process of its own: a memsnap forked from this one would count the objects built here
    # in its peak RSS until its exec.
    subprocess.run([sys.executable, SHAPES, shape, str(n), "-o", path], check=True)


def cost(cmd, path, out, reps):
    """The least CPU seconds (user + system) and peak RSS of `reps` runs of cmd on path."""
    args = [a.replace("{file}", path).replace("{out}", out) for a in cmd]
    best = None
    for _ in range(reps):
        proc = subprocess.Popen([MEMSNAP, "-j", "1"] + args + [path], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
        err = proc.stderr.read().decode(errors="replace")
        proc.stderr.close()
        if os.waitstatus_to_exitcode(status) not in (0, 1):
            failures.append(f"{' '.join(args)} {path}: exit {os.waitstatus_to_exitcode(status)}: "
                            f"{err.strip()[:300]}")
            return None
        run = (usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)
        best = run if best is None else (min(best[0], run[0]), min(best[1], run[1]))
    return best


def growth(cmd, files, out, reps):
    """(time ratio, RSS ratio, figures) of cmd on the N and 4N files, less the one-entry file's."""
    base, small, large = (cost(cmd, files[k], out, reps) for k in ("one", "n", "4n"))
    if base is None or small is None or large is None:
        return None
    t = (large[0] - base[0]) / max(small[0] - base[0], FLOOR_S)
    m = (large[1] - base[1]) / max(small[1] - base[1], FLOOR_RSS)
    return t, m, (base, small, large)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for shape, n, commands in CASES:
            files = {}
            for key, size in (("one", 1), ("n", n), ("4n", 4 * n)):
                files[key] = os.path.join(tmp, f"{shape}-{size}.pickle")
                make(shape, size, files[key])
            out = os.path.join(tmp, "out")
            for cmd in commands:
                what = f"{shape} {' '.join(cmd)}".replace("{out}", "OUT").replace("{file}", "FILE")
                g = growth(cmd, files, out, 2)
                if g is not None and (g[0] > GROWTH or g[1] > GROWTH):
                    g = growth(cmd, files, out, 5)  # measured again before it fails
                if g is None:
                    continue
                t, m, (base, small, large) = g
                line = (f"{what}: N={n} {small[0]:.3f} s {small[1] >> 20} MiB, 4N {large[0]:.3f} s "
                        f"{large[1] >> 20} MiB (start {base[0]:.3f} s {base[1] >> 20} MiB): time "
                        f"x{t:.1f}, memory x{m:.1f}")
                print(line)
                if t > GROWTH or m > GROWTH:
                    failures.append(f"{line}: grows faster than the input (bound x{GROWTH:g})")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
