#!/usr/bin/env python3
"""One truth per figure: the same figure asked through every command, and read from the report
page's embedded data, must be the same number (docs/figures.md).

  check_consistency.py MEMSNAP FILE_OR_DIR... [--expect-fail]

For each snapshot it compares, per device with a trace:
  - the live peak and its event: summary, top --json, timeline --json, the page;
  - the reserved peak and its event: summary, frag --json, timeline --json, the page;
  - the kinds of memory live at the peak: summary's categories_at_peak, top --by category, the
    category breakdown of top's rows, timeline --json's categories at the peak, and the category
    of each lifetime live then in `export --format csv`;
  - the category of every lifetime: `export --format perfetto --top 0`'s slices against the CSV;
and, for the file, from each start state (--start recorded and cold), the one answer to "does it
fit?": frag's fix line, oom's remedies, check --fits and the page give each device the same need;
`check --fits` passes at it and fails 1 MiB below it, and on a card at 60% of the live peak fails
with reason demand and that need. A directory is read file by
file (files that are not snapshots are left out, as the commands do). Prints one line per
disagreement and exits 1 when there is any; --expect-fail inverts the exit code, so that the test
of the test (a deliberately broken path) can be run the same way.
"""
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile


def run(memsnap, *args):
    p = subprocess.run([memsnap, *args], capture_output=True, text=True, timeout=600)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"memsnap {' '.join(args[:2])}: exit {p.returncode}: "
                           f"{p.stderr.strip()[:300]}")
    return p.stdout


def page_data(memsnap, path, tmp):
    out = os.path.join(tmp, "page.html")
    run(memsnap, "report", path, "-o", out)
    text = open(out, encoding="utf-8").read()
    m = re.search(r'<script type="application/json" id="memsnap-data">(.*?)</script>', text, re.S)
    if not m:
        raise RuntimeError("the page embeds no data")
    return json.loads(m.group(1).replace("<\\/", "</"))


def nonzero(d):
    return {k: v for k, v in d.items() if v}


def fits_row(memsnap, path, card, start):
    ck = json.loads(run(memsnap, "check", "--fits", str(card), "--start", start, "--json", path))
    return next(c for c in ck["checks"] if c.get("metric") == "fits")


def check_fits(memsnap, path, name, devices, page):
    """One answer to "does it fit?" (docs/figures.md, "Fits on, needs, over"), from each start
    state: frag's fix line, oom's remedies, check --fits and the page give each device the same
    need; check passes at it and fails 1 MiB below it; on a card under the live peak it fails with
    reason demand and needs at least that peak."""
    bad = []
    mib = 1 << 20
    live = max(p["live_bytes"] for p in devices.values())
    for start in ("recorded", "cold"):
        frag = json.loads(run(memsnap, "frag", "--json", "--start", start, path))
        needs = {}
        for a in frag.get("answers", []):
            fix = a.get("fix") or {}
            if fix.get("replayed") and fix.get("recorded_fits_on_bytes"):
                needs[a["device"]] = fix["recorded_fits_on_bytes"]
        if not needs:
            continue
        top = max(needs.values())
        card = int(live * 0.6)
        if card >= mib:
            c = fits_row(memsnap, path, card, start)
            if c["passed"]:
                bad.append(f"{name}: check --fits {card} --start {start} passes under the live "
                           f"peak {live}")
            else:
                if c.get("reason") != "demand":
                    bad.append(f"{name}: check --fits {card} --start {start} says "
                               f"{c.get('reason')} under the live peak {live}")
                if c["value"] != top or c.get("over") != c["value"] - c["limit"]:
                    bad.append(f"{name}: check --fits {card} --start {start} needs {c['value']} "
                               f"(over {c.get('over')}), frag needs {top}")
            oom = json.loads(run(memsnap, "oom", "--device-memory", str(card), "--start", start,
                                 "--json", path))
            for d in oom.get("devices", []):
                got = (d.get("remedies") or [{}])[0].get("fits_on_bytes")
                if got is not None and got != needs.get(d["device"]):
                    bad.append(f"{name}: device {d['device']} --start {start}: oom needs {got}, "
                               f"frag {needs.get(d['device'])}")
        if not fits_row(memsnap, path, top, start)["passed"]:
            bad.append(f"{name}: check --fits {top} --start {start} fails at the need frag gives")
        if fits_row(memsnap, path, top - mib, start)["passed"]:
            bad.append(f"{name}: check --fits {top - mib} --start {start} passes 1 MiB under the "
                       f"need frag gives")
        if start == "recorded":
            for d in page.get("devices", []):
                n = d.get("needs")
                if n is not None and n["bytes"] != needs.get(d["device"]):
                    bad.append(f"{name}: device {d['device']}: the page needs {n['bytes']}, frag "
                               f"{needs.get(d['device'])}")
    return bad


