#!/usr/bin/env python3
"""Writes traces whose memory from before the trace is more than parameters, and one where it is
not (docs/attribution.md, "Blocks from before the trace"). Standard library only; golden setups
and unit tests call write().

A small transformer's weights: an embedding (4 MiB), q, k, v and o (2 MiB each, one size: equal
sizes alone say nothing), a layer norm's weight and bias (512 KiB each) and a 512 KiB buffer of
that size with no gradient (a mask), all loaded before the recording started. The optimizer is torch.optim.AdamW;
its frames are those of torch/optim/adamw.py at pytorch/pytorch 002d2f0bb40cf08beb74bce80f52ce4f2eda46a0
(`step` at :182 calling `_init_group`, which calls `init_state_per_param` at :140, whose
`zeros_like` make exp_avg at :103 and exp_avg_sq at :107; `step` at :192 calling `adamw`, which
runs `_single_tensor_adamw`'s `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`).

  write(path)                  (kind="first_step") recording starts just before the first
      `optimizer.step()`: the weights and their gradients (one per weight, made by the backward
      before the recording) are older than the trace, and the dump is taken inside AdamW.step,
      after `_init_group` made the state and while the update holds a denominator.
      Known answer: of the 15 blocks from before the trace, 7 are gradients (13 MiB, as much as
      the 7 weights with gradients), 8 are parameters (13.5 MiB: the weights and the buffer);
      the state the step made is optimizer_state (26 MiB).
  write(path, kind="backward")  the same step recorded from the forward pass on: the trace's
      backward makes the gradients (AccumulateGrad) and the step the state, so the blocks from
      before the trace are the 8 parameters and stay parameter.
  write(path, kind="later_step") a later step, recorded from its start: the weights and Adam's
      state (made by the first step) are older than the trace; last step's gradients are too,
      and the loop frees them with `p.grad = None` (train.py:18, no zero_grad) before the
      forward; the backward makes new ones. Known answer: 14 of the blocks never freed are
      state (26 MiB), 8 parameters; the 7 freed blocks are unknown (their free says nothing,
      and a kind decided by the gradients made after it is not one a slice of the trace
      ending between the two would give: docs/attribution.md, "Limits").
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attribution_fixture as af  # noqa: E402

KiB, MiB = af.KiB, af.MiB
ADAMW = af.SITE + "torch/optim/adamw.py"
OPTIMIZER = af.SITE + "torch/optim/optimizer.py"
STEP_CALLER = [af.py(OPTIMIZER, 76, "_use_grad"), af.py(OPTIMIZER, 391, "wrapper"),
               af.py(af.TRAIN, 25, "train"), af.MAIN]
INIT = [af.py(ADAMW, 140, "_init_group"), af.py(ADAMW, 182, "step")] + STEP_CALLER
UPDATE = [af.py(ADAMW, 399, "_single_tensor_adamw"), af.py(ADAMW, 346, "adamw"),
          af.py(ADAMW, 192, "step")] + STEP_CALLER

STACKS = dict(af.STACKS)
STACKS.update({
    "exp_avg": af.with_python(af.op("empty_like") + af.op("zeros_like"),
                              [af.py(ADAMW, 103, "init_state_per_param")] + INIT),
    "exp_avg_sq": af.with_python(af.op("empty_like") + af.op("zeros_like"),
                                 [af.py(ADAMW, 107, "init_state_per_param")] + INIT),
    "sqrt": af.with_python(af.op("sqrt"), UPDATE),
    "div": af.with_python(af.op("div_Tensor"), UPDATE),
})

# (name, bytes, has a gradient)
WEIGHTS = [("embedding", 4 * MiB, True), ("q", 2 * MiB, True), ("k", 2 * MiB, True),
           ("v", 2 * MiB, True), ("o", 2 * MiB, True), ("ln.weight", 512 * KiB, True),
           ("ln.bias", 512 * KiB, True), ("mask", 512 * KiB, False)]
TRAINED = [w for w in WEIGHTS if w[2]]
NO_GRAD = [af.py(af.TRAIN, 18, "train"), af.MAIN]  # `for p in params: p.grad = None`


def forward_backward(sim):
    """A forward pass that saves one activation, a backward that makes a .grad per weight."""
    h = sim.alloc(2 * MiB, "linear")
    grads = [sim.alloc(size, "acc") for _, size, _ in TRAINED]
    sim.free(h, af.ENGINE_FREE)
    return grads


def adamw_step(sim, make_state, dump_inside):
    """AdamW.step: `_init_group` (the state, on the first step), then the update; with
    `dump_inside`, the trace ends while the update holds the denominator of the fourth weight."""
    if make_state:
        for _, size, _ in TRAINED:
            sim.alloc(size, "exp_avg")
            sim.alloc(size, "exp_avg_sq")
    for i, (_, size, _) in enumerate(TRAINED):
        t = sim.alloc(size, "sqrt")
        d = sim.alloc(size, "div")
        sim.free(t)
        if dump_inside and i == 3:
            return
        sim.free(d)


def write(path, kind="first_step"):
    sim = af.Sim(STACKS)
    for _, size, _ in WEIGHTS:
        sim.alloc(size, None, traced=False)  # the model, loaded before the recording
    if kind == "first_step":
        for _, size, _ in TRAINED:
            sim.alloc(size, None, traced=False)  # the first backward's gradients
        adamw_step(sim, make_state=True, dump_inside=True)
    elif kind == "backward":
        forward_backward(sim)
        adamw_step(sim, make_state=True, dump_inside=False)
    elif kind == "later_step":
        for _, size, _ in TRAINED:  # the first step's state
            sim.alloc(size, None, traced=False)
            sim.alloc(size, None, traced=False)
        last = [sim.alloc(size, None, traced=False) for _, size, _ in TRAINED]
        for g in last:
            sim.free(g, NO_GRAD)
        forward_backward(sim)
        adamw_step(sim, make_state=False, dump_inside=False)
    else:
        raise ValueError(kind)
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write(sys.argv[1] if len(sys.argv) > 1 else "pre_trace.json",
          kind=sys.argv[2] if len(sys.argv) > 2 else "first_step")
