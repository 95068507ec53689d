"""memsnap from Python: PyTorch CUDA memory snapshots analyzed by memsnap's C++ core.

    import memsnap
    s = memsnap.load("snap.pickle")        # a path, the bytes of a file, or the snapshot dict
    print(s.summary())                     # the CLI's text; the result's fields are its --json
    s.top(at="peak", by="site").to_pandas()
    memsnap.check("new.pickle", baseline="base.pickle", tolerance="5%")  # raises CheckFailed

Every method runs the CLI's own command in this process, on the snapshot read once and kept in
memory, and returns what that command's ``--json`` prints, as typed objects with the same fields:
Python and the CLI cannot disagree (they are the same code). ``str()`` of a result is the CLI's
text. Keyword arguments are the command's flags (``python_only=True`` is ``--python-only``;
``memsnap <command> --help`` lists them). The GIL is released while a file is read and while a
command runs. docs/python.md has the whole story.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
from typing import Any, Iterable, Iterator, Mapping

from . import _memsnap

__all__ = [
    "Error", "InputError", "CheckFailed", "Snapshot", "Result", "Record", "Table", "Summary",
    "Top", "Timeline", "Blocks", "Frag", "Oom", "Diff", "Check", "Replay", "load", "diff",
    "check", "record", "module_metadata",
]


class Error(Exception):
    """What went wrong, in the CLI's words (the file, and the byte offset or key path)."""


class InputError(Error):
    """Unusable input or a bad argument (the CLI's exit code 2)."""


class CheckFailed(Error):
    """memsnap.check found a regression (the CLI's exit code 1). ``str()`` is the CLI's failure
    text; ``result`` is the Check with every check's figures."""

    def __init__(self, text: str, result: "Check"):
        super().__init__(text)
        self.result = result


# ---- Results: the command's JSON, typed --------------------------------------------------------


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        return Table(value)
    return value


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        value = json.dumps(value)
    return html.escape("" if value is None else str(value))


def _html_table(rows: list, limit: int = 200) -> str:
    columns: list = []
    for row in rows[:limit]:
        for key in row:
            if key not in columns:
                columns.append(key)
    out = ["<table>", "<thead><tr>"]
    out += [f"<th>{html.escape(str(c))}</th>" for c in columns]
    out.append("</tr></thead><tbody>")
    for row in rows[:limit]:
        out.append("<tr>" + "".join(f"<td>{_cell(row.get(c))}</td>" for c in columns) + "</tr>")
    out.append("</tbody></table>")
    if len(rows) > limit:
        out.append(f"<p>{len(rows) - limit} more rows (to_pandas() has them all)</p>")
    return "".join(out)


