#!/usr/bin/env python3
"""Writes a snapshot of two training steps whose optimizer is torch.optim.Adam, run once by its
for-loop implementation (`_single_tensor_adam`) and once by its foreach one (`_multi_tensor_adam`,
`torch._foreach_*` operators), as PyTorch records them (a generator like autocast_fixture.py:
nothing is committed, golden setups call `write()`; standard library only).

The optimizer's frames are those of PyTorch 2.4's torch/optim/adam.py and optimizer.py: `step`
under `_use_grad` and the `wrapper` the profiler hook adds, the functional `adam()` that picks the
implementation, and the arithmetic of the update inside `_single_tensor_adam` / `_multi_tensor_adam`.
With `python_only` the stacks are those of `_record_memory_history(stacks="python")`: no C++
frame, so no operator name either.

  X        1 MiB  batch.to at train.py:20, alive into the forward     input        data_kept
  H        4 MiB  linear in model/net.py:15 forward, saved            activation   saved_for_backward
  G        2 MiB  MmBackward0 (mm): the weight's gradient             gradient     backward_kept
  M, V     2 MiB  exp_avg / exp_avg_sq in _init_group (step 1)        optimizer_state optimizer_kept
  step 1 (single tensor): sqrt 2 MiB and div 2 MiB of `exp_avg_sq.sqrt() / bias_correction2_sqrt`
  step 2 (foreach): _foreach_mul 2 MiB (the step sizes), _foreach_sqrt 2 MiB, _foreach_div 2 MiB,
           _foreach_add 2 MiB (the denominators); each freed before the step returns
Known answer: every allocation of the update's arithmetic is `temporary` (optimizer_freed), never
`input` (docs/attribution.md, "Phases"); M and V are optimizer_state.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attribution_fixture as af  # noqa: E402

MiB = af.MiB
ADAM = af.SITE + "torch/optim/adam.py"
OPTIMIZER = af.SITE + "torch/optim/optimizer.py"
STEP = [af.py(ADAM, 166, "step"), af.py(OPTIMIZER, 79, "_use_grad"),
        af.py(OPTIMIZER, 391, "wrapper"), af.py(af.TRAIN, 25, "train"), af.MAIN]
FUNCTIONAL = [af.py(ADAM, 752, "adam"), af.py(OPTIMIZER, 150, "maybe_fallback")] + STEP


def stacks(python_only):
    def call(ops, frames):
        if python_only:
            return frames
        return af.with_python(ops, frames)

    s = dict(af.STACKS)
    s.update({
        "exp_avg": call(af.op("empty_like") + af.op("zeros_like"),
                        [af.py(ADAM, 132, "_init_group")] + STEP),
        "exp_avg_sq": call(af.op("empty_like") + af.op("zeros_like"),
                           [af.py(ADAM, 136, "_init_group")] + STEP),
        "sqrt": call(af.op("sqrt"), [af.py(ADAM, 411, "_single_tensor_adam")] + FUNCTIONAL),
        "div": call(af.op("div_Tensor"), [af.py(ADAM, 411, "_single_tensor_adam")] + FUNCTIONAL),
        "f_sqrt": call(af.op("_foreach_sqrt"), [af.py(ADAM, 560, "_multi_tensor_adam")] +
                       FUNCTIONAL),
        "f_div": call(af.op("_foreach_div_List"), [af.py(ADAM, 561, "_multi_tensor_adam")] +
                      FUNCTIONAL),
        "f_add": call(af.op("_foreach_add_Scalar"), [af.py(ADAM, 562, "_multi_tensor_adam")] +
                      FUNCTIONAL),
        "f_mul": call(af.op("_foreach_mul_Scalar"), [af.py(ADAM, 548, "_multi_tensor_adam")] +
                      FUNCTIONAL),
    })
    if python_only:
        # The engine's thread has no Python frames: its allocations have empty stacks.
        for k in ("relu_bw", "grad", "acc", "engine_sum"):
            s[k] = []
        for k in ("to", "batch", "linear", "relu", "einsum_a", "einsum_b", "loss", "seed"):
            s[k] = [f for f in s[k] if f["filename"] != "??" and not f["filename"].endswith(".cpp")
                    and not f["filename"].endswith(".o")]
    return s


def write(path, python_only=False):
    sim = af.Sim(stacks(python_only))
    engine_free = [] if python_only else af.ENGINE_FREE
    sim.alloc(4 * MiB, None, traced=False)  # the weights, from before the trace
    for first in (True, False):
        x = sim.alloc(1 * MiB, "batch")
        h = sim.alloc(4 * MiB, "linear")
        loss = sim.alloc(512 * af.KiB, "loss")
        g = sim.alloc(2 * MiB, "grad")
        for a in (h, loss):
            sim.free(a, engine_free)
        if first:
            sim.alloc(2 * MiB, "exp_avg")
            sim.alloc(2 * MiB, "exp_avg_sq")
            t = sim.alloc(2 * MiB, "sqrt")
            d = sim.alloc(2 * MiB, "div")
            sim.free(t)
            sim.free(d)
        else:
            m = sim.alloc(2 * MiB, "f_mul")
            t = sim.alloc(2 * MiB, "f_sqrt")
            d = sim.alloc(2 * MiB, "f_div")
            a = sim.alloc(2 * MiB, "f_add")
            for b in (t, d, a, m):
                sim.free(b)
        sim.free(x, [af.py(af.TRAIN, 26, "train"), af.MAIN])
        sim.free(g, [af.py(OPTIMIZER, 960, "zero_grad"), af.py(af.TRAIN, 19, "train"), af.MAIN])
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "optimizer.json",
          python_only="--python-only" in sys.argv)
