"""Generated training-loop snapshots for `memsnap leaks` tests (standard library only).

A tiny simulated caching allocator (one 8 GiB segment, first fit) runs a training loop and writes
the snapshot PyTorch would dump: segments/blocks for the final state, the full trace with frames and
time_us, and `train_step` START/END annotations around every step.

Scenarios (what must be reported):
  leak_list   - `losses.append(loss)` keeps 4 MiB per step: a leak, growing in every step
  leak_cache  - a dict caching 16 MiB of activations per step: a leak, growing in every step
  steady      - the same loop without leak: nothing reported
  warmup      - optimizer state created in step 0 and an LRU cache that fills during steps 0..2 then
                stays at 3 entries: growing then flat, NOT a leak

Edited runs (`write_edited_runs`): separate runs of `leak_cache` for 1, 2 and 3 steps, each dumped
at its end, where train.py was edited before the second run: two lines added at its top move every
train.py frame down by two (train.py:20 -> :22). The cache grows from run to run (16, 32, 48 MiB);
`leaks` must show it as one growing site whose label shows the move, and as two split rows with
--exact-lines.

Usage:
  write_series(folder, scenario, dump_after=(2, 4, 6, 8)) -> [paths]   one pickle per dump
  write_trace(path, scenario, steps=12, oom=False)                      one pickle with the trace
  write_edited_runs(folder) -> [paths]                                  edited_run{1,2,3}.pickle
"""
import os
import pickle

MiB = 1 << 20
BASE = 0x7F0000000000
SEGMENT = 8 << 30


def _frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


MAIN = _frame("<module>", "train.py", 50)
STACKS = {
    "params": [_frame("__init__", "model.py", 5), MAIN],
    "act1": [_frame("forward", "model.py", 12), _frame("train_step", "train.py", 20), MAIN],
    "act2": [_frame("forward", "model.py", 13), _frame("train_step", "train.py", 20), MAIN],
    "act3": [_frame("forward", "model.py", 14), _frame("train_step", "train.py", 20), MAIN],
    "grad": [_frame("backward", "model.py", 30), _frame("train_step", "train.py", 21), MAIN],
    "loss": [_frame("loss_fn", "train.py", 10), _frame("train_step", "train.py", 22), MAIN],
    "tmp": [_frame("clip", "train.py", 15), _frame("train_step", "train.py", 23), MAIN],
    "optim": [_frame("_init_group", "optim.py", 40), _frame("step", "optim.py", 60),
              _frame("train_step", "train.py", 24), MAIN],
    "lru": [_frame("remember", "cache.py", 8), _frame("train_step", "train.py", 25), MAIN],
    "cache": [_frame("cache_activation", "model.py", 18), _frame("forward", "model.py", 15),
              _frame("train_step", "train.py", 20), MAIN],
}


def _shifted(stacks, train_shift):
    """`stacks` with every train.py line moved down by `train_shift` (an edit at its top). A frame
    shared by several stacks stays one object, as PyTorch's pickles share them."""
    if not train_shift:
        return stacks
    moved = {}
    for frames in stacks.values():
        for f in frames:
            if f["filename"] == "train.py" and id(f) not in moved:
                moved[id(f)] = dict(f, line=f["line"] + train_shift)
    return {name: [moved.get(id(f), f) for f in frames] for name, frames in stacks.items()}


