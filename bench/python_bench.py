#!/usr/bin/env python3
"""The Python module's read times (issue 34; docs/BENCHMARKS.md, "The Python module").

    PYTHONPATH=build/python python3 bench/python_bench.py FILE [--repeat N] [--memsnap build/memsnap]

FILE is a snapshot pickle, e.g. the 2.2 M-event case a: `build/bench/memsnap_gen --events 2200000
--seed 1 -o a.pickle`. It prints, best of N:
  - the snapshot dict (pickle.load of FILE): pickle.dumps(dict), what torch's _dump_snapshot spends
    before any tool can start, against memsnap.load(dict), which walks the objects into the model;
  - FILE by path: memsnap.load(path), and load(path).summary(), against the CLI's
    `memsnap -q summary FILE` (a whole process: start, read, timeline, summary).
"""
import argparse
import gc
import pickle
import subprocess
import sys
import time

import memsnap


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--memsnap", default="build/memsnap")
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()

    with open(a.file, "rb") as f:
        snapshot = pickle.load(f)
    events = sum(len(t) for t in snapshot.get("device_traces", []))
    print(f"{a.file}: {events:,} trace entries")
    rows = [
        ("pickle.dumps(dict)", best(lambda: pickle.dumps(snapshot, protocol=4), a.repeat)),
        ("memsnap.load(dict)", best(lambda: memsnap.load(snapshot), a.repeat)),
        ("memsnap.load(path)", best(lambda: memsnap.load(a.file, threads=a.threads), a.repeat)),
        ("memsnap.load(path).summary()",
         best(lambda: memsnap.load(a.file, threads=a.threads).summary(), a.repeat)),
        ("CLI: memsnap -q summary FILE",
         best(lambda: subprocess.run([a.memsnap, "-q", "-j", str(a.threads), "summary", a.file],
                                     check=True, stdout=subprocess.DEVNULL), a.repeat)),
    ]
    s = memsnap.load(a.file)
    rows.append(("summary() of a loaded snapshot", best(lambda: s.summary(), a.repeat)))
    for name, t in rows:
        print(f"  {name:34s} {t:8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
