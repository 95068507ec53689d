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
