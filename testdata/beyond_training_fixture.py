#!/usr/bin/env python3
"""Writes three small runs beyond the plain training loop, for the kinds kv_cache, autocast_cache
and state (docs/attribution.md, "Rules"). A generator like autocast_fixture.py: nothing is
committed, golden setups and unit tests call `write(path, run)`; standard library only. The
stacks carry C++ and Python frames as PyTorch records them (attribution_fixture.py).

run="generation": greedy decoding through transformers' `generate` → `_sample` (PyTorch 2.5,
transformers 4.46 frames), a prefill and two decode steps of a one-layer Llama. The attention's
`past_key_value.update(...)` runs `DynamicCache.update` in cache_utils.py, whose `torch.cat`
makes the layer's new keys and values and drops the old ones (freed there, in the next step).

  W      16 MiB  weights from before the trace, no stack                parameter  pre_trace_persistent
  K0, V0 512 KiB the cache from before the trace, freed by the first update
                 ([allocated before the trace, freed by KV cache code: the cache])
                                                                        kv_cache   kv_cache_frame
  K, V   1 MiB, then 1.5 and 2 MiB: DynamicCache.update's cat          kv_cache   kv_cache_frame
  Q      1 MiB   q_proj in modeling_llama.py forward, freed in it        temporary  forward_freed
  L      2 MiB   lm_head's logits, kept into _sample, freed there       activation forward_kept
  T      512 KiB argmax of the logits in _sample (the next token)       unknown / temporary

run="autocast": one training step of two linear layers under torch.autocast(bfloat16), the loss
and backward outside it (PyTorch 2.5 frames). Autocast's cached_cast casts each weight once and
keeps the cast in its cache until the `with` block exits (`autocast_mode.py __exit__` →
`torch.clear_autocast_cache()`); the casts the matmuls saved for backward live on until backward.

  W1, W2  8 MiB  fp32 weights from before the trace                     parameter  pre_trace_persistent
  B       2 MiB  an fp32 bias from before the trace                     parameter  pre_trace_persistent
  W1c,W2c 4 MiB  the weights' bf16 casts, saved for backward            autocast_cache autocast_weight_size
  Bc      1 MiB  the bias's bf16 cast, freed by autocast's __exit__     autocast_cache autocast_cleared
  N       3 MiB  LayerNorm's fp32 output (autocast runs it in fp32)     temporary  forward_freed
  Nc      1.5 MiB its bf16 cast for fc1, saved for backward             activation saved_for_backward
  U       1 MiB  a cast of half the bias's size that dies with its op   temporary  forward_freed
  H1, H2  2 MiB  the matmuls' bf16 outputs, saved                       activation saved_for_backward

run="autocast_collision": the same step with one more cast, fc2's 4 MiB bf16 input saved for
backward (a batch of as many tokens as the layer is wide: an activation's cast of exactly half a
weight's size). Three casts of 4 MiB and two weights of 8 MiB: the size cannot say which are the
weights', so W1c, W2c and it are `activation` (saved_for_backward); Bc is still autocast_cache,
by its free.

run="state": a model built from nn.Linear, then a zeroth-order gradient estimator of the user's own
(estimators.py, not an optimizer: no torch.optim, no "optim" in its file name) whose __init__ keeps
one buffer per parameter, then a forward and backward pass.

  P      8 MiB   nn.Linear's weight: torch/nn/modules/linear.py __init__   parameter  init_kept
  S      1 MiB   a buffer a model's own __init__ makes with torch.zeros    parameter  init_kept
  E      8 MiB   [torch.zeros_like(p) for p in params] in the estimator's
                 __init__ (a <listcomp> frame)                            state      init_state
  C      8 MiB   p.clone() in the estimator's __init__ (Python 3.12: no
                 <listcomp> frame; the operator says it)                  state      init_state
  H      2 MiB   the forward's output, saved                              activation saved_for_backward
  G      8 MiB   MmBackward0's gradient                                   gradient   backward_kept

Usage: write(path, run)   run: "generation", "autocast", "autocast_collision" or "state"
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import attribution_fixture as af  # noqa: E402
from attribution_fixture import MiB, KiB, native, py, with_python, op  # noqa: E402

TF = af.SITE + "transformers/"
LLAMA = TF + "models/llama/modeling_llama.py"
CACHE = TF + "cache_utils.py"
GENERATION = TF + "generation/utils.py"
CALL = af.CALL
GEN_LOOP = [py(GENERATION, 3254, "_sample"), py(GENERATION, 2215, "generate"),
            py(af.SITE + "torch/utils/_contextlib.py", 116, "decorate_context"),
            py(af.USER + "generate.py", 31, "main"), py(af.USER + "generate.py", 40, "<module>")]
MODEL_CALL = [py(LLAMA, 1190, "forward")] + CALL + [py(GENERATION, 3221, "_sample")] + GEN_LOOP[1:]
LAYER = [py(LLAMA, 654, "forward")] + CALL + [py(LLAMA, 916, "forward")] + CALL + MODEL_CALL
ATTENTION = [py(LLAMA, 590, "forward")] + CALL + LAYER

GENERATION_STACKS = {
    "cache_k": with_python(op("cat"), [py(CACHE, 450, "update"), py(LLAMA, 604, "forward")] + CALL +
                           LAYER),
    "cache_v": with_python(op("cat"), [py(CACHE, 451, "update"), py(LLAMA, 604, "forward")] + CALL +
                           LAYER),
    "q_proj": with_python(op("mm") + op("linear"),
                          [py(af.SITE + "torch/nn/modules/linear.py", 125, "forward")] + CALL +
                          ATTENTION),
    "logits": with_python(op("mm") + op("linear"),
                          [py(af.SITE + "torch/nn/modules/linear.py", 125, "forward")] + CALL +
                          MODEL_CALL),
    "argmax": with_python(op("argmax"), GEN_LOOP),
}
CACHE_FREE = [py(CACHE, 450, "update"), py(LLAMA, 604, "forward")] + CALL + LAYER


def generation(sim):
    sim.alloc(16 * MiB, None, traced=False)  # W
    # The cache of the tokens before the trace began (K0, V0), replaced by the first update.
    kv = [sim.alloc(512 * KiB, "cache_k", traced=False), sim.alloc(512 * KiB, "cache_v", traced=False)]
    for step, size in enumerate((1 * MiB, 1536 * KiB, 2 * MiB)):
        q = sim.alloc(1 * MiB, "q_proj")
        new = [sim.alloc(size, "cache_k"), sim.alloc(size, "cache_v")]
        for old in kv:
            sim.free(old, af.UNWIND + af.FREE + CACHE_FREE)
        kv = new
        sim.free(q)
        logits = sim.alloc(2 * MiB, "logits")
        token = sim.alloc(512 * KiB, "argmax")
        sim.free(logits, GEN_LOOP)
        if step < 2:
            sim.free(token, GEN_LOOP)


AUTOCAST_MODE = af.SITE + "torch/amp/autocast_mode.py"
LINEAR = af.SITE + "torch/nn/modules/linear.py"
NORM = af.SITE + "torch/nn/modules/normalization.py"
CACHED_CAST = [native("at::autocast::cached_cast(c10::ScalarType, at::Tensor const&, "
                      "c10::DeviceType)", "autocast_mode.cpp")]


def wrap(policy, name):
    return [native(f"at::autocast::WrapFunction_<(at::autocast::CastPolicy){policy}, "
                   f"(c10::DeviceType)1, at::Tensor (at::Tensor const&, at::Tensor const&, "
                   f"std::optional<at::Tensor> const&), &at::{name}, at::Tensor, "
                   "c10::guts::typelist::typelist<at::Tensor const&> >::call(at::Tensor const&)",
                   "autocast_mode.cpp")]


def in_layer(line, ops, module=LINEAR, module_line=125):
    return with_python(ops, [py(module, module_line, "forward")] + CALL +
                       [py(af.NET, line, "forward")] + CALL + af.TRAIN_STEP)


CAST = op("_to_copy") + op("to_dtype") + CACHED_CAST

AUTOCAST_STACKS = dict(af.STACKS)
AUTOCAST_STACKS.update({
    "norm": in_layer(14, op("native_layer_norm") + wrap(2, "layer_norm") + op("layer_norm"),
                     NORM, 217),
    "cast_x": in_layer(15, CAST + wrap(0, "linear") + op("linear")),
    "cast_w1": in_layer(15, CAST + wrap(0, "linear") + op("linear")),
    "cast_b1": in_layer(15, CAST + wrap(0, "linear") + op("linear")),
    "mm1": in_layer(15, op("addmm") + wrap(0, "linear") + op("linear")),
    "cast_w2": in_layer(16, CAST + wrap(0, "linear") + op("linear")),
    "cast_h1": in_layer(16, CAST + wrap(0, "linear") + op("linear")),
    "mm2": in_layer(16, op("mm") + wrap(0, "linear") + op("linear")),
    "uncached": in_layer(17, CAST + wrap(0, "linear") + op("linear")),
})
# The outermost autocast region exits: its __exit__ clears the cache (torch.clear_autocast_cache).
AUTOCAST_EXIT = af.UNWIND + af.FREE + [
    native("at::autocast::clear_cache()", "autocast_mode.cpp"),
    native("torch::autograd::clear_autocast_cache(_object*, _object*)", "init.cpp"),
    native("cfunction_call"), py(AUTOCAST_MODE, 409, "__exit__")] + af.MAIN_TAIL + af.TRAIN_STEP[1:]
# An uncached cast dies when its operator returns, inside autocast's wrapper.
WRAPPER_FREE = af.UNWIND + af.FREE + wrap(0, "linear") + op("linear")[2:] + [
    py(LINEAR, 125, "forward"), py(af.NET, 17, "forward")] + af.TRAIN_STEP


def autocast(sim, collide=False):
    sim.alloc(8 * MiB, None, traced=False)  # W1
    sim.alloc(8 * MiB, None, traced=False)  # W2
    sim.alloc(2 * MiB, None, traced=False)  # B
    x = sim.alloc(1 * MiB, "batch")
    norm = sim.alloc(3 * MiB, "norm")
    saved = [sim.alloc(1536 * KiB, "cast_x")]
    sim.free(norm)
    saved.append(sim.alloc(4 * MiB, "cast_w1"))
    bias = sim.alloc(1 * MiB, "cast_b1")
    saved.append(sim.alloc(2 * MiB, "mm1"))
    saved.append(sim.alloc(4 * MiB, "cast_w2"))
    if collide:
        saved.append(sim.alloc(4 * MiB, "cast_h1"))
    saved.append(sim.alloc(2 * MiB, "mm2"))
    u = sim.alloc(1 * MiB, "uncached")
    sim.free(u, WRAPPER_FREE)
    sim.free(bias, AUTOCAST_EXIT)
    loss = sim.alloc(512 * KiB, "loss")
    saved.append(loss)
    seed = sim.alloc(512, "seed")
    sim.free(seed, af.ENGINE_FREE)
    sim.alloc(8 * MiB, "grad")
    for a in saved:
        sim.free(a, af.ENGINE_FREE)
    t = sim.alloc(2 * MiB, "sqrt")  # the optimizer step ends backward
    sim.free(t)
    sim.free(x, [py(af.TRAIN, 26, "train"), af.MAIN])


ESTIMATORS = af.USER + "estimators.py"
BUILD = [py(af.TRAIN, 10, "main"), py(af.TRAIN, 40, "<module>")]
ESTIMATOR_INIT = [py(ESTIMATORS, 18, "__init__"), py(af.TRAIN, 11, "main"),
                  py(af.TRAIN, 40, "<module>")]
STATE_STACKS = dict(af.STACKS)
STATE_STACKS.update({
    "linear_init": with_python(op("empty"), [
        py(LINEAR, 106, "__init__"), py(af.NET, 8, "__init__")] + BUILD),
    "model_buffer": with_python(op("zeros"), [py(af.NET, 10, "__init__")] + BUILD),
    "estimator_buffers": with_python(op("empty_like") + op("zeros_like"), [
        py(ESTIMATORS, 18, "<listcomp>")] + ESTIMATOR_INIT),
    "estimator_clone": with_python(op("clone"), [py(ESTIMATORS, 19, "__init__"),
                                                py(af.TRAIN, 11, "main"),
                                                py(af.TRAIN, 40, "<module>")]),
})


def state(sim):
    sim.alloc(8 * MiB, "linear_init")
    sim.alloc(1 * MiB, "model_buffer")
    sim.alloc(8 * MiB, "estimator_buffers")
    sim.alloc(8 * MiB, "estimator_clone")
    x = sim.alloc(1 * MiB, "batch")
    h = sim.alloc(2 * MiB, "linear")
    loss = sim.alloc(512 * KiB, "loss")
    seed = sim.alloc(512, "seed")
    sim.free(seed, af.ENGINE_FREE)
    sim.alloc(8 * MiB, "grad")
    for a in (h, loss):
        sim.free(a, af.ENGINE_FREE)
    sim.free(x, [py(af.TRAIN, 26, "train"), af.MAIN])


RUNS = {"generation": (GENERATION_STACKS, generation), "autocast": (AUTOCAST_STACKS, autocast),
        "autocast_collision": (AUTOCAST_STACKS, lambda sim: autocast(sim, collide=True)),
        "state": (STATE_STACKS, state)}


def write(path, run):
    stacks, make = RUNS[run]
    sim = af.Sim(stacks)
    make(sim)
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    write(sys.argv[2] if len(sys.argv) > 2 else "/dev/stdout", sys.argv[1])
