#!/usr/bin/env python3
"""Writes metadata.json and metadata_base.json: a short trace whose entries carry the per-entry
`user_metadata` (torch.cuda.memory._set_memory_metadata, PyTorch 2.9) and `compile_context`
(the torch.compile region, 2.6) keys as newer PyTorch writes them, beside entries without them
(docs/attribution.md, "Metadata and compile context"; standard library only; run it again after
changing it, the JSON is committed).

One device, one 32 MiB segment, allocations in this order (innermost frame first):

  A  4 MiB   model.py:10 forward   metadata {"step": 1, "phase": "fwd"} (a dict, as the program
                                    set it), compile context "Torch-Compiled Region: 0/0"
  B  2 MiB   model.py:11 forward   metadata "step1-fwd" (a string), compile context "N/A" (off)
  C  1 MiB   train.py:5 train      neither key
  D  8 MiB   model.py:20 backward  metadata {"step": 1, "phase": "bwd"}, compile context
                                    "Torch-Compiled Region: 1/0" (4 MiB in metadata_base.json)
  (B freed)
  E  512 KiB model.py:12 forward   metadata "" (none), compile context "Torch-Compiled Region: 0/0"

Known answer at the peak (after D: A, B, C, D live; 15 MiB, 11 MiB in the base): `--by metadata`
rows {step: 1, phase: bwd} 8 MiB, {step: 1, phase: fwd} 4 MiB, step1-fwd 2 MiB, [no metadata]
1 MiB; `--by compile_context` rows Torch-Compiled Region: 1/0 8 MiB, Torch-Compiled Region: 0/0
4 MiB, [no compile context] 3 MiB. Against the base, `diff`/`check --by metadata` put the growth
(+4 MiB) on {step: 1, phase: bwd}.
"""
import json
import os

KiB, MiB = 1 << 10, 1 << 20
BASE = 0x7F0000000000
T0 = 1_700_000_000_000_000


def py(path, line, name):
    return {"name": name, "filename": path, "line": line}


TRAIN = [py("train.py", 30, "train_step"), py("train.py", 50, "<module>")]

# name, size, frames, user_metadata (None: key absent), compile_context (None: key absent)
ALLOCS = [
    ("A", 4 * MiB, [py("model.py", 10, "forward"), *TRAIN], {"step": 1, "phase": "fwd"},
     "Torch-Compiled Region: 0/0"),
    ("B", 2 * MiB, [py("model.py", 11, "forward"), *TRAIN], "step1-fwd", "N/A"),
    ("C", 1 * MiB, [py("train.py", 5, "train"), *TRAIN], None, None),
    ("D", 8 * MiB, [py("model.py", 20, "backward"), *TRAIN], {"step": 1, "phase": "bwd"},
     "Torch-Compiled Region: 1/0"),
    ("E", 512 * KiB, [py("model.py", 12, "forward"), *TRAIN], "", "Torch-Compiled Region: 0/0"),
]


def build(d_size):
    sizes = {name: size for name, size, *_ in ALLOCS}
    sizes["D"] = d_size
    addrs, addr = {}, BASE
    for name, *_ in ALLOCS:
        addrs[name] = addr
        addr += sizes[name]
    total = 32 * MiB
    trace, t = [], T0

    def entry(action, name, frames, meta=None, ctx=None):
        nonlocal t
        t += 1000
        e = {"action": action, "addr": addrs[name], "size": sizes[name], "stream": 0,
             "time_us": t}
        if ctx is not None:
            e["compile_context"] = ctx
        if meta is not None:
            e["user_metadata"] = meta
        e["frames"] = frames
        trace.append(e)

    trace.append({"action": "segment_alloc", "addr": BASE, "size": total, "stream": 0,
                  "time_us": T0, "frames": ALLOCS[0][2]})
    for name, _, frames, meta, ctx in ALLOCS:
        entry("alloc", name, frames, meta, ctx)
        if name == "D":
            b = ALLOCS[1]
            entry("free_requested", "B", b[2])
            entry("free_completed", "B", b[2])
    blocks, used = [], 0
    for name, _, frames, _, _ in ALLOCS:
        state = "inactive" if name == "B" else "active_allocated"
        blocks.append({"address": addrs[name], "size": sizes[name],
                       "requested_size": 0 if name == "B" else sizes[name], "state": state,
                       "frames": [] if name == "B" else frames})
        used += 0 if name == "B" else sizes[name]
    blocks.append({"address": addr, "size": BASE + total - addr, "requested_size": 0,
                   "state": "inactive", "frames": []})
    return {"segments": [{"device": 0, "address": BASE, "total_size": total,
                          "allocated_size": used, "active_size": used, "requested_size": used,
                          "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                          "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [trace]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, d_size in (("metadata.json", 8 * MiB), ("metadata_base.json", 4 * MiB)):
        with open(os.path.join(here, name), "w") as f:
            json.dump(build(d_size), f, indent=1)
            f.write("\n")


if __name__ == "__main__":
    main()
