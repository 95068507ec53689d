#!/usr/bin/env python3
"""Writes attribution_training.json: a tiny training loop with known categories and labels, for the
attribution tests (standard library only; run it again after changing it, the JSON is committed).

Two training steps on device 0, recorded with C++ and Python frames as PyTorch writes them (the
unwinder, the caching allocator, tensor factories and the dispatcher innermost; the autograd
engine thread without Python frames; the interpreter's and libc's frames between Python frames,
and the outer Python frames after `_start`). What each allocation is, by construction:

  W0      weights from before the trace, no stack         parameter   pre_trace_persistent
  PW      a .grad from before the trace, freed by zero_grad gradient  freed_by_zero_grad
  P1      model.to('cuda') at train.py:12                 parameter   init_kept
  X0, X1  batch.to('cuda') at train.py:20                 input       data_kept
  H       linear in model/net.py:15 forward               activation  saved_for_backward
  R       relu in model/net.py:16, freed in forward       temporary   forward_freed
  EA, EB  einsum in model/net.py:30 attn, from :17 / :18  activation  saved_for_backward
  L       cross_entropy at train.py:22 (loss)             activation  saved_for_backward
  SEED    loss.backward()'s seed gradient                 temporary   backward_freed
  RT      ReluBackward0's output, freed in backward       temporary   backward_freed
  G       MmBackward0 (mm): the weight's gradient         gradient    backward_kept
  A       AccumulateGrad's copy                           gradient    accumulate_grad
  B       the engine's sum of a broadcast gradient        gradient    backward_kept
  M, V    Adam's exp_avg / exp_avg_sq (torch.optim)       optimizer_state optimizer_kept
  T       Adam's sqrt temporary                           temporary   optimizer_freed

Usage: python3 testdata/attribution_fixture.py   (writes testdata/attribution_training.json)
       write(path, linear_mib=8)                  (from a golden test's setup: a variant whose
                                                   forward keeps a larger activation)
       write(path, net_shift=2)                   (a variant where an edit put two lines above
                                                   model/net.py:15, so net.py's frames from line
                                                   15 on moved down by two)
"""
import json
import os

KiB, MiB = 1 << 10, 1 << 20
BASE = 0x7F0000000000
SEGMENT = 64 * MiB
USER = "/home/alice/proj/"
SITE = "/home/alice/venv/lib/python3.11/site-packages/"


def native(name, filename="??"):
    return {"name": name, "filename": filename, "line": 0}


def py(path, line, name):
    return {"name": name, "filename": path, "line": line}


UNWIND = [native("torch::unwind::unwind()"),
          native("torch::CapturedTraceback::gather(bool, bool, bool)"),
          native("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp")]
ALLOC = [native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc("
                "signed char, unsigned long, CUstream_st*)", "CUDACachingAllocator.cpp"),
         native("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)")]
FREE = [native("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free("
               "c10::cuda::CUDACachingAllocator::Native::Block*)", "CUDACachingAllocator.cpp"),
        native("c10::TensorImpl::~TensorImpl()", "TensorImpl.cpp")]
MAIN_TAIL = [native("_PyEval_EvalFrameDefault"), native("PyEval_EvalCode"), native("Py_RunMain"),
             native("__libc_start_main"), native("_start")]
ENGINE_TAIL = [native("torch::autograd::Node::operator()(std::vector<at::Tensor>&&)"),
               native("torch::autograd::Engine::evaluate_function(std::shared_ptr<"
                      "torch::autograd::GraphTask>&, torch::autograd::Node*)"),
               native("torch::autograd::Engine::thread_main(std::shared_ptr<"
                      "torch::autograd::GraphTask> const&)"),
               native("torch::autograd::python::PythonEngine::thread_init(int, bool)"),
               native("execute_native_thread_routine", "thread48.o"), native("clone")]


def op(name):
    """The dispatcher frames of one operator call (at::_ops names carry the overload)."""
    return [native(f"c10::impl::wrap_kernel_functor_unboxed_<{name}>::call("
                   "c10::OperatorKernel*, c10::DispatchKeySet)", "RegisterCUDA.cpp"),
            native(f"at::_ops::{name}::redispatch(c10::DispatchKeySet, at::Tensor const&)"),
            native(f"at::_ops::{name}::call(at::Tensor const&)")]


def with_python(ops, frames):
    """A stack recorded on the Python thread: the innermost Python frame, the interpreter and libc,
    then the outer Python frames (PyTorch appends them after `_start`)."""
    binding = [native("torch::autograd::THPVariable_call(_object*, _object*)",
                      "python_variable_methods.cpp"), native("cfunction_call")]
    return UNWIND + ALLOC + ops + binding + frames[:1] + MAIN_TAIL + frames[1:]


