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


def main():
    out = sys.argv[1]
    fixtures = sorted(f for f in os.listdir(os.path.join(ROOT, "testdata", "formats"))
                      if f.endswith(".json"))
    datas = {f[:-5]: load_json(os.path.join("formats", f)) for f in fixtures}
    datas["shared_frames"] = shared_frames_snapshot()
    seeds = {"pickle": {}, "json": {}, "html": {}, "gzip": {}, "reader": {}, "timeline": {}}
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
    for kind, files in seeds.items():
        d = os.path.join(out, kind)
        os.makedirs(d, exist_ok=True)
        for name, b in files.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(b)
    print("seeds written to", out, {k: len(v) for k, v in seeds.items()})


if __name__ == "__main__":
    main()