class _Sim:
    def __init__(self, stacks=None):
        self.stacks = stacks or STACKS
        self.trace, self.live, self.time, self.annotations = [], {}, 1_000_000, []
        self._event({"action": "segment_alloc", "addr": BASE, "size": SEGMENT, "stream": 0})

    def _event(self, e, stack=None):
        self.time += 1000
        e["time_us"] = self.time
        if stack is not None:
            e["frames"] = self.stacks[stack]
        self.trace.append(e)

    def alloc(self, size, stack):
        addr = BASE
        for a in sorted(self.live):  # first fit
            if a - addr >= size:
                break
            addr = max(addr, a + self.live[a][0])
        self.live[addr] = (size, stack)
        self._event({"action": "alloc", "addr": addr, "size": size, "stream": 0}, stack)
        return addr

    def free(self, addr):
        size, stack = self.live.pop(addr)
        for action in ("free_requested", "free_completed"):
            self._event({"action": action, "addr": addr, "size": size, "stream": 0}, stack)

    def annotate(self, stage, name):
        self.annotations.append({"stage": stage, "name": name, "device": 0, "time_us": self.time + 1})

    def snapshot(self, oom=False):
        trace = list(self.trace)
        if oom:
            used = sum(s for s, _ in self.live.values())
            trace.append({"action": "oom", "device_free": 2 * (1 << 30) - used, "size": 64 * MiB,
                          "stream": 0, "time_us": self.time + 1000})
        blocks, at = [], BASE
        for a in sorted(self.live):
            if a > at:
                blocks.append({"address": at, "size": a - at, "requested_size": 0,
                               "state": "inactive", "frames": []})
            size, stack = self.live[a]
            blocks.append({"address": a, "size": size, "requested_size": size,
                           "state": "active_allocated", "frames": self.stacks[stack]})
            at = a + size
        if at < BASE + SEGMENT:
            blocks.append({"address": at, "size": BASE + SEGMENT - at, "requested_size": 0,
                           "state": "inactive", "frames": []})
        used = sum(s for s, _ in self.live.values())
        segment = {"device": 0, "address": BASE, "total_size": SEGMENT, "allocated_size": used,
                   "active_size": used, "requested_size": used, "stream": 0,
                   "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
                   "frames": [], "blocks": blocks}
        return {"segments": [segment], "device_traces": [trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""},
                "external_annotations": list(self.annotations)}


def _run(scenario, steps, dumps=(), oom=False, train_shift=0, annotation="train_step"):
    """Runs `steps` iterations; returns {k: snapshot after step k} for k in dumps, and 'trace'.
    Each step is wrapped in START/END annotations named `annotation`, formatted with the step's
    number k from 1 ("ProfilerStep#{k}" names each step as torch.profiler does)."""
    sim, out = _Sim(_shifted(STACKS, train_shift)), {}
    params = [sim.alloc(256 * MiB, "params") for _ in range(2)]
    kept, lru, optim = [], [], []
    for k in range(1, steps + 1):
        sim.annotate("START", annotation.format(k=k))
        a1 = sim.alloc(64 * MiB, "act1")
        a2 = sim.alloc(64 * MiB, "act2")
        if scenario == "leak_cache":
            kept.append(sim.alloc(16 * MiB, "cache"))
        a3 = sim.alloc(32 * MiB, "act3")
        loss = sim.alloc(4 * MiB, "loss")
        grads = [sim.alloc(128 * MiB, "grad") for _ in params]
        for a in (a3, a2, a1):
            sim.free(a)
        t = sim.alloc(8 * MiB, "tmp")
        sim.free(t)
        if scenario == "warmup" and not optim:
            optim = [sim.alloc(256 * MiB, "optim") for _ in params]
        if scenario == "warmup":
            lru.append(sim.alloc(2 * MiB, "lru"))
            if len(lru) > 3:
                sim.free(lru.pop(0))
        for g in grads:
            sim.free(g)
        if scenario == "leak_list":
            kept.append(loss)  # losses.append(loss): the graph keeps the tensor alive
        else:
            sim.free(loss)
        sim.annotate("END", annotation.format(k=k))
        if k in dumps:
            out[k] = sim.snapshot(oom=oom and k == max(dumps))
    out["trace"] = sim.snapshot(oom=oom)
    return out


def write_series(folder, scenario, dump_after=(1, 2, 3, 4, 5, 6), oom=False):
    snaps = _run(scenario, max(dump_after), dump_after, oom)
    paths = []
    for k in dump_after:
        path = os.path.join(folder, f"{scenario}_step{k}.pickle")
        with open(path, "wb") as f:
            pickle.dump(snaps[k], f, protocol=4)
        paths.append(path)
    return paths


def write_trace(path, scenario, steps=12, oom=False, annotation="train_step"):
    with open(path, "wb") as f:
        pickle.dump(_run(scenario, steps, oom=oom, annotation=annotation)["trace"], f, protocol=4)
    return path


def write_edited_runs(folder):
    paths = []
    for run, (steps, shift) in enumerate(((1, 0), (2, 2), (3, 2)), start=1):
        path = os.path.join(folder, f"edited_run{run}.pickle")
        with open(path, "wb") as f:
            pickle.dump(_run("leak_cache", steps, (steps,), train_shift=shift)[steps], f,
                        protocol=4)
        paths.append(path)
    return paths


def write_all(folder):
    """Every scenario as a series (6 dumps) and as a single trace (12 steps)."""
    for scenario in ("leak_list", "leak_cache", "steady", "warmup"):
        write_series(folder, scenario)
        write_trace(os.path.join(folder, f"{scenario}_trace.pickle"), scenario)
    write_edited_runs(folder)
