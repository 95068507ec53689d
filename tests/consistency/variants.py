#!/usr/bin/env python3
"""Traces the final state does not explain: one model, no crash (docs/figures.md, "When the trace
does not explain the state").

  variants.py MEMSNAP FILE_OR_DIR... [--files N] [--signals-only]

Derives from each snapshot with a trace (N of them, spread over the sorted list; default 10) the
shapes real files take when their trace and dumped state disagree, each a pickle written with
Python's own pickle module from `memsnap convert`'s JSON:
  - tail50: the last half of every trace (a ring buffer that wrapped);
  - amp3: the longest trace three times over, each copy at its own addresses (a trace pieced
    together: frees without allocs and allocations the final state does not hold);
  - droplastfree: the last free of the longest trace removed;
  - unkfree: a 1 GiB free at an address in no segment, just after the live peak;
  - segafteroom: a 24 GiB segment_alloc just after the first oom entry (files with one);
  - slice: `memsnap convert --to event:N` at the middle of the longest trace.
Each variant must pass check_consistency.py's checks (every figure the same in every command and
on the page, both fit starts), have no negative byte figure and no share outside [0, 1] in any
JSON, and `oom`, `report`, `replay --sweep` and `frag` must end with exit 0, 1 or 2, never a
signal. --signals-only runs only the last (the sanitizer stage of CI, scripts/sanitize.sh, on a
memsnap built with ASan and UBSan). Prints one line per problem; exits 1 when there is any, 77
(skipped) without the corpus.
"""
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_consistency  # noqa: E402

SIGNED = re.compile(r"(delta|change|margin|over|growth|diff|gain|saved|slack|headroom)", re.I)


def run(memsnap, *args):
    return subprocess.run([memsnap, *args], capture_output=True, text=True, timeout=600)


def ranges(name, cmd, x, bad, path=""):
    """No negative byte figure (unless its name says it is a change), no share outside [0, 1]."""
    if isinstance(x, dict):
        for k, v in x.items():
            p = f"{path}/{k}"
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if k.endswith("bytes") and v < 0 and not SIGNED.search(p):
                    bad.append(f"{name}: {cmd} {p} = {v} < 0")
                if k == "share" and not -1e-9 <= v <= 1 + 1e-9:
                    bad.append(f"{name}: {cmd} {p} = {v} outside [0, 1]")
            else:
                ranges(name, cmd, v, bad, p)
    elif isinstance(x, list):
        for i, v in enumerate(x[:2000]):
            ranges(name, cmd, v, bad, f"{path}/{i}")


def load(memsnap, path, tmp):
    """The snapshot as Python objects, through the project's own converter; stacks shared."""
    out = os.path.join(tmp, "base.json")
    p = run(memsnap, "-q", "convert", "--force", path, out)
    if p.returncode != 0:
        return None
    with open(out, encoding="utf-8") as f:
        d = json.load(f)
    stacks = {}
    for trace in d.get("device_traces") or []:
        for e in trace:
            fr = e.get("frames")
            if fr:
                key = tuple((x.get("filename"), x.get("line"), x.get("name")) for x in fr)
                e["frames"] = stacks.setdefault(key, fr)
    return d


