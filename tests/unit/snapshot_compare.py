"""Compares two snapshot files (pickle or JSON) as Python structures, after mapping away what
memsnap's model deliberately does not keep (see include/memsnap/writer/snapshot_writer.h). Loads
pickles with a find_class that refuses everything. Prints "same" or the first difference with its path.

usage: snapshot_compare.py ORIGINAL CONVERTED [ORIGINAL CONVERTED...]  (one line per pair)"""
import json
import pickle
import sys


class _Safe(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def load(path):
    with open(path, "rb") as f:
        head = f.read(1)
        f.seek(0)
        if head == b"\x80":
            return _Safe(f).load()
        return json.load(f)


def canonical(snap):
    if isinstance(snap, list):
        snap = {"segments": snap, "device_traces": []}
    out = {"segments": [], "device_traces": []}
    for seg in snap["segments"]:
        s = dict(seg)
        s["segment_pool_id"] = list(s.get("segment_pool_id", (0, 0)))
        s.setdefault("is_expandable", False)
        s["frames"] = [frame(f) for f in s.get("frames", [])]
        blocks = []
        for b in s["blocks"]:
            b = dict(b)
            b["frames"] = [frame(f) for f in b.get("frames", [])]
            if b["state"] == "inactive":
                b.pop("requested_size", None)  # stale leftover (docs/snapshot-format.md §2.3)
            if b["state"] == "active_awaiting_free":
                b["state"] = "active_pending_free"
            blocks.append(b)
        s["blocks"] = blocks
        out["segments"].append(s)
    for trace in snap.get("device_traces", snap.get("traces", [])):
        events = []
        for e in trace:
            e = dict(e)
            if e.get("compile_context") == "N/A":
                del e["compile_context"]
            if e.get("user_metadata") == "":
                del e["user_metadata"]
            if "frames" in e:
                e["frames"] = [frame(f) for f in e["frames"]]
            if "pool_id" in e:
                e["pool_id"] = list(e["pool_id"])
            events.append(e)
        out["device_traces"].append(events)
    if "allocator_settings" in snap:
        a = dict(snap["allocator_settings"])
        if not a.get("graph_capture_record_stream_reuse", True):
            del a["graph_capture_record_stream_reuse"]
        out["allocator_settings"] = a
    if snap.get("external_annotations"):
        out["external_annotations"] = snap["external_annotations"]
    return out


_frames = {}  # id(frame dict) -> (frame dict, canonical): frames are shared objects in pickles


def frame(f):
    hit = _frames.get(id(f))
    if hit is not None and hit[0] is f:
        return hit[1]
    c = _frame(f)
    _frames[id(f)] = (f, c)
    return c


def _frame(f):
    f = dict(f)
    if f.get("line", 0) < 0 or f.get("line", 0) >= 2**63:
        f["line"] = -1  # "unknown line" (docs/snapshot-format.md §4.4)
    return f


def first_difference(a, b, path="$"):
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
        return f"{path}: {type(a).__name__} {a!r:.80} != {type(b).__name__} {b!r:.80}"
    if isinstance(a, dict):
        if list(a) != list(b) and set(a) != set(b):
            return f"{path}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a!r:.80} != {b!r:.80}"


def main(args):
    cache = {}  # the same original is usually compared with several conversions
    for i in range(0, len(args), 2):
        if args[i] not in cache:
            _frames.clear()
            cache = {args[i]: canonical(load(args[i]))}
        _frames.clear()
        b = canonical(load(args[i + 1]))
        print(first_difference(cache[args[i]], b) or "same", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
