#!/usr/bin/env python3
"""memsnap benchmark (issue 2 "Benchmark", issue 8 "Scale"); results go in docs/BENCHMARKS.md.

Generates snapshots with build/bench/memsnap_gen, then times `memsnap summary` against
`python3 -c 'pickle.load(...)'` on the same file in the same run, alternating the two so machine
noise hits both alike, and records each child's peak RSS (wait4 rusage). Also times the other
analysis commands that this build has (timeline, top, replay: whatever `memsnap --help` lists),
and, for issue 3, the analysis CPU time of `timeline` and `top` as a share of their own read
(`--timings`, median of at least 5 alternating runs).

  bench/run_bench.py                 # (a) 2.2M events ~170 MB, (b) ~1.5 GB, (c) 64 rank files
  bench/run_bench.py --quick         # (a) only, one repetition
  bench/run_bench.py --no-large      # skip (b)
  bench/run_bench.py --threads 1,2   # also summary with --threads 1 and 2 (the scaling table)
  bench/run_bench.py --cases d       # issue 54's cost shapes against normal files of their size
The generated files are ours (memsnap_gen), so plain pickle.load on them is safe."""
import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def warm(cmd):
    """Reads the snapshot files named in `cmd` (files, or a directory's files) through the page
    cache, untimed: these VMs run DAMON's proactive reclaim (a `pageout` scheme on physical
    memory), which evicts page-cache pages it sees as cold, so a timed run would otherwise read part
    of its input from disk (tens of milliseconds of noise; docs/BENCHMARKS.md)."""
    for a in cmd[1:]:  # cmd[0] is the program
        if not os.path.exists(a):
            continue
        paths = [os.path.join(a, f) for f in sorted(os.listdir(a))] if os.path.isdir(a) else [a]
        for p in paths:
            if os.path.isfile(p):
                with open(p, "rb", buffering=0) as fh:
                    while fh.read(8 << 20):
                        pass


def run(cmd, quiet=True):
    """Runs cmd, its input files read into the page cache first (warm); returns (wall seconds,
    peak RSS bytes, exit code, CPU seconds user+sys)."""
    warm(cmd)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL if quiet else None,
                            stderr=subprocess.DEVNULL if quiet else None)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    return (elapsed, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status),
            usage.ru_utime + usage.ru_stime)


def best(cmd, reps):
    runs = [run(cmd) for _ in range(reps)]
    ok = [r for r in runs if r[2] == 0]
    if not ok:
        return None
    return min(r[0] for r in ok), min(r[3] for r in ok), max(r[1] for r in ok)