def check_file(memsnap, path, tmp):
    bad = []
    name = os.path.basename(path)
    summary = json.loads(run(memsnap, "summary", "--json", path))
    devices = {d["device"]: d["peaks"] for d in summary.get("devices", []) if d.get("peaks")}
    if not devices:
        return bad  # no trace: nothing happens over time

    def differ(what, dev, got, want):
        if got != want:
            bad.append(f"{name} device {dev}: {what}: {got} != summary's {want}")

    # Live peak.
    top = json.loads(run(memsnap, "top", "--json", path))
    for d in top.get("devices", []):
        if d["device"] in devices:
            p = devices[d["device"]]
            differ("top's peak (bytes, event)", d["device"], (d["live_bytes"], d["event_index"]),
                   (p["live_bytes"], p["live_event"]))
    # Reserved peak: frag, timeline.
    frag = json.loads(run(memsnap, "frag", "--json", "--no-replay", path))
    for pk in frag.get("peaks", []):
        if pk["device"] in devices:
            p, r = devices[pk["device"]], pk["peak_reserved"]
            differ("frag's reserved peak (bytes, event)", pk["device"],
                   (r["reserved_bytes"], r["event_index"]), (p["reserved_bytes"], p["reserved_event"]))
    timeline = json.loads(run(memsnap, "timeline", "--json", path))
    timeline_kinds = {}
    for d in timeline.get("devices", []):
        if d["device"] not in devices:
            continue
        p = devices[d["device"]]
        differ("timeline's live peak (bytes, event)", d["device"],
               (d["peak_bytes"], d["peak_event_index"]), (p["live_bytes"], p["live_event"]))
        differ("timeline's reserved peak (bytes, event)", d["device"],
               (d["peak_reserved_bytes"], d.get("peak_reserved_event_index")),
               (p["reserved_bytes"], p["reserved_event"]))
        for k, v in ((d.get("categories") or {}).get("peak") or {}).items():
            timeline_kinds[k] = timeline_kinds.get(k, 0) + v
    # The page.
    page = page_data(memsnap, path, tmp)
    for d in page.get("devices", []):
        if d["device"] not in devices:
            continue
        p, q = devices[d["device"]], d.get("peak") or {}
        differ("the page's live peak (bytes, event)", d["device"], (q.get("bytes"), q.get("event")),
               (p["live_bytes"], p["live_event"]))
        differ("the page's reserved peak (bytes, event)", d["device"],
               (q.get("reserved_bytes"), q.get("reserved_event")),
               (p["reserved_bytes"], p["reserved_event"]))
    # Kinds of memory at the peak: summary, top --by category, and top's rows.
    want = {}
    for c in summary.get("categories_at_peak", []):
        for k, v in c["categories"].items():
            want[k] = want.get(k, 0) + v
    by_cat = json.loads(run(memsnap, "top", "--by", "category", "--json", path))
    got = {}
    for r in by_cat.get("rows", []):
        got[r["key"]] = got.get(r["key"], 0) + r["bytes"]
    if nonzero(got) != nonzero(want):
        bad.append(f"{name}: top --by category {nonzero(got)} != summary's categories at the "
                   f"peak {nonzero(want)}")
    if nonzero(timeline_kinds) != nonzero(want):
        bad.append(f"{name}: timeline's categories at the peak {nonzero(timeline_kinds)} != "
                   f"summary's {nonzero(want)}")
    rows = {}
    for r in top.get("rows", []):
        for k, v in (r.get("categories") or {}).items():
            rows[k] = rows.get(k, 0) + v
    if rows and nonzero(rows) != nonzero(want):
        bad.append(f"{name}: the categories of top's rows {nonzero(rows)} != summary's "
                   f"{nonzero(want)}")
    # The exports: the kind of each lifetime live at top's moment, as the CSV names it, adds up to
    # top --by category; and the Perfetto trace gives every lifetime the CSV's kind.
    moments = {d["device"]: d.get("event_index") for d in by_cat.get("devices", [])}
    lifetimes = list(csv.DictReader(io.StringIO(run(memsnap, "export", "-f", "csv", path))))
    exported = {}
    for r in lifetimes:
        dev = int(r["device"])
        if dev not in moments:
            continue
        e = moments[dev]
        alloc, free = r["alloc_event"], r["free_completed_event"]
        if e is None or e < 0:  # the file's state (no trace) or the start: what was there
            live = alloc == "" and (free == "" if e is None else True)
        else:
            live = (alloc == "" or int(alloc) <= e) and (free == "" or int(free) > e)
        if live:
            exported[r["category"]] = exported.get(r["category"], 0) + int(r["requested_bytes"])
    if nonzero(exported) != nonzero(got):
        bad.append(f"{name}: export --format csv's categories at the peak {nonzero(exported)} != "
                   f"top --by category's {nonzero(got)}")
    trace = json.loads(run(memsnap, "export", "-f", "perfetto", "--top", "0", path))
    sliced = {}
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") == "allocation":
            key = (e["pid"] - 1, e["args"]["category"])
            sliced[key] = sliced.get(key, 0) + e["args"]["requested_bytes"]
    traced = {dev for dev, _ in sliced}
    from_csv = {}
    for r in lifetimes:
        if int(r["device"]) in traced:
            key = (int(r["device"]), r["category"])
            from_csv[key] = from_csv.get(key, 0) + int(r["requested_bytes"])
    if sliced != from_csv:
        bad.append(f"{name}: export --format perfetto's categories {sorted(sliced.items())} != "
                   f"the CSV's {sorted(from_csv.items())}")
    bad += check_fits(memsnap, path, name, devices, page)
    return bad


