#!/usr/bin/env python3
"""Writes notebook_hf.json: the state a QLoRA fine-tuning notebook dumps (no trace), with the
stacks a Jupyter kernel records for a Llama model run through transformers and peft
(docs/attribution.md, "Model libraries" and "Notebooks and machinery"; standard library only; run it
again after changing it, the JSON is committed).

Blocks, each with an operator frame and Python frames as PyTorch writes them (innermost first):

  Q  2 MiB  linear under torch's Linear, in modeling_llama.py:615 forward (its q_proj), under the
            model's outer modules and transformers' wrappers, called from cell 3105878423.py:21
  L  1 MiB  matmul in bitsandbytes/nn/modules.py:474 forward (a 4-bit layer) under
            peft/tuners/lora/bnb.py:230 forward, under modeling_llama.py:620 forward, same cell
  A  1 MiB  add in modeling_llama.py:332 forward, called through accelerate's hook
            (accelerate/hooks.py): the hook is no layer and no caller
  C  512 KiB randn at <ipython-input-7-8a2f>:3 (an older IPython: the name has the count)
  U  256 KiB zeros at the user's own /home/u/proj/utils.py:5 helper, from the cell: a user frame
            innermost keeps its label
Known answer: Q is `linear ← transformers/models/llama/modeling_llama.py:615 forward ← cell
3105878423.py:21 <module>`, L `bitsandbytes/nn/modules.py:474 forward`'s matmul, C `cell [7]:3`;
no IPython, ipykernel or runpy frame is ever a caller, nor the model's outer modules.
"""
import json
import os

KiB, MiB = 1 << 10, 1 << 20
BASE = 0x7F0000000000
SITE = "/opt/conda/lib/python3.10/site-packages/"
CELL = "/tmp/ipykernel_4821/3105878423.py"


def py(path, line, name):
    return {"name": name, "filename": path, "line": line}


def op(name):
    return {"name": f"at::_ops::{name}::call(at::Tensor const&)", "filename": "??", "line": 0}


CALL = [py(SITE + "torch/nn/modules/module.py", 1527, "_call_impl"),
        py(SITE + "torch/nn/modules/module.py", 1518, "_wrapped_call_impl")]
KERNEL = [py(SITE + "IPython/core/interactiveshell.py", 3577, "run_code"),
          py(SITE + "IPython/core/interactiveshell.py", 3517, "run_ast_nodes"),
          py(SITE + "ipykernel/zmqshell.py", 549, "run_cell"),
          py(SITE + "ipykernel/kernelapp.py", 739, "start"),
          py("/opt/conda/lib/python3.10/runpy.py", 196, "_run_module_as_main")]
LLAMA = SITE + "transformers/models/llama/modeling_llama.py"
OUTER = [*CALL, py(LLAMA, 330, "forward"), *CALL,
         py(SITE + "transformers/modeling_layers.py", 93, "__call__"),
         py(LLAMA, 405, "forward"), py(SITE + "transformers/utils/generic.py", 1083, "wrapper"),
         *CALL, py(SITE + "peft/peft_model.py", 1850, "forward"), *CALL,
         py(CELL, 21, "<module>"), *KERNEL]

BLOCKS = [
    (2 * MiB, [op("linear"), py(SITE + "torch/nn/modules/linear.py", 116, "forward"), *CALL,
               py(LLAMA, 615, "forward"), *OUTER]),
    (1 * MiB, [op("matmul"), py(SITE + "bitsandbytes/nn/modules.py", 474, "forward"), *CALL,
               py(SITE + "peft/tuners/lora/bnb.py", 230, "forward"), *CALL,
               py(LLAMA, 620, "forward"), *OUTER]),
    (1 * MiB, [op("add"), py(LLAMA, 332, "forward"), py(SITE + "accelerate/hooks.py", 170,
                                                         "new_forward"), *OUTER]),
    (512 * KiB, [op("randn"), py("<ipython-input-7-8a2f>", 3, "<module>"), *KERNEL]),
    (256 * KiB, [op("zeros"), py("/home/u/proj/utils.py", 5, "helper"), py(CELL, 22, "<module>"),
                 *KERNEL]),
]


def main():
    blocks, addr = [], BASE
    for size, frames in BLOCKS:
        blocks.append({"address": addr, "size": size, "requested_size": size,
                       "state": "active_allocated", "frames": frames})
        addr += size
    total = 8 * MiB
    blocks.append({"address": addr, "size": BASE + total - addr, "requested_size": 0,
                   "state": "inactive", "frames": []})
    used = addr - BASE
    snap = {"segments": [{"device": 0, "address": BASE, "total_size": total,
                          "allocated_size": used, "active_size": used, "requested_size": used,
                          "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
                          "is_expandable": False, "frames": [], "blocks": blocks}],
            "device_traces": [[]]}
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "notebook_hf.json")
    with open(out, "w") as f:
        json.dump(snap, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
