#!/usr/bin/env python3
"""Writes traces whose live memory repeats, for how `leaks` and `summary` find steps
(docs/leaks.md, "Finding the step"). Standard library only; golden tests call the writers from
their setup, nothing is committed.

  write_forward(path, layers=12, autocast=False)
      One forward pass of a model of `layers` identical layers (model/net.py:20 calls each from
      one loop, so every layer has the same stack), with C++ frames: each layer's output (8 MiB,
      `mm`, or 4 MiB under autocast) and a temporary `relu` (4 MiB) freed at once; the previous
      layer's output freed when the next exists (inference: nothing kept). With autocast=True each
      layer first casts its weight (`_to_copy` under at::autocast::cached_cast, 2 MiB, freed
      after the layer). Known answer: periodicity finds the layers (a repeat every layer), and
      they are not steps: `no repeated training step: the trace holds one forward pass`.

  write_training(path, steps=3, layers=4)
      `steps` training steps of the same model: the batch (data), the forward pass of `layers`
      layers keeping each output for backward, the loss, backward (each layer's `MmBackward0`
      gradient, saved outputs freed), Adam's state in the first step and its `sqrt` temporary
      each step. Known answer: three training steps, found from the phases.
"""
import json

import attribution_fixture as af
from attribution_fixture import MiB, native, op, py, with_python, NET, CALL, TRAIN_STEP

LINEAR = af.SITE + "torch/nn/modules/linear.py"
AUTOCAST = [native("at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, "
                   "c10::DeviceType)", "autocast_mode.cpp")]


def layer(ops):
    """A stack inside a layer: linear.py's forward, called from the model's loop at net.py:20."""
    return with_python(ops, [py(LINEAR, 116, "forward")] + CALL + [py(NET, 20, "forward")] +
                       CALL + TRAIN_STEP)


STACKS = dict(af.STACKS)
STACKS["layer_mm"] = layer(op("mm") + op("linear"))
STACKS["layer_relu"] = with_python(op("relu"), [py(af.SITE + "torch/nn/functional.py", 1500,
                                                   "relu"), py(NET, 21, "forward")] + CALL +
                                   TRAIN_STEP)
STACKS["layer_cast"] = layer(op("_to_copy") + op("to_dtype") + AUTOCAST + op("linear"))


def _dump(sim, path):
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")


def write_forward(path, layers=12, autocast=False):
    sim = af.Sim(STACKS)
    x = sim.alloc(1 * MiB, "batch")
    prev = x
    for _ in range(layers):
        cast = sim.alloc(2 * MiB, "layer_cast") if autocast else None
        h = sim.alloc((4 if autocast else 8) * MiB, "layer_mm")
        if cast is not None:
            sim.free(cast)
        r = sim.alloc(4 * MiB, "layer_relu")
        sim.free(r)
        sim.free(prev)
        prev = h
    sim.free(prev)
    _dump(sim, path)


def write_training(path, steps=3, layers=4):
    sim = af.Sim(STACKS)
    sim.alloc(4 * MiB, "to")
    grads = []
    for step in range(steps):
        for g in grads:
            sim.free(g, af.ZERO_GRAD)
        x = sim.alloc(1 * MiB, "batch")
        saved = []
        for _ in range(layers):
            saved.append(sim.alloc(2 * MiB, "layer_mm"))
            r = sim.alloc(1 * MiB, "layer_relu")
            sim.free(r)
        loss = sim.alloc(512 * af.KiB, "loss")
        grads = [sim.alloc(1 * MiB, "grad") for _ in range(layers)]
        for a in saved + [loss]:
            sim.free(a, af.ENGINE_FREE)
        if step == 0:
            sim.alloc(1 * MiB, "exp_avg")
        t = sim.alloc(1 * MiB, "sqrt")
        sim.free(t)
        sim.free(x, [py(af.TRAIN, 26, "train"), af.MAIN])
    _dump(sim, path)
