#!/usr/bin/env python3
"""Writes a synthetic memory snapshot (pickle, as torch.cuda.memory._dump_snapshot would) whose
device 0 trace looks like a few training steps: persistent parameters, activations allocated
forward and freed backward, small temporaries on a side stream, one empty_cache-like burst.
Deterministic for a given --seed. Usage: make_fixture.py OUT.pickle [--peak-gib 2] [--seed 1]"""
import argparse
import pickle
import random

MIB = 1 << 20


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--peak-gib", type=float, default=2.0, help="approximate peak live bytes")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    budget = int(a.peak_gib * 1024 * MIB)
    events = []
    t = 1_700_000_000_000_000
    addr = [0x7F0000000000]

    def alloc(size, stream=0):
        nonlocal t
        addr[0] += 1 << 24
        t += 10
        events.append({"action": "alloc", "addr": addr[0], "size": size, "stream": stream,
                       "time_us": t, "frames": []})
        return (addr[0], size, stream)

    def free(block):
        nonlocal t
        a_, size, stream = block
        for action in ("free_requested", "free_completed"):
            t += 10
            events.append({"action": action, "addr": a_, "size": size, "stream": stream,
                           "time_us": t, "frames": []})

    params = []
    used = 0
    while used < budget * 0.25:
        size = rng.choice([4 * MIB, 16 * MIB, 64 * MIB, rng.randrange(1, 200) * MIB + 4096])
        params.append(alloc(size))
        used += size
    for _ in range(a.steps):
        acts = []
        live = used
        while live < budget * 0.9:
            size = rng.choice([rng.randrange(512, 1 << 20), rng.randrange(1, 12) * MIB + 512,
                               rng.randrange(12, 300) * MIB + rng.randrange(0, 1 << 20)])
            acts.append(alloc(size))
            live += size
            if rng.random() < 0.3:  # a short-lived temporary on a side stream
                free(alloc(rng.randrange(512, 4 * MIB), stream=1))
        for block in reversed(acts):
            free(block)
    for block in params:
        free(block)
    snapshot = {"segments": [], "device_traces": [events],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False}}
    with open(a.out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)


if __name__ == "__main__":
    main()
