#!/usr/bin/env python3
"""Writes the fuzz seed corpus (generated, never the real snapshots) into OUTDIR/<target>/.

Seeds: the hand-written testdata/formats fixtures as pickles of protocols 2-5, as JSON, as
_memory_viz HTML pages and gzipped; plus a snapshot whose frames are shared memo references, as
PyTorch writes them. Standard library only.
Usage: scripts/make_fuzz_seeds.py OUTDIR
"""
import gzip
import json
import os
import pickle
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
from pyhelpers import load_json, memory_viz_html  # noqa: E402


def shared_frames_snapshot():
    frames = [{"name": "f%d" % i, "filename": "m.py", "line": i} for i in range(6)]
    stack = frames[:4]
    events = []
    for i in range(12):
        events.append({"action": "alloc", "addr": 0x7f0000000000 + 512 * i, "size": 100 + i,
                       "stream": 0, "time_us": 1732000000000000 + i, "compile_context": "N/A",
                       "user_metadata": "", "frames": stack if i % 2 else [frames[5]] + stack})
    events.append({"action": "oom", "device_free": 1024, "size": 1 << 30, "stream": 0})
    seg = {"device": 0, "address": 0x7f0000000000, "total_size": 2097152,
           "allocated_size": 512, "active_size": 512, "requested_size": 100, "stream": 0,
           "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": [], "blocks": [
               {"address": 0x7f0000000000, "size": 512, "requested_size": 100,
                "state": "active_allocated", "frames": stack},
               {"address": 0x7f0000000200, "size": 2096640, "requested_size": 0,
                "state": "inactive", "frames": []}]}
    return {"segments": [seg], "device_traces": [events, []]}


def training_snapshot(steps=60):
    """A training loop of a few thousand entries over many shared stacks (about 200 KB as a
    pickle), so that the structure-aware target starts from a whole file past 64 KiB."""
    frames = [{"name": "f%d" % i, "filename": "model%d.py" % (i % 5), "line": 10 + i}
              for i in range(40)]
    stacks = [frames[i:i + 6] for i in range(0, 34, 3)]
    base, t, events, live = 0x7f0000000000, 1732000000000000, [], []
    events.append({"action": "segment_alloc", "addr": base, "size": 1 << 30, "stream": 0,
                   "time_us": t, "frames": stacks[0]})
    for step in range(steps):
        for k in range(20):
            t += 7
            addr = base + ((step * 20 + k) % 400) * (2 << 20)
            size = 512 * (1 + (step * 7 + k * 13) % 4000)
            events.append({"action": "alloc", "addr": addr, "size": size, "stream": k % 2,
                           "time_us": t, "compile_context": "N/A", "user_metadata": "",
                           "frames": stacks[(step + k) % len(stacks)]})
            live.append((addr, size, k % 2))
        while len(live) > 30:
            addr, size, stream = live.pop(0)
            for action in ("free_requested", "free_completed"):
                t += 3
                events.append({"action": action, "addr": addr, "size": size, "stream": stream,
                               "time_us": t, "compile_context": "N/A", "user_metadata": "",
                               "frames": stacks[step % len(stacks)]})
    events.append({"action": "oom", "device_free": 1 << 20, "size": 1 << 33, "stream": 0,
                   "time_us": t + 1})
    blocks, offset = [], 0
    for addr, size, stream in sorted(live):
        if addr - base > offset:
            blocks.append({"address": base + offset, "size": addr - base - offset,
                           "requested_size": 0, "state": "inactive", "frames": []})
        blocks.append({"address": addr, "size": size, "requested_size": size - 7,
                       "state": "active_allocated", "frames": stacks[1]})
        offset = addr - base + size
    blocks.append({"address": base + offset, "size": (1 << 30) - offset, "requested_size": 0,
                   "state": "inactive", "frames": []})
    seg = {"device": 0, "address": base, "total_size": 1 << 30,
           "allocated_size": sum(s for _, s, _ in live), "active_size": sum(s for _, s, _ in live),
           "requested_size": sum(s - 7 for _, s, _ in live), "stream": 0,
           "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
           "frames": stacks[0], "blocks": blocks}
    return {"segments": [seg], "device_traces": [events],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False,
                                   "roundup_power2_divisions": {"1": 0, "2": 4}}}


def main():
    out = sys.argv[1]
    fixtures = sorted(f for f in os.listdir(os.path.join(ROOT, "testdata", "formats"))
                      if f.endswith(".json"))
    datas = {f[:-5]: load_json(os.path.join("formats", f)) for f in fixtures}
    datas["shared_frames"] = shared_frames_snapshot()
    seeds = {"pickle": {}, "json": {}, "html": {}, "gzip": {}, "reader": {}, "timeline": {},
             "pickle_paths": {}, "structured": {}}
    for name, data in datas.items():
        for proto in (2, 3, 4, 5):
            seeds["pickle"]["%s.p%d" % (name, proto)] = pickle.dumps(data, protocol=proto)
        seeds["json"][name + ".json"] = json.dumps(data).encode()
        seeds["html"][name + ".html"] = memory_viz_html([data]).encode()
        seeds["gzip"][name + ".pickle.gz"] = gzip.compress(pickle.dumps(data, protocol=4))
        seeds["gzip"][name + ".json.gz"] = gzip.compress(json.dumps(data).encode())
    seeds["html"]["two.html"] = memory_viz_html(list(datas.values())[:2]).encode()
    for kind in ("pickle", "json", "html", "gzip"):
        for name, b in seeds[kind].items():
            seeds["reader"][kind + "_" + name] = b
    # The timeline target starts from JSON (easy to mutate into new traces): the format fixtures
    # and the timeline fixtures, which have rings, streams and expandable segments.
    seeds["timeline"] = dict(seeds["json"])
    for f in sorted(os.listdir(os.path.join(ROOT, "testdata"))):
        if f.startswith(("timeline_", "frag_")) and f.endswith(".json"):
            with open(os.path.join(ROOT, "testdata", f), "rb") as fh:
                seeds["timeline"][f] = fh.read()
    # The pickle targets of issue 20 start from pickles, and a whole training loop past 64 KiB.
    training = training_snapshot()
    seeds["pickle_paths"] = dict(seeds["pickle"])
    seeds["structured"] = dict(seeds["pickle"])
    for proto in (2, 4):
        seeds["pickle_paths"]["training.p%d" % proto] = pickle.dumps(training, protocol=proto)
        seeds["structured"]["training.p%d" % proto] = pickle.dumps(training, protocol=proto)
    for kind, files in seeds.items():
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        for name, b in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(b)
    print("seeds written to", out, {k: len(v) for k, v in seeds.items()})


if __name__ == "__main__":
    main()
