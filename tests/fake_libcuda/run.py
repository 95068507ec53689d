#!/usr/bin/env python3
"""End-to-end test of `memsnap replay --backend cuda` through the real dlopen path, with the
CPU-only fake libcuda.so.1 of this folder on LD_LIBRARY_PATH. Registered by
cmake/cuda_backend.cmake as ctest `cuda/fake_libcuda`. Usage: run.py MEMSNAP FAKE_LIB_DIR SRC_DIR"""
import json
import os
import subprocess
import sys
import tempfile

memsnap, lib_dir, src = sys.argv[1:4]
tmp = tempfile.mkdtemp(prefix="memsnap_fake_libcuda_")
fixture = os.path.join(tmp, "fixture.pickle")
subprocess.run([sys.executable, os.path.join(src, "tests/gpu/make_fixture.py"), fixture,
                "--peak-gib", "2"], check=True)
failures = []


def run(args, **env):
    e = dict(os.environ, LD_LIBRARY_PATH=lib_dir, **env)
    return subprocess.run([memsnap, "replay", fixture, "--backend", "cuda"] + args, env=e,
                          capture_output=True, text=True)


def expect(cond, what, p=None):
    if not cond:
        failures.append(what + ("" if p is None else f"\n  rc={p.returncode}\n  out={p.stdout[-2000:]}\n  err={p.stderr}"))


ALL = ["--conf", "expandable_segments:True", "--conf", "backend:cudaMallocAsync"]

# 1. All three allocators; the fake driver's accounting must match the simulator.
p = run(ALL + ["--json"])
expect(p.returncode == 0, "json replay failed", p)
if p.returncode == 0:
    out = os.path.join(tmp, "gpu.json")
    open(out, "w").write(p.stdout)
    c = subprocess.run([sys.executable, os.path.join(src, "tests/gpu/check_results.py"), out,
                        "--tolerance", "0", "--slack-mib", "0"], capture_output=True, text=True)
    print(c.stdout)
    expect(c.returncode == 0, "check_results.py found mismatches:\n" + c.stdout)
    rep = json.loads(p.stdout)
    expect(rep["gpu"]["name"] == "memsnap fake libcuda", "gpu name")
    for cfg in rep["configs"]:
        names = [k["name"] for k in cfg["calls"]]
        want = {"native": "cuMemAlloc", "expandable": "cuMemMap",
                "cudaMallocAsync": "cuMemAllocAsync"}[cfg["allocator"]]
        expect(want in names, f"{cfg['allocator']}: no {want} in calls {names}")
        # The fake's counter is exact: the driver saw what the simulator predicted.
        if cfg["predicted_peak_reserved"] is not None:
            expect(cfg["driver_peak"] == cfg["predicted_peak_reserved"],
                   f"{cfg['allocator']}: driver peak {cfg['driver_peak']} != "
                   f"predicted {cfg['predicted_peak_reserved']}")

# 2. Text output.
p = run(ALL)
expect(p.returncode == 0 and "memsnap fake libcuda" in p.stdout and "cuMemAllocAsync" in p.stdout,
       "text replay", p)
print(p.stdout)

# 3. A card too small: OOMs are reported and --scale is suggested; --scale makes it fit.
p = run(["--json"], FAKE_LIBCUDA_MEM_MIB="1024")
expect(p.returncode == 0, "small card replay", p)
if p.returncode == 0:
    rep = json.loads(p.stdout)
    expect(any("--scale" in n for n in rep["notes"]), "no --scale note: " + str(rep["notes"]))
    expect(rep["configs"][0]["ooms"] > 0 and rep["configs"][0]["driver_ooms"] > 0,
           "expected OOMs on a 1 GiB card")
    expect(rep["configs"][0]["ooms"] == rep["configs"][0]["predicted_ooms"],
           "OOMs on the card differ from the prediction")
p = run(["--json", "--scale", "0.25"] + ALL, FAKE_LIBCUDA_MEM_MIB="1024")
expect(p.returncode == 0 and all(c["ooms"] == 0 for c in json.loads(p.stdout or "{}").get("configs", [{"ooms": 1}])),
       "--scale 0.25 should fit a 1 GiB card", p)

# 4. Error paths: exit 2 with a clear message.
p = run([], FAKE_LIBCUDA_DEVICES="0")
expect(p.returncode == 2 and p.stderr.strip() == "memsnap replay: --backend cuda: no CUDA device "
       "found (cuInit: no CUDA-capable device is detected (CUresult 100))", "no device", p)
p = run(["--gpu", "3"])
expect(p.returncode == 2 and p.stderr.strip() == "memsnap replay: --backend cuda: --gpu 3: this "
       "machine has 1 CUDA device (0..0)", "bad ordinal", p)
p = run(["--verify"])
expect(p.returncode == 2 and "--verify" in p.stderr, "--verify with cuda", p)

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
