#!/usr/bin/env python3
"""Snapshots shaped to make a cost grow faster than the input (issue 54, "Cost that grows faster
than the input"), written with Python's own pickle module (protocol 4, as PyTorch writes it).

  cost_shapes.py devices N -o FILE   # N one-block segments, each on its own device (N devices)
  cost_shapes.py traced-devices N -o FILE   # the same, each device with a trace of one entry
  cost_shapes.py frames N -o FILE    # N trace entries on one device, each with a frame of its own
  cost_shapes.py normal N -o FILE    # N trace entries sharing a few stacks: the yardstick

At N = 100,000 `devices` is a 10 MB file and at N = 500,000 `frames` a 40 MB one, the shapes and
sizes of the campaign of issue 54; `normal` is a trace of the same kind of entries whose frames
repeat, as a training loop's do (`normal_entries` says how many make a file of a given size).
Each file is a valid snapshot: the segments tile their blocks, every trace entry is an alloc or
its free, and the trace ends in the dumped state. Used by tests/limits/check_cost_growth.py (small N, growth ratios) and
bench/run_bench.py --cases d (full N, docs/BENCHMARKS.md)."""
import argparse
import pickle
import sys

BLOCK = 2 << 20  # every segment is one 2 MiB block
BASE = 0x7F0000000000


def devices_shape(n):
    """N segments on devices 0..N-1, each one active block; a trace per device, empty."""
    segments = []
    for d in range(n):
        addr = BASE + d * BLOCK
        segments.append({
            "device": d, "address": addr, "total_size": BLOCK, "stream": 0,
            "segment_type": "large", "allocated_size": BLOCK, "active_size": BLOCK,
            "requested_size": BLOCK,
            "blocks": [{"address": addr, "size": BLOCK, "requested_size": BLOCK,
                        "state": "active_allocated", "frames": []}],
        })
    return {"segments": segments, "device_traces": [[] for _ in range(n)]}


def traced_devices_shape(n):
    """devices_shape, each device's trace the alloc of its block."""
    data = devices_shape(n)
    data["device_traces"] = [[{"action": "alloc", "addr": s["address"], "size": s["total_size"],
                               "stream": 0, "time_us": d, "frames": []}]
                             for d, s in enumerate(data["segments"])]
    return data


def trace_shape(n, unique_frames):
    """N trace entries on device 0: allocations of 512 bytes, each freed by the next entry. With
    `unique_frames` every entry's frame is its own (its own file, line and function name);
    otherwise the frames come from 16 stacks, as in a training loop."""
    entries = []
    live = []
    for i in range(n):
        if unique_frames:  # a file, a line and a function of its own
            frames = [{"filename": f"src/m{i}.py", "line": i, "name": f"f{i}"}]
        else:
            frames = [{"filename": "model.py", "line": i % 16, "name": "forward"}]
        if len(live) == 2 or (i % 2 == 1 and live):
            addr = live.pop(0)
            entries.append({"action": "free_completed", "addr": addr, "size": 512, "stream": 0,
                            "time_us": i, "frames": frames})
        else:
            addr = BASE + (i % 4) * 512
            while addr in live:
                addr += 512
            live.append(addr)
            entries.append({"action": "alloc", "addr": addr, "size": 512, "stream": 0,
                            "time_us": i, "frames": frames})
    # The dumped state: one 2 MiB segment holding what is still alive.
    blocks, at = [], BASE
    for addr in sorted(live):
        if addr > at:
            blocks.append({"address": at, "size": addr - at, "requested_size": 0,
                           "state": "inactive"})
        blocks.append({"address": addr, "size": 512, "requested_size": 512,
                       "state": "active_allocated", "frames": []})
        at = addr + 512
    blocks.append({"address": at, "size": BASE + BLOCK - at, "requested_size": 0,
                   "state": "inactive"})
    active = 512 * len(live)
    segment = {"device": 0, "address": BASE, "total_size": BLOCK, "stream": 0,
               "segment_type": "large", "allocated_size": active, "active_size": active,
               "requested_size": active, "blocks": blocks}
    return {"segments": [segment], "device_traces": [entries]}


def normal_entries(size):
    """How many entries make a `normal` file of about `size` bytes."""
    probe = len(pickle.dumps(trace_shape(20000, unique_frames=False), protocol=4))
    return max(1, round(size * 20000 / probe))


def make(shape, n):
    if shape == "devices":
        return devices_shape(n)
    if shape == "traced-devices":
        return traced_devices_shape(n)
    return trace_shape(n, unique_frames=shape == "frames")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shape", choices=["devices", "traced-devices", "frames", "normal"])
    ap.add_argument("n", type=int)
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()
    with open(a.output, "wb") as f:
        pickle.dump(make(a.shape, a.n), f, protocol=4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
