"""Helpers for tests that build snapshots with CPython's own pickle module (standard library only)."""
import json
import os

TESTDATA = os.path.join(os.path.dirname(__file__), "..", "..", "testdata")


def load_json(name):
    """A testdata/ JSON fixture as Python objects; `segment_pool_id`/`pool_id` become tuples,
    as PyTorch writes them."""
    with open(os.path.join(TESTDATA, name)) as f:
        data = json.load(f)

    def fix(o):
        if isinstance(o, dict):
            return {k: (tuple(v) if k in ("segment_pool_id", "pool_id") and isinstance(v, list)
                        else fix(v)) for k, v in o.items()}
        if isinstance(o, list):
            return [fix(x) for x in o]
        return o
    return fix(data)


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


# The page torch.cuda._memory_viz trace_plot/segment_plot writes (docs/snapshot-format.md §1.5).
MEMORY_VIZ_TEMPLATE = r"""
<!DOCTYPE html>
<html>
<head>
</head>
<body>
<script type="module">
import {add_local_files} from "https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js"
const local_files = $SNAPSHOT
add_local_files(local_files, $VIZ_KIND)
</script>
</body>
"""


def memory_viz_html(snapshots, viz_kind="Active Memory Timeline", protocol=None):
    """A _memory_viz page embedding each of `snapshots` (pickled, NUL padded, base64)."""
    import base64
    import pickle
    files = []
    for data in snapshots:
        buf = pickle.dumps(data) if protocol is None else pickle.dumps(data, protocol=protocol)
        buf += b"\x00" * (3 - len(buf) % 3)
        files.append({"name": "snapshot.pickle", "base64": base64.b64encode(buf).decode("utf-8")})
    return MEMORY_VIZ_TEMPLATE.replace("$VIZ_KIND", repr(viz_kind)).replace(
        "$SNAPSHOT", json.dumps(files))
