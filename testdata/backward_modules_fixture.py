#!/usr/bin/env python3
"""Writes backward_modules.json: a model whose forward calls two linear layers from two lines, and
the backward pass that follows, without any module metadata, for `top --by module`'s backward rule
(docs/attribution.md, "Modules"; standard library only; run it again after changing it, the JSON
is committed).

The layers' `mm` is called from model.py:101 (layer A) and :102 (layer B), each through
torch/nn/modules/linear.py:116 forward. Their MmBackward0 nodes run in reverse: B's first, then
A's, each allocating the gradient of its input and of its weight; AccumulateGrad then copies A's
weight gradient. The chains of the two lines share no outer part (model.py:101 and :102 are
different frames), so the forward lines alone put every backward allocation under
`[no module: backward]`; paired by order, each goes under its own layer:

  X    1 MiB  the batch, train.py:19                        [no module: data]
  OA   2 MiB  A's output     model.py:101 > linear.py:116   activation
  OB   3 MiB  B's output     model.py:102 > linear.py:116   activation
  GBI  3 MiB  MmBackward0: B's input gradient  -> model.py:102 > linear.py:116
  GBW  5 MiB  MmBackward0: B's weight gradient -> model.py:102 > linear.py:116
  GAI  1 MiB  MmBackward0: A's input gradient  -> model.py:101 > linear.py:116
  GAW  4 MiB  MmBackward0: A's weight gradient -> model.py:101 > linear.py:116
  ACC  4 MiB  AccumulateGrad's copy of GAW (the same size) -> model.py:101 > linear.py:116

The weights are from before the trace (no entry). Everything stays live: the peak is the end,
where A holds 11 MiB and B 11 MiB.
"""
import json
import os

from attribution_fixture import (ALLOC, BASE, ENGINE_TAIL, MiB, SEGMENT, SITE, UNWIND, native, op,
                                 py, with_python)

USER = "/home/alice/proj/"
MODEL, TRAIN = USER + "model.py", USER + "train.py"
CALL = [py(SITE + "torch/nn/modules/module.py", 1750, "_call_impl")]
LOOP = [py(TRAIN, 21, "train"), py(TRAIN, 40, "<module>")]
KERNEL = native("torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, "
                "at::Tensor const&, at::Tensor const&)", "VariableType_2.cpp")


def layer(line):
    """`mm` through its autograd kernel, in linear.py's forward, called from model.py:LINE."""
    return with_python(op("mm")[:2] + [KERNEL] + op("mm")[2:],
                       [py(SITE + "torch/nn/modules/linear.py", 116, "forward")] + CALL +
                       [py(MODEL, line, "forward")] + CALL + LOOP)


MM_BACKWARD = UNWIND + ALLOC + op("mm") + [
    native("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)")] + \
    ENGINE_TAIL
ACCUMULATE = UNWIND + ALLOC + op("new_empty_strided") + [
    native("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)")] + ENGINE_TAIL
BATCH = with_python(op("_to_copy"), [py(TRAIN, 19, "train"), py(TRAIN, 40, "<module>")])

ALLOCS = [("X", 1 * MiB, BATCH), ("OA", 2 * MiB, layer(101)), ("OB", 3 * MiB, layer(102)),
          ("GBI", 3 * MiB, MM_BACKWARD), ("GBW", 5 * MiB, MM_BACKWARD),
          ("GAI", 1 * MiB, MM_BACKWARD), ("GAW", 4 * MiB, MM_BACKWARD),
          ("ACC", 4 * MiB, ACCUMULATE)]
WEIGHTS = [4 * MiB, 5 * MiB]


def build():
    trace, blocks, addr, t = [], [], BASE, 1_000_000
    for size in WEIGHTS:
        blocks.append({"address": addr, "size": size, "requested_size": size,
                       "state": "active_allocated", "frames": []})
        addr += size
    for _, size, frames in ALLOCS:
        t += 100
        trace.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                      "frames": frames})
        blocks.append({"address": addr, "size": size, "requested_size": size,
                       "state": "active_allocated", "frames": frames})
        addr += size
    used = addr - BASE
    blocks.append({"address": addr, "size": BASE + SEGMENT - addr, "requested_size": 0,
                   "state": "inactive", "frames": []})
    return {"segments": [{"device": 0, "address": BASE, "total_size": SEGMENT,
                          "allocated_size": used, "active_size": used, "requested_size": used,
                          "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                          "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [trace]}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "backward_modules.json"), "w") as f:
        json.dump(build(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