def backward(ops, node):
    return UNWIND + ALLOC + ops + [native(f"torch::autograd::generated::{node}::apply("
                                          "std::vector<at::Tensor>&&)")] + ENGINE_TAIL


TRAIN = USER + "train.py"
NET = USER + "model/net.py"
MODULE = SITE + "torch/nn/modules/module.py"
MAIN = py(TRAIN, 40, "<module>")
TRAIN_STEP = [py(TRAIN, 21, "train"), MAIN]
CALL = [py(MODULE, 1750, "_call_impl"), py(MODULE, 1739, "_wrapped_call_impl")]


def net(line, name="forward", outer=None):
    return [py(NET, line, name)] + CALL + (outer or TRAIN_STEP)


STACKS = {
    "to": with_python(op("_to_copy") + op("to_dtype_layout"),
                      [py(MODULE, 1158, "convert"), py(MODULE, 805, "_apply"),
                       py(MODULE, 1160, "to"), py(TRAIN, 12, "<module>")]),
    "batch": with_python(op("_to_copy") + op("to_dtype_layout"), [py(TRAIN, 20, "train"), MAIN]),
    "linear": with_python(op("mm") + op("linear"),
                          [py(SITE + "torch/nn/modules/linear.py", 116, "forward")] + CALL +
                          net(15)),
    "relu": with_python(op("relu"), [py(SITE + "torch/nn/functional.py", 1500, "relu")] + net(16)),
    "einsum_a": with_python(op("bmm") + op("einsum"),
                            [py(SITE + "torch/functional.py", 402, "einsum"),
                             py(NET, 30, "attn")] + net(17)),
    "einsum_b": with_python(op("bmm") + op("einsum"),
                            [py(SITE + "torch/functional.py", 402, "einsum"),
                             py(NET, 30, "attn")] + net(18)),
    "loss": with_python(op("cross_entropy_loss"),
                        [py(SITE + "torch/nn/functional.py", 3059, "cross_entropy"),
                         py(TRAIN, 22, "train"), MAIN]),
    "seed": with_python(op("ones_like"),
                        [py(SITE + "torch/autograd/__init__.py", 88, "_make_grads"),
                         py(SITE + "torch/autograd/__init__.py", 200, "backward"),
                         py(SITE + "torch/_tensor.py", 520, "backward"), py(TRAIN, 23, "train"),
                         MAIN]),
    "relu_bw": backward(op("threshold_backward"), "ReluBackward0"),
    "grad": backward(op("mm"), "MmBackward0"),
    "acc": UNWIND + ALLOC + op("new_empty_strided") + [
        native("void torch::autograd::AccumulateGrad::accumulateGrad<std::function<void "
               "(at::Tensor&&)> >(at::Tensor const&, at::Tensor&)"),
        native("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)")] + ENGINE_TAIL,
    "engine_sum": UNWIND + ALLOC + op("sum_dim_IntList") + ENGINE_TAIL,
    "exp_avg": with_python(op("empty_like") + op("zeros_like"),
                           [py(SITE + "torch/optim/adam.py", 95, "_init_group"),
                            py(SITE + "torch/optim/adam.py", 220, "step"),
                            py(SITE + "torch/optim/optimizer.py", 487, "wrapper"),
                            py(TRAIN, 25, "train"), MAIN]),
    "exp_avg_sq": with_python(op("empty_like") + op("zeros_like"),
                              [py(SITE + "torch/optim/adam.py", 96, "_init_group"),
                               py(SITE + "torch/optim/adam.py", 220, "step"),
                               py(SITE + "torch/optim/optimizer.py", 487, "wrapper"),
                               py(TRAIN, 25, "train"), MAIN]),
    "sqrt": with_python(op("sqrt"),
                        [py(SITE + "torch/optim/adam.py", 380, "_single_tensor_adam"),
                         py(SITE + "torch/optim/adam.py", 230, "step"),
                         py(SITE + "torch/optim/optimizer.py", 487, "wrapper"),
                         py(TRAIN, 25, "train"), MAIN]),
}
ZERO_GRAD = [py(SITE + "torch/optim/optimizer.py", 960, "zero_grad"), py(TRAIN, 19, "train"), MAIN]
ENGINE_FREE = UNWIND + FREE + [native("torch::autograd::generated::MmBackward0::apply("
                                      "std::vector<at::Tensor>&&)")] + ENGINE_TAIL