class Record(Mapping):
    """A JSON object of a result: its fields as attributes (``r.peak_bytes``) and as keys."""

    def __init__(self, data: dict):
        self._data = data

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self.__dict__["_data"][name])
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field '{name}'") from None

    def __getitem__(self, key: str) -> Any:
        return _wrap(self._data[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __dir__(self) -> list:
        return list(super().__dir__()) + list(self._data)

    @property
    def fields(self) -> list:
        """The field names, in the JSON's order."""
        return list(self._data)

    def to_dict(self) -> dict:
        """The JSON object itself (plain dicts and lists)."""
        return self._data

    def __repr__(self) -> str:
        return f"{type(self).__name__}({json.dumps(self._data)[:200]})"

    def _repr_html_(self) -> str:
        scalars = {k: v for k, v in self._data.items() if not isinstance(v, (dict, list))}
        return _html_table([scalars]) if scalars else ""


class Table(list):
    """A JSON array of objects (rows): a list of Records that converts to a DataFrame."""

    def __init__(self, rows: Iterable[dict]):
        super().__init__(Record(r) for r in rows)

    def to_records(self) -> list:
        """The rows as plain dicts (no pandas needed)."""
        return [r.to_dict() for r in self]

    def to_pandas(self):
        """The rows as a pandas DataFrame, one column per field (pandas must be installed)."""
        import pandas  # not a dependency of memsnap: imported only here

        return pandas.DataFrame.from_records(self.to_records())

    def _repr_html_(self) -> str:
        return _html_table(self.to_records())


class Result(Record):
    """The result of one command: the fields of its ``--json`` output. ``str()`` is the CLI's text
    output of the same command; ``to_pandas()``/``to_records()`` convert its main table."""

    command = ""
    table = ""  # the field holding the main table

    def __init__(self, data: dict, text_args: list | None = None, inputs: dict | None = None):
        super().__init__(data)
        self.__dict__["_text_args"] = text_args
        self.__dict__["_inputs"] = inputs or {}
        self.__dict__["_text"] = None

    def __str__(self) -> str:
        if self._text is None:
            if self._text_args is None:
                return json.dumps(self._data, indent=2)
            self.__dict__["_text"] = _run(self._text_args, self._inputs, json_output=False)[0]
        return self._text

    def to_records(self, table: str | None = None) -> list:
        """The rows of `table` (default: the result's main table) as plain dicts."""
        return Table(self._data.get(table or self.table) or []).to_records()

    def to_pandas(self, table: str | None = None):
        """The rows of `table` (default: the result's main table) as a pandas DataFrame."""
        return Table(self._data.get(table or self.table) or []).to_pandas()

    def _repr_html_(self) -> str:
        title = f"<h4>memsnap {html.escape(self.command)}</h4>"
        rows = self._data.get(self.table)
        body = _html_table(rows) if isinstance(rows, list) and rows else ""
        return title + super()._repr_html_() + body

    def __repr__(self) -> str:
        keys = ", ".join(self.fields[:8])
        return f"<memsnap.{type(self).__name__}: {keys}{', ...' if len(self) > 8 else ''}>"


class Summary(Result):
    """`memsnap summary --json`: counts, totals and peaks per device, pool and stream."""
    command, table = "summary", "devices"


class Top(Result):
    """`memsnap top --json`: live memory at a moment by site (or category, function, ...)."""
    command, table = "top", "rows"


class Timeline(Result):
    """`memsnap timeline --json`: live and reserved bytes over time, per device."""
    command, table = "timeline", "devices"


class Blocks(Result):
    """`memsnap blocks --json`: the live blocks (or every lifetime with all=True)."""
    command, table = "blocks", "blocks"


class Frag(Result):
    """`memsnap frag --json`: what fragmentation costs, and the setting that fixes it."""
    command, table = "frag", "segments_detail"


class Oom(Result):
    """`memsnap oom --json`: why an allocation failed (or would, on device_memory)."""
    command, table = "oom", "ooms"


class Diff(Result):
    """`memsnap diff --json`: live memory by kind and by site, before and after."""
    command, table = "diff", "sites"


class Check(Result):
    """`memsnap check --json`: the CI gate's checks; ``passed`` says whether all passed."""
    command, table = "check", "checks"


class Replay(Result):
    """`memsnap replay --json`: the trace replayed through the allocator simulator."""
    command, table = "replay", "configs"


# ---- Running a command -------------------------------------------------------------------------


def _flags(flags: Mapping[str, Any]) -> list:
    """Keyword arguments as the command's flags: python_only=True is --python-only.
    `categories`: the user's own categories, {NAME: REGEX} or ["NAME=REGEX", ...], each a
    --category (a path stays the --categories file). They hold for this one call: two threads
    with different categories each get their own answer."""
    out = []
    for key, value in flags.items():
        flag = "--" + key.replace("_", "-")
        if value is None or value is False:
            continue
        if key == "categories" and not isinstance(value, (str, os.PathLike)):
            items = value.items() if isinstance(value, Mapping) else None
            for v in ([f"{k}={r}" for k, r in items] if items is not None else value):
                out += ["--category", str(v)]
            continue
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, str(value)]
    return out


def _message(err: str) -> str:
    lines = [l for l in err.splitlines() if l and not l.startswith("warning: ")]
    return "\n".join(lines) or err.strip() or "memsnap failed"


def _run(args: list, inputs: dict, json_output: bool = True) -> Any:
    code, out, err = _memsnap.run(args, {name: s._loaded for name, s in inputs.items()})
    if code == 2:
        raise InputError(_message(err))
    if code not in (0, 1):
        raise Error(_message(err))
    return (json.loads(out) if json_output else out), code


def _path(x: Any) -> str:
    """A path argument as a string; one holding a NUL byte names no file."""
    path = os.fsdecode(os.fspath(x))
    if "\0" in path:
        raise InputError(f"{path!r}: not a path (it holds a NUL byte)")
    return path


class _Inputs:
    """The inputs of one command line. A path is passed on as it is and read from disk by the
    command, every time; a Snapshot (or bytes or a dict, loaded here) is handed over in memory
    under a handle that starts with a NUL byte, which no path can: a path never reaches a
    snapshot in memory, whatever its name (the name is a label, shown in results)."""

    def __init__(self):
        self.snapshots: dict = {}

    def add(self, x: Any) -> str:
        if isinstance(x, (str, os.PathLike)):
            return _path(x)
        s = x if isinstance(x, Snapshot) else load(x)
        for handle, known in self.snapshots.items():
            if known is s:
                return handle
        handle = f"\0memsnap-snapshot-{len(self.snapshots)}"
        self.snapshots[handle] = s
        return handle


def _result(cls: type, command: str, inputs: list, flags: Mapping[str, Any]) -> Result:
    ins = _Inputs()
    names = [ins.add(x) for x in inputs]
    args = [command] + _flags(flags) + names
    data, _ = _run(args[:1] + ["--json"] + args[1:], ins.snapshots)
    return cls(data, args, ins.snapshots)


# ---- Snapshots ---------------------------------------------------------------------------------


class Snapshot:
    """A snapshot read once into memory; every method runs a command on it."""

    def __init__(self, loaded: Any):
        self._loaded = loaded

    @property
    def name(self) -> str:
        """The path, or the name given to load() for bytes and dicts."""
        return self._loaded.name

    @property
    def warnings(self) -> list:
        """What the reader found inconsistent but survivable (the CLI prints them as warnings)."""
        return list(self._loaded.warnings)

    @property
    def events(self) -> int:
        """Trace entries, all devices."""
        return self._loaded.events

    def summary(self, **flags) -> Summary:
        return _result(Summary, "summary", [self], flags)

    def top(self, at: str = "peak", by: str = "site", **flags) -> Top:
        return _result(Top, "top", [self], dict(at=at, by=by, **flags))

    def timeline(self, **flags) -> Timeline:
        return _result(Timeline, "timeline", [self], flags)

    def blocks(self, **flags) -> Blocks:
        return _result(Blocks, "blocks", [self], flags)

    def frag(self, **flags) -> Frag:
        return _result(Frag, "frag", [self], flags)

    def oom(self, device_memory: str | int | None = None, **flags) -> Oom:
        return _result(Oom, "oom", [self], dict(device_memory=device_memory, **flags))

    def replay(self, conf: str | list | None = None, **flags) -> Replay:
        return _result(Replay, "replay", [self], dict(conf=conf, **flags))

    def diff(self, after: Any, **flags) -> Diff:
        return diff(self, after, **flags)

    def check(self, **flags) -> Check:
        return check(self, **flags)

    def report(self, path: str | os.PathLike, other: Any = None, **flags) -> str:
        """Writes the HTML report (the diff page with `other`) to `path`; returns the path."""
        ins = _Inputs()
        names = [ins.add(self)] + ([ins.add(other)] if other is not None else [])
        _run(["report"] + _flags(dict(output=os.fspath(path), **flags)) + names, ins.snapshots,
             json_output=False)
        return os.fspath(path)

    def report_html(self, **flags) -> str:
        """The HTML report page as a string."""
        ins = _Inputs()
        name = ins.add(self)
        page, _ = _run(["report"] + _flags(dict(output="-", **flags)) + [name], ins.snapshots,
                       json_output=False)
        return page

    def _repr_html_(self) -> str:
        # The report page inline, in a frame of its own so its script and styles stay its own.
        page = self.report_html()
        return (f'<iframe srcdoc="{html.escape(page, quote=True)}" '
                'style="width:100%;height:720px;border:0" sandbox="allow-scripts"></iframe>')

    def __repr__(self) -> str:
        return f"<memsnap.Snapshot {self.name}: {self.events} trace entries>"


def load(x: Any, name: str | None = None, strict: bool = False, threads: int = 0) -> Snapshot:
    """Reads a snapshot once: a path (every format the CLI reads: pickle, JSON, the _memory_viz
    HTML page, gzip of any of them), the bytes of such a file, or the snapshot object itself (the
    dict ``torch.cuda.memory._snapshot()`` returns, or its 1.13 list of segments), read directly
    without a file or a pickle. `name` names bytes and dicts in results and errors (default
    ``<bytes>``, ``<dict>``). `strict`: the reader's warnings are errors (the CLI's --strict).
    `threads`: threads that may decode one pickle (0: all cores; at most 4096, as the CLI's -j).
    Raises InputError, also for an argument of another type (None, a number)."""
    if isinstance(x, Snapshot):
        return x
    if isinstance(threads, bool) or not isinstance(threads, int) or \
            not 0 <= threads <= _memsnap.MAX_THREADS:
        raise InputError(f"memsnap.load: threads={threads!r}: expected 0 (all cores) to "
                         f"{_memsnap.MAX_THREADS}, as the CLI's --threads")
    try:
        if isinstance(x, (str, os.PathLike)):
            return Snapshot(_memsnap.read_path(_path(x), strict=strict, threads=threads))
        if isinstance(x, (bytes, bytearray, memoryview)):
            return Snapshot(_memsnap.read_bytes(bytes(x), name or "<bytes>", strict=strict,
                                                threads=threads))
        if isinstance(x, (dict, list, tuple)):
            return Snapshot(_memsnap.read_object(x, name or "<dict>", strict=strict))
    except _memsnap.Error as e:
        raise InputError(str(e)) from None
    raise InputError(f"memsnap.load: expected a path, bytes or a snapshot dict, got "
                     f"{type(x).__name__}")


def diff(before: Any, after: Any, **flags) -> Diff:
    """`memsnap diff BEFORE AFTER`: paths, bytes, dicts or Snapshots."""
    return _result(Diff, "diff", [before, after], flags)


def check(x: Any, fits: str | int | None = None, baseline: Any = None,
          tolerance: str | None = None, **flags) -> Check:
    """`memsnap check`: returns the Check when every check passes; raises CheckFailed (with the
    CLI's failure text) when one fails, InputError when the input is unusable. The other gates are
    flags: max_peak="20GiB", max_reserved=..., max_frag=..."""
    ins = _Inputs()
    gates = dict(fits=fits, tolerance=tolerance, **flags)
    if baseline is not None:
        gates["baseline"] = ins.add(baseline)
    args = ["check"] + _flags(gates) + [ins.add(x)]
    data, code = _run(args[:1] + ["--json"] + args[1:], ins.snapshots)
    result = Check(data, args, ins.snapshots)
    if code == 1:
        raise CheckFailed(str(result).rstrip("\n"), result)
    return result


class Recording:
    """What memsnap.record() yields: ``snapshot`` is set when the block ends."""

    def __init__(self):
        self.snapshot: Snapshot | None = None


def module_metadata(name: str, module: Any, phase: str) -> str:
    """The `user_metadata` memsnap.record(model=...) sets while a module runs, and that
    ``top --by module`` reads back as the module's place in the tree: "QUALIFIED.NAME (Type)
    phase", e.g. ``model.layers.3.attn (Attention) backward`` (docs/attribution.md, "Modules")."""
    return f"{name} ({type(module).__name__}) {phase}"


class _ModuleHooks:
    """Sets torch.cuda.memory's allocation metadata to the module that runs, in forward and in
    backward, as PyTorch's MemTracker/ModTracker follow modules (torch/distributed/_tools):

    - forward: a pre-hook on every submodule sets "NAME (Type) forward", its post-hook restores
      the caller's (the parent module's, or what the program had set);
    - backward: the post-hook hooks the module's outputs; when the first gradient of one is
      computed, the module's backward has begun: "NAME (Type) backward". The pre-hook hooks the
      inputs that require grad; their gradient ends it and restores what was set before. A
      module whose inputs need no gradient (an embedding, the first layer) never sees that end,
      so the end of the whole backward pass (a callback queued on the autograd engine) restores
      what was set before it began.

    Tensor hooks, not full backward hooks: those wrap the module's outputs in a view, which an
    in-place operator after the module then refuses to modify."""

    def __init__(self, model: Any, name: str, memory: Any):
        import torch  # noqa: the caller gave a torch.nn.Module

        self.torch = torch
        self.memory = memory
        self.current = ""
        get = getattr(memory, "_get_memory_metadata", None)
        if get is not None:
            self.current = get() or ""
        self.outer = self.current
        self.forward_stack: list = []
        self.in_backward = False
        self.before_backward = ""
        self.current_call: _BackwardCall | None = None  # the module whose backward is set
        self.active = True
        self.handles: list = []
        for qualified, module in model.named_modules(prefix=name):
            self.handles.append(module.register_forward_pre_hook(self._pre(qualified, module)))
            self.handles.append(module.register_forward_hook(self._post(qualified, module)))

    def set(self, value: str) -> None:
        if self.active and value != self.current:
            self.current = value
            self.memory._set_memory_metadata(value)

    def _tensors(self, value: Any) -> list:
        """The tensors of a hook's args or output that take part in autograd (nested lists,
        tuples and dicts too)."""
        out, todo = [], [value]
        while todo:
            v = todo.pop()
            if isinstance(v, self.torch.Tensor):
                if v.requires_grad:
                    out.append(v)
            elif isinstance(v, (list, tuple)):
                todo.extend(v)
            elif isinstance(v, dict):
                todo.extend(v.values())
        return out

    def _pre(self, name: str, module: Any):
        text = module_metadata(name, module, "forward")
        backward = module_metadata(name, module, "backward")

        def hook(mod, args):
            if not self.active:
                return None
            parent = self.forward_stack[-1][1] if self.forward_stack else None
            call = _BackwardCall(self, backward, parent)
            # Pre- and post-hooks of nested calls pair up last in, first out.
            self.forward_stack.append((self.current, call))
            self.set(text)
            if self.torch.is_grad_enabled():
                for t in self._tensors(args):
                    t.register_hook(call.end)
            return None

        return hook

    def _post(self, name: str, module: Any):
        def hook(mod, args, output):
            if not self.active or not self.forward_stack:
                return None
            before, call = self.forward_stack.pop()
            self.set(before)
            if self.torch.is_grad_enabled():
                for t in self._tensors(output):
                    t.register_hook(call.begin)
            return None

        return hook

    def backward_begins(self) -> None:
        if self.in_backward:
            return
        self.in_backward = True
        self.before_backward = self.current

        def done():
            self.in_backward = False
            self.current_call = None
            self.set(self.before_backward)

        self.torch.autograd.Variable._execution_engine.queue_callback(done)

    def remove(self) -> None:
        for h in self.handles:
            h.remove()
        self.handles.clear()
        self.set(self.outer)
        self.active = False


class _BackwardCall:
    """One forward call's backward: `begin` hooks its outputs' gradients, `end` its inputs'.
    Backward nests as forward did, so a module's backward ends in its parent's (the module whose
    forward called it), or in what was set before the backward pass when it has none."""

    def __init__(self, hooks: _ModuleHooks, text: str, parent: "_BackwardCall | None"):
        self.hooks, self.text, self.parent, self.running = hooks, text, parent, False

    def begin(self, grad: Any) -> None:
        if self.running or not self.hooks.active:
            return None
        self.hooks.backward_begins()
        self.running = True
        # A module's output is often its last submodule's too, whose hook runs first: the
        # submodule's backward then holds.
        inner = self.hooks.current_call
        while inner is not None and inner is not self:
            inner = inner.parent
        if inner is None:
            self.hooks.current_call = self
            self.hooks.set(self.text)
        return None

    def end(self, grad: Any) -> None:
        if not self.running or not self.hooks.active:
            return None
        self.running = False
        # The gradient that ends this module's backward may begin its predecessor's (the module
        # whose output was this one's input), whose hook can run first: then that one holds.
        if self.hooks.current_call is self:
            p = self.parent
            while p is not None and not p.running:
                p = p.parent
            self.hooks.current_call = p
            self.hooks.set(p.text if p is not None else self.hooks.before_backward)
        return None


@contextlib.contextmanager
def record(max_entries: int = 100000, memory: Any = None, model: Any = None,
           model_name: str = "model", **history_flags):
    """Records the CUDA allocator's history for the block, then reads the snapshot straight from
    memory (no file):

        with memsnap.record() as rec:
            train_step()
        print(rec.snapshot.top())

    It calls ``torch.cuda.memory._record_memory_history(max_entries=..., **history_flags)`` on
    entry and ``torch.cuda.memory._snapshot()`` then ``_record_memory_history(enabled=None)`` on
    exit. `memory`: the module with those two functions (default torch.cuda.memory; torch is
    imported only here).

    `model`: a torch.nn.Module whose submodules name the memory they make. While one runs its
    forward or backward, the allocations carry its qualified name, type and phase as metadata
    (``torch.cuda.memory._set_memory_metadata``, PyTorch 2.9; `model_name` is the root's name):
    ``model.layers.3.attn (Attention) forward``, and ``top(by="module")`` shows the memory under
    ``model`` > ``model.layers`` > ``model.layers.3`` > ``model.layers.3.attn (Attention)``. The
    hooks are removed and the metadata restored when the block ends."""
    if memory is None:
        import torch.cuda.memory as memory  # noqa: the one place memsnap touches torch
    if model is not None and not hasattr(memory, "_set_memory_metadata"):
        raise Error("memsnap.record(model=...): torch.cuda.memory has no _set_memory_metadata "
                    "(PyTorch 2.9 or later records allocation metadata)")
    memory._record_memory_history(max_entries=max_entries, **history_flags)
    rec = Recording()
    hooks = None
    try:
        if model is not None:
            hooks = _ModuleHooks(model, model_name, memory)
        yield rec
    finally:
        try:
            if hooks is not None:
                hooks.remove()
            rec.snapshot = load(memory._snapshot(), name="<recorded>")
        finally:
            memory._record_memory_history(enabled=None)
