"""memsnap.record(model=...): every submodule's forward and backward name the allocations they
make (torch.cuda.memory._set_memory_metadata), and `top --by module` puts them under the module.
A stand-in for torch.cuda.memory records each operator's outputs as an allocation carrying the
metadata set at that moment, so a small real torch.nn.Module runs on the CPU; skipped without
torch."""

import pytest

import memsnap

torch = pytest.importorskip("torch")
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


class FakeCudaMemory:
    """torch.cuda.memory's recorder, on the CPU: every tensor an operator returns is an `alloc`
    entry (never freed) with the metadata set when it was made."""

    def __init__(self):
        self.metadata = ""
        self.trace = []
        self.recording = False
        self.history_calls = []

    def _record_memory_history(self, **kwargs):
        self.history_calls.append(kwargs)
        self.recording = kwargs.get("enabled", "all") is not None

    def _set_memory_metadata(self, text):
        self.metadata = text

    def _get_memory_metadata(self):
        return self.metadata

    def allocate(self, tensor):
        if not self.recording:
            return
        addr = 0x7F0000000000 + sum(e["size"] for e in self.trace)
        size = max(512, -(-tensor.numel() * tensor.element_size() // 512) * 512)
        entry = {"action": "alloc", "addr": addr, "size": size, "stream": 0,
                 "time_us": 1_000_000 + len(self.trace), "frames": []}
        if self.metadata:
            entry["user_metadata"] = self.metadata
        self.trace.append(entry)

    def _snapshot(self):
        segments = [{"device": 0, "address": e["addr"], "total_size": e["size"],
                     "allocated_size": e["size"], "active_size": e["size"],
                     "requested_size": e["size"], "stream": 0, "segment_type": "large",
                     "segment_pool_id": [0, 0], "is_expandable": False, "frames": [],
                     "blocks": [{"address": e["addr"], "size": e["size"],
                                 "requested_size": e["size"], "state": "active_allocated",
                                 "frames": []}]}
                    for e in self.trace]
        return {"segments": segments, "device_traces": [list(self.trace)]}


class Allocations(TorchDispatchMode):
    def __init__(self, memory):
        super().__init__()
        self.memory = memory

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (list, tuple)) else [out]:
            if isinstance(t, torch.Tensor):
                self.memory.allocate(t)
        return out


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 64)

    def forward(self, x):
        return torch.relu(self.proj(x))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()
        self.mlp = torch.nn.Linear(64, 64)

    def forward(self, x):
        return x + self.mlp(self.attn(x))


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Block(), Block()])
        self.head = torch.nn.Linear(64, 4)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.head(x) * 2


def train_step(model, memory):
    """One step: forward, backward, an optimizer step with state (momentum buffers)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    with Allocations(memory):
        loss = model(torch.ones(32, 64)).sum()
        loss.backward()
        optimizer.step()


def metadata_of(memory):
    return [e.get("user_metadata", "") for e in memory.trace]


def test_record_model_names_each_allocation_by_the_module_that_ran():
    memory, model = FakeCudaMemory(), Model()
    with memsnap.record(memory=memory, model=model) as rec:
        train_step(model, memory)
    seen = metadata_of(memory)
    for text in ("model (Model) forward", "model (Model) backward", "model.layers.0 (Block) forward",
                 "model.layers.1.attn (Attention) forward",
                 "model.layers.1.attn.proj (Linear) forward", "model.head (Linear) forward",
                 "model.head (Linear) backward", "model.layers.0.mlp (Linear) backward",
                 "model.layers.0.attn.proj (Linear) backward"):
        assert text in seen, text
    # Backward runs from the head down: the head's backward comes before the first layer's.
    assert seen.index("model.head (Linear) backward") < \
        seen.index("model.layers.0.attn.proj (Linear) backward")
    # The optimizer step runs outside every module: its state carries no module.
    assert seen[-1] == ""
    assert rec.snapshot is not None


def test_record_model_removes_its_hooks_and_restores_the_metadata():
    memory, model = FakeCudaMemory(), Model()
    memory.metadata = "the program's own"
    with memsnap.record(memory=memory, model=model):
        assert model.layers[0].attn._forward_pre_hooks
        with Allocations(memory):
            model(torch.ones(2, 64)).sum().backward()
        assert memory.metadata == "the program's own"  # after forward and backward alike
    assert memory.metadata == "the program's own"
    for m in model.modules():
        assert not m._forward_pre_hooks and not m._forward_hooks
    with Allocations(memory):
        model(torch.ones(2, 64))  # no longer recorded under any module
    assert memory.history_calls[-1] == {"enabled": None}


def test_record_model_memory_reads_back_as_a_module_tree():
    memory, model = FakeCudaMemory(), Model()
    with memsnap.record(memory=memory, model=model) as rec:
        train_step(model, memory)
    rows = rec.snapshot.top(by="module").rows
    by_key = {r.key: r for r in rows}
    path = ["model (Model)", "model.layers", "model.layers.0 (Block)",
            "model.layers.0.attn (Attention)", "model.layers.0.attn.proj (Linear)"]
    for depth in range(len(path)):
        row = by_key[";".join(path[:depth + 1])]
        assert row.site == path[depth] and row.depth == depth
    # What the projection's forward and backward made (its output, the gradients of its weight,
    # bias and input) is under it, and nothing else.
    proj = by_key[";".join(path)]
    made = [e for e in memory.trace
            if e.get("user_metadata", "").startswith("model.layers.0.attn.proj (Linear) ")]
    assert any(e["user_metadata"].endswith(" backward") for e in made)
    assert proj.self_count == len(made) and proj.self_bytes == sum(e["size"] for e in made)
    # Outside the model (the input, the loss, the optimizer's state): bracketed rows.
    outside = [r for r in rows if r.depth == 0 and r.key != "model (Model)"]
    assert outside and all(r.site.startswith("[") for r in outside)
    assert sum(r.bytes for r in rows if r.depth == 0) == rec.snapshot.top().total_bytes


def test_record_model_needs_set_memory_metadata():
    class OldMemory:
        @staticmethod
        def _record_memory_history(**kwargs):
            pass

    with pytest.raises(memsnap.Error, match="_set_memory_metadata"):
        with memsnap.record(memory=OldMemory, model=torch.nn.Linear(2, 2)):
            pass