def shifted(stacks, shift, first=15):
    """The stacks with model/net.py's lines from `first` on moved by `shift` (an edit above them)."""
    def move(frame):
        if frame["filename"] == NET and frame["line"] >= first:
            return dict(frame, line=frame["line"] + shift)
        return frame
    return {k: [move(f) for f in v] for k, v in stacks.items()}


class Sim:
    """First-fit allocator over one segment; writes events with frames and increasing times."""

    def __init__(self, stacks=None):
        self.trace, self.live, self.time = [], {}, 1_000_000
        self.stacks = stacks or STACKS

    def _event(self, action, addr, size, frames):
        self.time += 100
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                           "time_us": self.time, "frames": frames})

    def place(self, size):
        addr = BASE
        for a in sorted(self.live):
            if a - addr >= size:
                break
            addr = max(addr, a + self.live[a][0])
        assert addr + size <= BASE + SEGMENT
        return addr

    def alloc(self, size, stack, traced=True):
        addr = self.place(size)
        self.live[addr] = (size, stack)
        if traced:
            self._event("alloc", addr, size, self.stacks[stack] if stack else [])
        return addr

    def free(self, addr, frames=None):
        size, stack = self.live.pop(addr)
        frames = frames if frames is not None else (self.stacks[stack] if stack else [])
        for action in ("free_requested", "free_completed"):
            self._event(action, addr, size, frames)

    def snapshot(self):
        blocks, at = [], BASE
        for addr in sorted(self.live):
            size, stack = self.live[addr]
            if addr > at:
                blocks.append({"address": at, "size": addr - at, "requested_size": 0,
                               "state": "inactive", "frames": []})
            blocks.append({"address": addr, "size": size, "requested_size": size,
                           "state": "active_allocated",
                           "frames": self.stacks[stack] if stack else []})
            at = addr + size
        if at < BASE + SEGMENT:
            blocks.append({"address": at, "size": BASE + SEGMENT - at, "requested_size": 0,
                           "state": "inactive", "frames": []})
        used = sum(s for s, _ in self.live.values())
        segment = {"device": 0, "address": BASE, "total_size": SEGMENT, "allocated_size": used,
                   "active_size": used, "requested_size": used, "stream": 0,
                   "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": False,
                   "frames": [], "blocks": blocks}
        return {"segments": [segment], "device_traces": [self.trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                       "garbage_collection_threshold": 0.0,
                                       "expandable_segments": False,
                                       "release_lock_on_cudamalloc": False,
                                       "pinned_use_cuda_host_register": False,
                                       "pinned_num_register_threads": 1,
                                       "roundup_power2_divisions": [0] * 16},
                "external_annotations": []}


def step(sim, first, linear_mib):
    x = sim.alloc(1 * MiB, "batch")
    h = sim.alloc(linear_mib * MiB, "linear")
    r = sim.alloc(4 * MiB, "relu")
    sim.free(r)
    ea = sim.alloc(1 * MiB, "einsum_a")
    eb = sim.alloc(1 * MiB, "einsum_b")
    loss = sim.alloc(512 * KiB, "loss")
    seed = sim.alloc(512, "seed")
    rt = sim.alloc(4 * MiB, "relu_bw")
    sim.free(rt, ENGINE_FREE)
    sim.free(seed, ENGINE_FREE)
    grads = [sim.alloc(2 * MiB, "grad"), sim.alloc(2 * MiB, "acc"), sim.alloc(512, "engine_sum")]
    for a in (h, ea, eb, loss):
        sim.free(a, ENGINE_FREE)  # saved tensors, released as their nodes run
    if first:
        sim.alloc(2 * MiB, "exp_avg")
        sim.alloc(2 * MiB, "exp_avg_sq")
    t = sim.alloc(2 * MiB, "sqrt")
    sim.free(t)
    sim.free(x, [py(TRAIN, 26, "train"), MAIN])
    return grads


def write(path, linear_mib=4, net_shift=0):
    sim = Sim(shifted(STACKS, net_shift) if net_shift else STACKS)
    sim.alloc(4 * MiB, None, traced=False)  # W0: weights from before the trace, no stack
    old_grad = sim.alloc(2 * MiB, "grad", traced=False)  # PW: freed by zero_grad in the trace
    sim.free(old_grad, ZERO_GRAD)
    sim.alloc(2 * MiB, "to")  # P1
    grads = step(sim, True, linear_mib)
    for g in grads:
        sim.free(g, ZERO_GRAD)
    step(sim, False, linear_mib)
    with open(path, "w") as f:
        json.dump(sim.snapshot(), f, indent=1)
        f.write("\n")


def main():
    write(os.path.join(os.path.dirname(os.path.abspath(__file__)), "attribution_training.json"))


if __name__ == "__main__":
    main()
