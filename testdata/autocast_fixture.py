#!/usr/bin/env python3
"""Writes a pair of one training step of one model, in fp32 and under autocast, for `diff`'s
gradient matching (docs/attribution.md, "Gradients of the same parameters"). Standard library
only; golden tests call write() from their setup, nothing is committed.

Two linear layers (model/net.py:15 fc1, :16 fc2) with C++ frames, so the forward stacks show each
operator's autograd kernel (VariableType) and the backward nodes name their forward lines. At the
peak (the end of backward, before the saved tensors are freed):

  fp32                                         autocast
  fc1, fc2 outputs (mm)   8 MiB each  activ.   4 MiB each (fp16)                      activation
  -                                            fc1, fc2 weights cast (_to_copy) 8 MiB each  activation
  weight .grads by MmBackward0  16 MiB each    by ToCopyBackward0 16 MiB each (fp32)   gradient
  bias .grad by AccumulateGrad  2 MiB          by the engine's sum 2 MiB              gradient

Known answer: the weights' gradients are the same parameters' (+32 MiB / -32 MiB today, one
unchanged row after matching by parameter), the bias gradients cancel (folded: 2 rows, ±2 MiB),
and the largest row is the real change, +8 MiB of cast weights.

Usage: write(path, autocast=False)
       write(path, autocast=True, grad_mib=18)   (the weights grew: their gradients are 18 MiB
                                                  each, a real change of the matched row)
       write(path, autocast=True, mm_mib=1)      (fp32's node is in the autocast file too: one
                                                  1 MiB gradient by MmBackward0, so MmBackward0
                                                  is a row of both files, 32 MiB -> 1 MiB, beside
                                                  ToCopyBackward0's new 32 MiB. Known answer:
                                                  one row of the same parameters, +1 MiB)
"""
import json

import attribution_fixture as af
from attribution_fixture import MiB, native, py, with_python, backward, op, NET, CALL, TRAIN_STEP


def autograd_op(name):
    """An operator called with autograd on: its dispatcher frames around the generated autograd
    kernel, the frame that records the operator's backward node."""
    frames = op(name)
    return frames[:2] + [native(f"torch::autograd::VariableType::(anonymous namespace)::{name}("
                                "c10::DispatchKeySet, at::Tensor const&)",
                                "VariableType_0.cpp")] + frames[2:]


LINEAR = af.SITE + "torch/nn/modules/linear.py"
AUTOCAST = [native("at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, "
                   "c10::DeviceType)", "autocast_mode.cpp")]


def layer(line, ops):
    return with_python(ops + op("linear"),
                       [py(LINEAR, 116, "forward")] + CALL + [py(NET, line, "forward")] + CALL +
                       TRAIN_STEP)


STACKS = dict(af.STACKS)
for line in (15, 16):
    STACKS[f"mm{line}"] = layer(line, autograd_op("mm"))
    STACKS[f"cast{line}"] = layer(line, autograd_op("_to_copy") + op("to_dtype") + AUTOCAST)
STACKS["grad_mm"] = backward(op("mm"), "MmBackward0")
STACKS["grad_cast"] = backward(op("_to_copy"), "ToCopyBackward0")


def write(path, autocast=False, grad_mib=16, mm_mib=0):
    sim = af.Sim(STACKS)
    x = sim.alloc(1 * MiB, "batch")
    saved = []
    for line in (15, 16):
        if autocast:
            saved.append(sim.alloc(8 * MiB, f"cast{line}"))
        saved.append(sim.alloc((4 if autocast else 8) * MiB, f"mm{line}"))
    loss = sim.alloc(512 * af.KiB, "loss")
    saved.append(loss)
    for _ in (15, 16):
        sim.alloc(grad_mib * MiB, "grad_cast" if autocast else "grad_mm")
    if mm_mib:
        sim.alloc(mm_mib * MiB, "grad_mm")
    sim.alloc(2 * MiB, "engine_sum" if autocast else "acc")
    for a in saved:
        sim.free(a, af.ENGINE_FREE)
    t = sim.alloc(2 * MiB, "sqrt")  # the optimizer step ends backward
    sim.free(t)
    sim.free(x, [py(af.TRAIN, 26, "train"), af.MAIN])
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")
