#!/usr/bin/env python3
"""Invariant of `memsnap replay --backend cuda` on the real corpus, through the real dlopen path
with the fake libcuda.so.1 (exact byte counter): for every snapshot with a trace, under native,
expandable and cudaMallocAsync, no driver error; the driver's peak equals the allocator's peak on
the "card" and the simulator's prediction, OOMs equal the prediction; the pool's used high is at
least the live peak. Exits 77 (ctest: skipped) when the corpus is absent, or fails then when
MEMSNAP_REQUIRE_CORPUS=1.
Usage: corpus.py MEMSNAP FAKE_LIB_DIR CORPUS_DIR"""
import glob
import json
import os
import subprocess
import sys

memsnap, lib_dir, corpus = sys.argv[1:4]
files = sorted(glob.glob(os.path.join(corpus, "*.pickle")))
if not files:
    if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
        print(f"FAIL: the corpus {corpus} is absent and MEMSNAP_REQUIRE_CORPUS=1")
        sys.exit(1)
    print(f"skipped: the corpus {corpus} is absent")
    sys.exit(77)
env = dict(os.environ, LD_LIBRARY_PATH=lib_dir, FAKE_LIBCUDA_MEM_MIB="200000")
failures, replayed = [], 0
for f in files:
    p = subprocess.run([memsnap, "replay", f, "--backend", "cuda", "--json",
                        "--conf", "expandable_segments:True", "--conf", "backend:cudaMallocAsync"],
                       env=env, capture_output=True, text=True, timeout=300)
    name = os.path.basename(f)
    if p.returncode != 0:
        if "no trace events" not in p.stderr:
            failures.append(f"{name}: exit {p.returncode}: {p.stderr.strip()}")
        continue
    replayed += 1
    for c in json.loads(p.stdout)["configs"]:
        where = f"{name} [{c['allocator']}]"
        if c["error"]:
            failures.append(f"{where}: {c['error']}")
        pred = c["predicted_peak_reserved"]
        if pred is not None and not (c["peak_reserved"] == pred == c["driver_peak"]):
            failures.append(f"{where}: allocator {c['peak_reserved']} driver {c['driver_peak']} "
                            f"predicted {pred}")
        if pred is not None and c["ooms"] != c["predicted_ooms"]:
            failures.append(f"{where}: ooms {c['ooms']} predicted {c['predicted_ooms']}")
        if c["allocator"] == "cudaMallocAsync" and (c["pool_used_high"] or 0) < c["peak_live"]:
            failures.append(f"{where}: pool used high {c['pool_used_high']} < live {c['peak_live']}")
print(f"{replayed} traces replayed on the fake driver, {len(failures)} failure(s)")
for x in failures:
    print("FAIL:", x)
sys.exit(1 if failures else 0)