def snapshot_files(inputs, pattern=r"\.(pickle|pkl|json|html|gz)$"):
    """The files FILE_OR_DIR arguments name (a directory file by file, what is not a snapshot left
    out), and None; or None and the exit code when one is absent: the corpus is skipped without it
    (77, ctest's SKIP_RETURN_CODE), never passed, and fails under MEMSNAP_REQUIRE_CORPUS=1."""
    missing = [i for i in inputs if not os.path.exists(i)]
    if missing:
        if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
            print(f"FAIL: {missing[0]} is absent and MEMSNAP_REQUIRE_CORPUS=1")
            return None, 1
        print(f"skipped: {missing[0]} is absent")
        return None, 77
    files = []
    for i in inputs:
        if os.path.isdir(i):
            files += sorted(os.path.join(i, f) for f in os.listdir(i)
                            if re.search(pattern, f) and f != "manifest.json")
        else:
            files.append(i)
    return files, None


def main():
    args = [a for a in sys.argv[1:] if a != "--expect-fail"]
    expect_fail = "--expect-fail" in sys.argv
    memsnap, inputs = args[0], args[1:]
    files, code = snapshot_files(inputs)
    if files is None:
        return code
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            try:
                bad += check_file(memsnap, f, tmp)
            except Exception as e:  # an unreadable output is a disagreement too
                bad.append(f"{os.path.basename(f)}: {e}")
    for b in bad:
        print(b)
    print(f"{len(bad)} disagreements over {len(files)} files")
    failed = bool(bad)
    return 0 if failed == expect_fail else 1


if __name__ == "__main__":
    sys.exit(main())
