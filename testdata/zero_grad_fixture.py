#!/usr/bin/env python3
"""Writes two training steps whose loop calls `optimizer.zero_grad()` after the forward pass, so
last step's gradients are still alive in the next forward (docs/attribution.md, "Last step's
gradients"). Standard library only; golden tests call write() from their setup.

  P    model.to('cuda') at train.py:12                 8 MiB   parameter
  X    batch.to('cuda') at train.py:20                 1 MiB   input (each step)
  H    linear in model/net.py:15 forward              16 MiB   activation, freed first in backward
  G    MmBackward0 (mm): the weight's gradient         16 MiB   gradient, freed by zero_grad
  M    Adam's exp_avg                                   8 MiB   optimizer state
  T    Adam's sqrt                                      2 MiB   temporary

Known answer: the peak is step 2's forward (after H: 49.0 MiB) with step 1's G alive (16.0 MiB,
freed by zero_grad after the forward); zero_grad(set_to_none=True) before it makes the live peak
33.0 MiB, and H then reuses G's cached segment: on 40 MiB the recorded settings fail and the
lever's replay fits.

Usage: write(path)
"""
import json

import attribution_fixture as af
from attribution_fixture import MiB


def write(path):
    sim = af.Sim()
    sim.alloc(8 * MiB, "to")
    grad = None
    for step in range(2):
        x = sim.alloc(1 * MiB, "batch")
        h = sim.alloc(16 * MiB, "linear")
        if grad is not None:
            sim.free(grad, af.ZERO_GRAD)  # zero_grad after the forward: too late for its peak
        sim.free(h, af.ENGINE_FREE)
        grad = sim.alloc(16 * MiB, "grad")
        if step == 0:
            sim.alloc(8 * MiB, "exp_avg")
        t = sim.alloc(2 * MiB, "sqrt")
        sim.free(t)
        sim.free(x, [af.py(af.TRAIN, 26, "train"), af.MAIN])
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")
