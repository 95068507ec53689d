#!/usr/bin/env python3
"""Writes the dump of a transformers generation loop, as `_dump_snapshot` writes it after a
trace of one entry: everything live was allocated before the trace, so the dumped blocks' own
stacks are the only evidence of what ran (docs/attribution.md, "Workload"). Standard library
only; golden tests call write() from their setup.

  W    the weights, loaded before recording started   32 MiB   no stack
  K    keys and values: DynamicCache.update's cat       2 x 8 MiB under generation/utils.py _sample
  A    the last token's projection                      4 MiB   under _sample

Known answer: the workload is generation (no autograd node; generation frames, KV-cache frames);
on 40 MiB the live 52 MiB does not fit, and no lever is activation checkpointing.

Usage: write(path)
"""
import json

import attribution_fixture as af
from attribution_fixture import MiB, SITE, USER, py

TF = SITE + "transformers/"
GENERATE = [py(TF + "generation/utils.py", 3250, "_sample"),
            py(TF + "generation/utils.py", 2460, "generate"),
            py(SITE + "torch/utils/_contextlib.py", 116, "decorate_context"),
            py(USER + "chat.py", 30, "main"), af.MAIN]
LLAMA = py(TF + "models/llama/modeling_llama.py", 280, "forward")
STACKS = {
    "kv": af.with_python(af.op("cat"), [py(TF + "cache_utils.py", 451, "update"), LLAMA] +
                         af.CALL + GENERATE),
    "proj": af.with_python(af.op("mm") + af.op("linear"),
                           [py(SITE + "torch/nn/modules/linear.py", 116, "forward")] + af.CALL +
                           [LLAMA] + af.CALL + GENERATE),
}


def write(path):
    sim = af.Sim(STACKS)
    sim.alloc(32 * MiB, None, traced=False)  # the weights: loaded before recording
    sim.alloc(8 * MiB, "kv", traced=False)
    sim.alloc(8 * MiB, "kv", traced=False)
    sim.alloc(4 * MiB, "proj", traced=False)
    sim._event("snapshot", 0, 52 * MiB, [])
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")