def derive(memsnap, path, d, tmp):
    """The variants of one file: (tag, path) pairs."""
    traces = d.get("device_traces") or []
    if not any(traces):
        return []
    k = max(range(len(traces)), key=lambda i: len(traces[i]))
    t = traces[k]
    base = os.path.join(tmp, os.path.basename(path).split(".")[0][:40])
    made = []

    def save(tag, trace):
        e = dict(d)
        e["device_traces"] = [trace if i == k else x for i, x in enumerate(traces)]
        if tag == "tail50":
            e["device_traces"] = [x[len(x) // 2:] for x in traces]
        out = f"{base}.{tag}.pickle"
        with open(out, "wb") as f:
            pickle.dump(e, f, protocol=4)
        made.append((tag, out))

    save("tail50", None)
    times = [e.get("time_us", 0) for e in t]
    span = (max(times) - min(times) + 1000) if times else 0
    amp = []
    for c in range(3):
        for e in t:
            e2 = dict(e)
            if c and "addr" in e2 and e2["action"] != "oom":
                e2["addr"] += c << 40
            if "time_us" in e2:
                e2["time_us"] += c * span
            amp.append(e2)
    save("amp3", amp)
    frees = [i for i, e in enumerate(t) if e["action"] == "free_completed"]
    if frees:
        save("droplastfree", t[:frees[-1]] + t[frees[-1] + 1:])
    cur = most = at = 0
    for i, e in enumerate(t):
        cur += {"alloc": e["size"], "free_completed": -e["size"]}.get(e["action"], 0)
        if cur > most:
            most, at = cur, i
    ghost = dict(t[at], action="free_completed", addr=(1 << 47) + 4096, size=1 << 30)
    save("unkfree", t[:at + 1] + [ghost] + t[at + 1:])
    ooms = [i for i, e in enumerate(t) if e["action"] == "oom"]
    if ooms:
        seg = dict(t[ooms[0]], action="segment_alloc", addr=1 << 46, size=24 << 30)
        save("segafteroom", t[:ooms[0] + 1] + [seg] + t[ooms[0] + 1:])
    sl = f"{base}.slice.pickle"
    if run(memsnap, "-q", "convert", "--force", "--to", f"event:{len(t) // 2}", path,
           sl).returncode == 0:
        made.append(("slice", sl))
    return made


def check_variant(memsnap, name, path, tmp, signals_only):
    bad = []
    if not signals_only:
        try:
            bad += check_consistency.check_file(memsnap, path, tmp)
        except Exception as e:  # an unreadable output is a disagreement too
            bad.append(f"{name}: {e}")
        for args in (["summary", "--json"], ["top", "--json", "--top", "0"],
                     ["top", "--by", "category", "--json"], ["frag", "--json"]):
            p = run(memsnap, *args, path)
            if p.returncode in (0, 1):
                ranges(name, args[0], json.loads(p.stdout), bad)
    page = os.path.join(tmp, "variant.html")
    for args in (["oom"], ["report", "-o", page, "--force"], ["replay", "--sweep"], ["frag"]):
        p = run(memsnap, *args, path)
        if p.returncode not in (0, 1, 2):
            bad.append(f"{name}: {args[0]} ended with {p.returncode} "
                       f"(a signal or a crash): {p.stderr.strip()[-300:]}")
        elif p.returncode == 2 and not p.stderr.strip():
            bad.append(f"{name}: {args[0]} exit 2 without a message")
    return bad


def main():
    args = sys.argv[1:]
    limit = 10
    signals_only = "--signals-only" in args
    args = [a for a in args if a != "--signals-only"]
    if "--files" in args:
        i = args.index("--files")
        limit = int(args[i + 1])
        del args[i:i + 2]
    memsnap, inputs = args[0], args[1:]
    files, code = check_consistency.snapshot_files(inputs, r"\.(pickle|pkl|json)$")
    if files is None:
        return code
    bad, checked = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        # Files with a trace, smallest first (the variants triple the longest trace), and every
        # file whose trace holds an oom entry among them.
        candidates = []
        for f in sorted(files, key=os.path.getsize):
            d = load(memsnap, f, tmp)
            if d is None or not any(d.get("device_traces") or []):
                continue
            has_oom = any(e.get("action") == "oom" for t in d["device_traces"] for e in t)
            candidates.append((not has_oom, os.path.getsize(f), f))
            if len(candidates) >= 3 * limit:
                break
        for _, _, f in sorted(candidates)[:limit]:
            d = load(memsnap, f, tmp)
            for tag, path in derive(memsnap, f, d, tmp):
                name = f"{os.path.basename(f)[:40]}.{tag}"
                bad += check_variant(memsnap, name, path, tmp, signals_only)
                checked += 1
                os.remove(path)
    for b in bad:
        print(b)
    print(f"{len(bad)} problems over {checked} variants")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
