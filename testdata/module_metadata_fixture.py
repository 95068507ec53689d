#!/usr/bin/env python3
"""Writes module_metadata.json: a training step whose trace entries carry the `user_metadata` that
memsnap.record(model=...) sets ("QUALIFIED.NAME (Type) forward|backward", docs/attribution.md,
"Modules"), for `top --by module` (standard library only; run it again after changing it, the JSON
is committed).

One device, one 64 MiB segment. Python frames for the Python thread, the node's native frames for
the autograd engine's (which has no Python frames). In trace order:

  W   4 MiB    weights from before the trace, no entry          [allocated before recording started]
  E   1 MiB    model.embed (Embedding) forward                  activation
  A   2 MiB    model.layers.0.attn (Attention) forward          activation
  M   3 MiB    model.layers.0.mlp (MLP) forward                 activation
  R   512 KiB  model.layers.0 (Block) forward                   activation
  O   256 KiB  model (Model) forward                            activation
  L   128 KiB  the loss at train.py:32, metadata "step 1"       activation (not module metadata:
                                                                the frames decide, [no module: other])
  T   6 MiB    MmBackward0 in model.layers.0.mlp (MLP) backward temporary (freed in backward)
  G1  3 MiB    AccumulateGrad, model.layers.0.mlp (MLP) backward gradient
  G2  2 MiB    AccumulateGrad, model.layers.0.attn (Attention) backward gradient
  S   5 MiB    Adam's state at torch/optim/adam.py, no metadata optimizer_state ([no module: optimizer])

`model.layers` (a ModuleList, which has no forward of its own) is named by no entry: its node shows
no type. Known answer at the peak (the end; T is freed before G2 is made): model 11.75 MiB, of which
model.layers.0 10.5 MiB (mlp 6 MiB: M and G1; attn 4 MiB: A and G2); tests/golden/top/
by_module_metadata.
"""
import json
import os

KiB, MiB = 1 << 10, 1 << 20
BASE = 0x7F0000000000
SEGMENT = 64 * MiB
USER = "/home/alice/proj/"
SITE = "/home/alice/venv/lib/python3.11/site-packages/"


def py(path, line, name):
    return {"name": name, "filename": path, "line": line}


TRAIN = [py(USER + "train.py", 31, "train"), py(USER + "train.py", 50, "<module>")]
MODEL = USER + "model.py"
CALL = [py(SITE + "torch/nn/modules/module.py", 1750, "_call_impl")]


def fwd(*lines):
    """A forward stack: model.py's forwards at `lines`, innermost first, under the training loop."""
    out = []
    for line in lines:
        out += [py(MODEL, line, "forward")] + CALL
    return out + TRAIN


ENGINE = [{"name": "torch::autograd::Engine::evaluate_function(std::shared_ptr<"
                   "torch::autograd::GraphTask>&, torch::autograd::Node*)", "filename": "??",
           "line": 0},
          {"name": "torch::autograd::Engine::thread_main(std::shared_ptr<"
                   "torch::autograd::GraphTask> const&)", "filename": "??", "line": 0}]


def node(name):
    return [{"name": name, "filename": "??", "line": 0}] + ENGINE


MM_BACKWARD = [{"name": "at::_ops::mm::call(at::Tensor const&, at::Tensor const&)",
                "filename": "??", "line": 0}] + node(
    "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)")
ACCUMULATE = node("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)")
ADAM = [py(SITE + "torch/optim/adam.py", 95, "_init_group"),
        py(SITE + "torch/optim/adam.py", 220, "step"),
        py(SITE + "torch/optim/optimizer.py", 487, "wrapper"), py(USER + "train.py", 34, "train"),
        py(USER + "train.py", 50, "<module>")]
LOSS = [py(SITE + "torch/nn/functional.py", 3059, "cross_entropy"),
        py(USER + "train.py", 32, "train"), py(USER + "train.py", 50, "<module>")]

# name, size, frames, user_metadata (None: key absent), freed after (name of the alloc it precedes)
ALLOCS = [
    ("E", 1 * MiB, [py(SITE + "torch/nn/modules/sparse.py", 190, "forward")] + CALL + fwd(20),
     "model.embed (Embedding) forward"),
    ("A", 2 * MiB, fwd(40, 30, 21), "model.layers.0.attn (Attention) forward"),
    ("M", 3 * MiB, fwd(50, 31, 21), "model.layers.0.mlp (MLP) forward"),
    ("R", 512 * KiB, fwd(32, 21), "model.layers.0 (Block) forward"),
    ("O", 256 * KiB, fwd(22), "model (Model) forward"),
    ("L", 128 * KiB, LOSS, "step 1"),
    ("T", 6 * MiB, MM_BACKWARD, "model.layers.0.mlp (MLP) backward"),
    ("G1", 3 * MiB, ACCUMULATE, "model.layers.0.mlp (MLP) backward"),
    ("G2", 2 * MiB, ACCUMULATE, "model.layers.0.attn (Attention) backward"),
    ("S", 5 * MiB, ADAM, None),
]
FREED_BEFORE = {"G2": "T"}  # T is freed before G2 is made
PRE_TRACE = 4 * MiB  # W, at the segment's start


def build():
    addrs, addr = {"W": BASE}, BASE + PRE_TRACE
    for name, size, *_ in ALLOCS:
        addrs[name] = addr
        addr += size
    trace, t = [], 1_700_000_000_000_000

    def entry(action, name, size, frames, meta):
        nonlocal t
        t += 1000
        e = {"action": action, "addr": addrs[name], "size": size, "stream": 0, "time_us": t}
        if meta is not None:
            e["user_metadata"] = meta
        e["frames"] = frames
        trace.append(e)

    frees = {v: k for k, v in FREED_BEFORE.items()}
    sizes = {name: size for name, size, *_ in ALLOCS}
    for name, size, frames, meta in ALLOCS:
        if name in FREED_BEFORE:
            gone = FREED_BEFORE[name]
            for action in ("free_requested", "free_completed"):
                entry(action, gone, sizes[gone], [], None)
        entry("alloc", name, size, frames, meta)
    blocks = [{"address": BASE, "size": PRE_TRACE, "requested_size": PRE_TRACE,
               "state": "active_allocated", "frames": []}]
    used = PRE_TRACE
    for name, size, frames, _ in ALLOCS:
        live = name not in frees
        blocks.append({"address": addrs[name], "size": size,
                       "requested_size": size if live else 0,
                       "state": "active_allocated" if live else "inactive",
                       "frames": frames if live else []})
        used += size if live else 0
    blocks.append({"address": addr, "size": BASE + SEGMENT - addr, "requested_size": 0,
                   "state": "inactive", "frames": []})
    return {"segments": [{"device": 0, "address": BASE, "total_size": SEGMENT,
                          "allocated_size": used, "active_size": used, "requested_size": used,
                          "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                          "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [trace]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "module_metadata.json"), "w") as f:
        json.dump(build(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