def phases(memsnap, cmd, path):
    """Issue 3's measure: `memsnap --timings CMD FILE` prints the read and the analysis times (wall
    and process CPU) of one run separately; returns them in ms, or None on failure. For `timeline`
    and `top` the timeline's event pass runs on a second thread during the read, so the read's CPU
    includes it and the analysis after the read is the reconciliation alone."""
    proc = subprocess.run([memsnap, "--timings", cmd, path], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    m = re.search(r"read ([\d.]+) ms \(cpu ([\d.]+) ms\), analysis ([\d.]+) ms \(cpu ([\d.]+) ms\)",
                  proc.stderr)
    if proc.returncode != 0 or not m:
        return None
    return {"read_wall_ms": float(m.group(1)), "read_ms": float(m.group(2)),
            "analysis_wall_ms": float(m.group(3)), "analysis_ms": float(m.group(4))}


def analysis_share(args, path, reps):
    """Medians, over at least 5 alternating runs, of the read and the analysis of `timeline` and
    `top` (`--timings`) and their ratios; and of the whole `summary`, `timeline` and `top` commands
    (wall and CPU), which is what the overlapped pass costs in the end."""
    out = {}
    runs = {cmd: [] for cmd in ("timeline", "top") if cmd in args.available}
    whole = {cmd: [] for cmd in ("summary", "timeline", "top") if cmd in args.available}
    for _ in range(max(reps, 5)):
        for cmd in runs:
            r = phases(args.memsnap, cmd, path)
            if r:
                runs[cmd].append(r)
        for cmd in whole:
            r = run([args.memsnap, "--quiet", cmd, path])
            if r[2] == 0:
                whole[cmd].append(r)
    for cmd, rs in runs.items():
        if not rs:
            continue
        names = {"read_ms": "read_cpu_ms", "analysis_ms": "analysis_cpu_ms",
                 "read_wall_ms": "read_wall_ms", "analysis_wall_ms": "analysis_wall_ms"}
        for key, name in names.items():
            out[f"{cmd}_{name}"] = statistics.median(r[key] for r in rs)
        out[f"{cmd}_analysis_share"] = out[f"{cmd}_analysis_cpu_ms"] / out[f"{cmd}_read_cpu_ms"]
        out[f"{cmd}_analysis_share_wall"] = out[f"{cmd}_analysis_wall_ms"] / out[f"{cmd}_read_wall_ms"]
    for cmd, rs in whole.items():
        if rs:
            out[f"{cmd}_cmd_wall_ms"] = 1000 * statistics.median(r[0] for r in rs)
            out[f"{cmd}_cmd_cpu_ms"] = 1000 * statistics.median(r[3] for r in rs)
    return out


def py_load(paths):
    code = "import pickle,sys\nfor p in sys.argv[1:]:\n    pickle.load(open(p,'rb'))\n"
    return [sys.executable, "-c", code] + paths


def commands(memsnap):
    out = subprocess.run([memsnap, "--help"], capture_output=True, text=True).stdout
    names = []
    for line in out.splitlines():
        parts = line.split()
        if parts and line.startswith("  ") and parts[0].isidentifier():
            names.append(parts[0])
    return names


def gen(args, path, events, devices=1, seed=1):
    if os.path.exists(path) and not args.regen:
        return None
    t, rss, rc, _ = run([args.gen, "--events", str(events), "--seed", str(seed), "--devices",
                      str(devices), "--protocol", "4", "-o", path])
    if rc != 0:
        sys.exit(f"memsnap_gen failed on {path}")
    return t, rss


def compare(args, label, paths, reps, python=True):
    size = sum(os.path.getsize(p) for p in paths)
    target = paths[0] if len(paths) == 1 else os.path.dirname(paths[0])
    row = {"case": label, "files": len(paths), "bytes": size}
    ms, py = [], []
    scaling = {n: [] for n in args.threads}
    for _ in range(reps):  # alternate, so noise hits both
        ms.append(run([args.memsnap, "--quiet", "summary", target]))
        if python:
            py.append(run(py_load(paths)))
        for n in args.threads:  # the scaling table: the same command with --threads N
            scaling[n].append(run([args.memsnap, "--quiet", "--threads", str(n), "summary", target]))
    for n, rs in scaling.items():
        ok = [r for r in rs if r[2] == 0]
        if ok:
            row[f"threads{n}_s"] = min(r[0] for r in ok)
            row[f"threads{n}_cpu_s"] = min(r[3] for r in ok)
            if python:
                row[f"threads{n}_speedup"] = min(r[0] for r in py) / row[f"threads{n}_s"]
    ok = [r for r in ms if r[2] == 0]
    if not ok:
        sys.exit(f"memsnap summary failed on {target}")
    row["memsnap_s"] = min(r[0] for r in ok)
    row["memsnap_cpu_s"] = min(r[3] for r in ok)
    row["memsnap_rss"] = max(r[1] for r in ok)
    if python:
        row["python_s"] = min(r[0] for r in py)
        row["python_cpu_s"] = min(r[3] for r in py)
        row["python_rss"] = max(r[1] for r in py)
        row["speedup"] = row["python_s"] / row["memsnap_s"]
        row["speedup_cpu"] = row["python_cpu_s"] / row["memsnap_cpu_s"]
    row["rss_over_file"] = row["memsnap_rss"] / size
    if len(paths) == 1:
        for cmd in ("timeline", "top", "replay", "frag", "check"):
            if cmd in args.available:
                r = best([args.memsnap, "--quiet", cmd, paths[0]], reps)
                if r:
                    row[f"{cmd}_s"], row[f"{cmd}_cpu_s"], row[f"{cmd}_rss"] = r
        row.update(analysis_share(args, paths[0], reps))
    print(json.dumps(row), flush=True)
    return row


# Case d (issue 54): each command on a cost shape and on a normal file of the same size.
COST_COMMANDS = [["summary"], ["top"], ["timeline"], ["blocks"], ["frag", "--no-replay"], ["leaks"],
                 ["check", "--max-reserved", "1TiB"], ["report", "-o", "{out}.html"],
                 ["export", "-f", "perfetto", "-o", "{out}.json"], ["diff", "{file}"]]


def cost_case(args, label, shape, n, reps):
    """Rows of case d: `shape` at N (bench/cost_shapes.py) against a normal trace of its size."""
    shapes = os.path.join(ROOT, "bench", "cost_shapes.py")
    path = os.path.join(args.dir, f"d_{shape}_{n}.pickle")
    normal = os.path.join(args.dir, f"d_{shape}_{n}_normal.pickle")
    if args.regen or not os.path.exists(path):
        subprocess.run([sys.executable, shapes, shape, str(n), "-o", path], check=True)
    if args.regen or not os.path.exists(normal):
        code = ("import sys; sys.path.insert(0, sys.argv[1]); import cost_shapes as c, pickle; "
                "pickle.dump(c.make('normal', c.normal_entries(int(sys.argv[2]))), "
                "open(sys.argv[3], 'wb'), protocol=4)")
        subprocess.run([sys.executable, "-c", code, os.path.dirname(shapes),
                        str(os.path.getsize(path)), normal], check=True)
    out = os.path.join(args.dir, "d_out")
    rows = []
    for cmd in COST_COMMANDS:
        row = {"case": label, "command": " ".join(cmd).replace("{out}", "OUT").replace(
            "{file}", "FILE"), "bytes": os.path.getsize(path), "normal_bytes": os.path.getsize(normal)}
        for key, f in (("shape", path), ("normal", normal)):
            argv = [a.replace("{file}", f).replace("{out}", out) for a in cmd]
            r = best([args.memsnap, "--quiet"] + argv + [f], reps)
            if r is None:
                row[f"{key}_failed"] = True
                continue
            row[f"{key}_s"], row[f"{key}_cpu_s"], row[f"{key}_rss"] = r
            # What the command wrote: its standard output, or its -o file. Written to a file, never
            # held here: a child forked from a larger parent starts with the parent's RSS.
            with open(out + ".stdout", "wb") as so:
                subprocess.run([args.memsnap, "--quiet"] + argv + [f], stdout=so,
                               stderr=subprocess.DEVNULL)
            row[f"{key}_output_bytes"] = os.path.getsize(out + ".stdout") + sum(
                os.path.getsize(a) for a in argv if a.startswith(out) and os.path.exists(a))
        if "shape_s" in row and "normal_s" in row:
            row["time_ratio"] = row["shape_s"] / row["normal_s"]
            row["rss_ratio"] = row["shape_rss"] / row["normal_rss"]
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench_data"),
                    help="where generated snapshots are kept (reused unless --regen)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-large", action="store_true", help="skip the ~1.5 GB file")
    ap.add_argument("--python-large", action="store_true",
                    help="also pickle.load the ~1.5 GB file (needs ~10 GB of memory)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--regen", action="store_true")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--cases", default="abc",
                    help="which cases to run (default abc; d: issue 54's cost shapes)")
    ap.add_argument("--threads", default="",
                    help="also run summary with --threads N for each N of this list, in the same "
                         "alternating loop (e.g. 1,2,4): the scaling table")
    args = ap.parse_args()
    args.threads = [int(n) for n in args.threads.split(",") if n]
    args.memsnap = os.path.join(args.build, "memsnap")
    args.gen = os.path.join(args.build, "bench", "memsnap_gen")
    args.available = commands(args.memsnap)
    reps = 1 if args.quick else args.reps
    os.makedirs(args.dir, exist_ok=True)
    results = {"machine": {"cpu": platform.processor() or platform.machine(),
                           "cores": os.cpu_count(), "python": platform.python_version(),
                           "load_avg": os.getloadavg()}, "generate": {}, "rows": []}

    a = os.path.join(args.dir, "a_2.2M.pickle")
    if "a" in args.cases:
        results["generate"]["a"] = gen(args, a, 2_200_000)
        results["rows"].append(compare(args, "a: 2.2M events", [a], reps))
    if not args.quick and not args.no_large and "b" in args.cases:
        b = os.path.join(args.dir, "b_1.5GB.pickle")
        results["generate"]["b"] = gen(args, b, 19_500_000)
        results["rows"].append(compare(args, "b: ~1.5 GB", [b], 1, python=args.python_large))
    if not args.quick and "c" in args.cases:
        ranks = os.path.join(args.dir, "ranks")
        os.makedirs(ranks, exist_ok=True)
        paths = [os.path.join(ranks, f"rank{r:02d}.pickle") for r in range(64)]
        t0 = time.perf_counter()
        for r, p in enumerate(paths):
            gen(args, p, 40_000, seed=100 + r)
        results["generate"]["c"] = [time.perf_counter() - t0, 0]
        results["rows"].append(compare(args, "c: 64 ranks", paths, reps))
    if "d" in args.cases:
        results["rows"] += cost_case(args, "d: 100,000 devices", "devices", 100_000, reps)
        results["rows"] += cost_case(args, "d: 100,000 traced devices", "traced-devices", 100_000,
                                     reps)
        results["rows"] += cost_case(args, "d: 500,000 frames", "frames", 500_000, reps)
    results["machine"]["load_avg_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
