"""The Python module (python/, issue 34): the same answers as the CLI, from a path, bytes or the
snapshot dict itself; typed results, pandas, HTML; errors; the GIL released while reading."""
import copy
import gzip
import json
import os
import pickle
import subprocess
import threading
import time

import pytest

import memsnap
from conftest import fixture


def differences(got, want, path=""):
    """Field by field: the key paths where two JSON values differ."""
    if isinstance(got, dict) and isinstance(want, dict):
        out = []
        for k in list(want) + [k for k in got if k not in want]:
            if k not in got or k not in want:
                out.append(f"{path}/{k}: only in {'CLI' if k in want else 'Python'}")
            else:
                out += differences(got[k], want[k], f"{path}/{k}")
        return out
    if isinstance(got, list) and isinstance(want, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items, the CLI {len(want)}"]
        out = []
        for i, (g, w) in enumerate(zip(got, want)):
            out += differences(g, w, f"{path}/{i}")
        return out
    return [] if got == want and type(got) == type(want) else [f"{path}: {got!r} != {want!r}"]


def same(result, cli_output):
    diffs = differences(result.to_dict(), cli_output)
    assert not diffs, "\n".join(diffs[:20])


# What each method runs, and the command line that must print the same JSON.
METHODS = [
    ("summary", lambda s: s.summary(), ["summary"]),
    ("top", lambda s: s.top(), ["top", "--at", "peak", "--by", "site"]),
    ("top_category_end", lambda s: s.top(at="end", by="category"),
     ["top", "--at", "end", "--by", "category"]),
    ("timeline", lambda s: s.timeline(), ["timeline"]),
    ("blocks", lambda s: s.blocks(), ["blocks"]),
    ("frag", lambda s: s.frag(), ["frag"]),
    ("oom", lambda s: s.oom(device_memory="1GiB"), ["oom", "--device-memory", "1GiB"]),
    ("replay", lambda s: s.replay(conf="expandable_segments:True"),
     ["replay", "--conf", "expandable_segments:True"]),
]


def without_source(d):
    """A result without the fields that name the input or its container (a dict has neither a
    file name nor a file format)."""
    d = copy.deepcopy(d)

    def strip(x):
        if isinstance(x, dict):
            for k in ("file", "format", "path", "before", "after", "source", "file_bytes"):
                x.pop(k, None)
            for v in x.values():
                strip(v)
        elif isinstance(x, list):
            for v in x:
                strip(v)

    strip(d)
    return d


@pytest.mark.parametrize("name,method,args", METHODS, ids=[m[0] for m in METHODS])
def test_every_method_prints_what_the_cli_prints_with_json(name, method, args, cli_json):
    path = fixture("timeline_training.json")
    same(method(memsnap.load(path)), cli_json(args[0], "--json", *args[1:], path))


def test_str_of_a_result_is_the_cli_text(cli):
    path = fixture("summary_basic.json")
    code, out, _ = cli("summary", path)
    assert code == 0
    assert str(memsnap.load(path).summary()) == out


def test_diff_and_check_print_what_the_cli_prints(cli_json):
    base, new = fixture("check_base.json"), fixture("check_new.json")
    same(memsnap.diff(base, new), cli_json("diff", "--json", base, new))
    same(memsnap.diff(memsnap.load(base), memsnap.load(new)),
         cli_json("diff", "--json", base, new))
    same(memsnap.check(base, fits="80GiB"), cli_json("check", "--json", "--fits", "80GiB", base))


def test_a_failed_check_raises_check_failed_with_the_cli_failure_text(cli):
    base, new = fixture("check_base.json"), fixture("check_new.json")
    code, text, _ = cli("check", "--baseline", base, "--tolerance", "5%", new)
    assert code == 1
    with pytest.raises(memsnap.CheckFailed) as failed:
        memsnap.check(new, baseline=base, tolerance="5%")
    assert str(failed.value) == text.rstrip("\n")
    assert failed.value.result.passed is False
    # The same gate from snapshots in memory, one of them a dict.
    with open(new) as f:
        as_dict = json.load(f)
    with pytest.raises(memsnap.CheckFailed):
        memsnap.check(as_dict, baseline=memsnap.load(base), tolerance="5%")


def test_a_fits_failure_carries_the_need_frag_and_oom_give(cli_json):
    # One answer to "does it fit?" (docs/figures.md): the run's need, from each start state.
    path = fixture("oom_fragmentation.json")
    for start in ("recorded", "cold"):
        with pytest.raises(memsnap.CheckFailed) as failed:
            memsnap.check(path, fits="30MiB", start=start)
        row = next(c for c in failed.value.result.to_dict()["checks"] if c["metric"] == "fits")
        frag = cli_json("frag", "--json", "--start", start, path)
        need = frag["answers"][0]["fix"]["recorded_fits_on_bytes"]
        assert row["needs"] == row["value"] == need
        assert row["over"] == need - 30 * 2**20
        oom = cli_json("oom", "--json", "--device-memory", "30MiB", "--start", start, path)
        assert oom["devices"][0]["remedies"][0]["fits_on_bytes"] == need


def test_the_snapshot_dict_gives_what_its_file_gives():
    for name in ("timeline_training.json", "summary_basic.json", "oom_fragmentation.json",
                 "timeline_legacy_2_0.json", "frag_fix.json", "timeline_streams.json"):
        path = fixture(name)
        with open(path) as f:
            as_dict = json.load(f)
        from_file, from_dict = memsnap.load(path), memsnap.load(as_dict)
        assert from_dict.name == "<dict>" and from_file.events == from_dict.events
        for label, method, _ in METHODS:
            assert without_source(method(from_dict).to_dict()) == \
                without_source(method(from_file).to_dict()), f"{name}: {label}"


def test_bytes_gzip_and_paths_read_alike(tmp_path):
    path = fixture("timeline_training.json")
    with open(path, "rb") as f:
        raw = f.read()
    gz = tmp_path / "snap.json.gz"
    gz.write_bytes(gzip.compress(raw))
    want = without_source(memsnap.load(path).top().to_dict())
    assert without_source(memsnap.load(raw).top().to_dict()) == want
    assert without_source(memsnap.load(gz).top().to_dict()) == want  # a pathlib.Path
    assert without_source(memsnap.load(gzip.compress(raw), name="x").top().to_dict()) == want


def test_a_pickled_dict_reads_as_its_pickle(tmp_path):
    with open(fixture("timeline_training.json")) as f:
        as_dict = json.load(f)
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(as_dict, protocol=4))
    assert without_source(memsnap.load(as_dict).summary().to_dict()) == \
        without_source(memsnap.load(path).summary().to_dict())


def test_results_are_typed_objects_with_the_json_fields():
    s = memsnap.load(fixture("timeline_training.json"))
    top = s.top()
    assert isinstance(top, memsnap.Top)
    assert top.by == "site" and top.at == "peak"
    assert top.total_bytes == top["total_bytes"] > 0
    assert isinstance(top.rows, memsnap.Table) and top.rows[0].bytes > 0
    assert "rows" in top.fields and "total_bytes" in dir(top)
    summary = s.summary()
    assert isinstance(summary, memsnap.Summary)
    assert summary.devices[0].device == 0
    with pytest.raises(AttributeError):
        summary.no_such_field


def test_each_device_says_its_workload_with_its_evidence():
    # A training loop with backward and optimizer frames (docs/attribution.md, "Workload").
    s = memsnap.load(fixture("attribution_training.json"))
    for result in (s.summary(), s.top()):
        w = result.devices[0].workload
        assert w.kind == "training"
        assert w.backward > 0 and w.stacks >= w.backward
        assert w.evidence.startswith("backward in ")


def test_tables_convert_to_records_and_pandas():
    top = memsnap.load(fixture("timeline_training.json")).top(top=0)
    records = top.to_records()
    assert records == top.to_dict()["rows"] and isinstance(records[0], dict)
    pandas = pytest.importorskip("pandas")
    frame = top.to_pandas()
    assert isinstance(frame, pandas.DataFrame)
    assert list(frame["bytes"]) == [r["bytes"] for r in records]
    assert len(top.rows.to_pandas()) == len(records)
    blocks = memsnap.load(fixture("timeline_training.json")).blocks().to_pandas()
    assert len(blocks) > 0 and "size" in "".join(blocks.columns)


def test_results_and_the_snapshot_display_as_html():
    s = memsnap.load(fixture("timeline_training.json"))
    table = s.top()._repr_html_()
    assert "<table>" in table and "<th>bytes</th>" in table
    assert s.top().rows._repr_html_().startswith("<table>")
    page = s._repr_html_()
    assert page.startswith("<iframe srcdoc=") and "&lt;html" in page.lower()


def test_report_writes_the_page(tmp_path, cli):
    s = memsnap.load(fixture("report_basic.json"))
    out = tmp_path / "r.html"
    assert s.report(out) == str(out)
    assert out.read_text().lstrip().lower().startswith("<!doctype html")
    # An output is never written over an input, as in the CLI.
    path = tmp_path / "snap.json"
    path.write_bytes(open(fixture("report_basic.json"), "rb").read())
    with pytest.raises(memsnap.InputError, match="refusing"):
        memsnap.load(path).report(path)
    assert json.loads(path.read_text())  # untouched


def test_unusable_input_raises_input_error_with_the_cli_message(tmp_path, cli):
    missing = tmp_path / "missing.pickle"
    with pytest.raises(memsnap.InputError, match="missing.pickle"):
        memsnap.load(missing)
    bad = tmp_path / "bad.json"
    bad.write_text('{"segments": [{"total_size": "x"}]}')
    code, _, err = cli("summary", bad)
    assert code == 2
    with pytest.raises(memsnap.InputError) as e:
        memsnap.load(bad)
    assert str(e.value) in err and "/segments/0/total_size" in str(e.value)
    with pytest.raises(memsnap.InputError, match="not a memory snapshot"):
        memsnap.load(b"hello")
    with pytest.raises(memsnap.InputError, match="--top"):
        memsnap.load(fixture("summary_basic.json")).top(top=-1)
    for wrong in (None, 42, 3.5, True, object()):
        with pytest.raises(memsnap.InputError, match="expected a path, bytes or a snapshot dict"):
            memsnap.load(wrong)


def pickled(name):
    with open(fixture(name)) as f:
        return pickle.dumps(json.load(f), protocol=4)


def test_a_path_is_read_from_disk_even_when_a_loaded_snapshot_has_its_name(tmp_path):
    # A snapshot loaded from a file that is then rewritten: the object is what was read, the path
    # is what the file holds now (issue 54: the path answered with the snapshot in memory).
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickled("check_new.json"))
    loaded = memsnap.load(str(path))
    assert loaded.name == str(path)
    path.write_bytes(pickled("check_base.json"))
    want = memsnap.diff(pickled("check_new.json"), pickled("check_base.json"))
    for other in (str(path), path):
        got = memsnap.diff(loaded, other)
        assert without_source(got.to_dict()) == without_source(want.to_dict())
        assert without_source(got.to_dict()) != \
            without_source(memsnap.diff(loaded, loaded).to_dict())
    # The gate too: the loaded (new) snapshot against the file's (base) content grows.
    with pytest.raises(memsnap.CheckFailed):
        memsnap.check(loaded, baseline=str(path))
    memsnap.check(loaded, baseline=loaded)  # the object itself: no growth
    # A path that names nothing is refused, though a loaded snapshot bears that name.
    named = memsnap.load(pickled("check_new.json"), name="missing.pickle")
    with pytest.raises(memsnap.InputError, match="missing.pickle"):
        memsnap.diff(named, str(tmp_path / "missing.pickle"))
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(memsnap.InputError, match="missing.pickle"):
            memsnap.diff(named, "missing.pickle")
    finally:
        os.chdir(cwd)


def test_a_name_is_a_label_never_a_path(tmp_path):
    # `a` is a snapshot on disk; the dict named "a\0b" must not be answered from it.
    with open(fixture("summary_basic.json")) as f:
        as_dict = json.load(f)
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        (tmp_path / "a").write_bytes(pickled("check_new.json"))
        s = memsnap.load(as_dict, name="a\0b")
        assert s.name == "a\0b"
        got = s.summary()
        assert got.file == "a\0b"
        assert without_source(got.to_dict()) == without_source(memsnap.load(as_dict).summary()
                                                                .to_dict())
        assert without_source(got.to_dict()) != without_source(memsnap.load("a").summary()
                                                                .to_dict())
        # A path with a NUL byte names no file: refused, not cut short at the NUL.
        for call in (lambda: memsnap.load("a\0b"), lambda: memsnap.diff(s, "a\0b"),
                     lambda: memsnap.check(s, baseline="a\0b")):
            with pytest.raises(memsnap.InputError, match="NUL"):
                call()
    finally:
        os.chdir(cwd)


def test_threads_are_bounded_as_the_cli_bounds_them():
    path = fixture("timeline_training.json")
    for threads in (10 ** 6, 4097, -1, 2 ** 70, 1.5, "8"):
        with pytest.raises(memsnap.InputError, match="threads"):
            memsnap.load(path, threads=threads)
        with pytest.raises(memsnap.InputError, match="threads"):
            memsnap.load(pickled("timeline_training.json"), threads=threads)
    assert memsnap.load(path, threads=1).events == memsnap.load(path).events


@pytest.mark.parametrize("snapshot,message", [
    ({"segments": 3}, "<dict>: /segments: expected list, got int"),
    ({"segments": [{"total_size": "x"}]}, "<dict>: /segments/0/total_size: expected int, got str"),
    ({"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": [1]}]]},
     "<dict>: /device_traces/0/0/size: expected int, got list"),
    ({"segments": [], "device_traces": [[{"addr": 1}]]},
     "<dict>: /device_traces/0/0: trace entry has no 'action'"),
    ({"segments": [], "device_traces": [[{"action": "alloc", "frames": [7]}]]},
     "<dict>: /device_traces/0/0/frames/0: expected a frame dict, got int"),
    ({"segments": [{"total_size": 4, "blocks": [{"size": 4}]}]},
     "<dict>: /segments/0/blocks/0: block has no 'state'"),
    ({"segments": [], "device_traces": [[{"action": "alloc", "addr": 2 ** 80}]]},
     "<dict>: /device_traces/0/0/addr: integer does not fit in 64 bits"),
    ({"hello": 1}, "<dict>: /: the dict is not a snapshot"),
    ([1, 2], "<dict>: /0: expected dict, got int"),
])
def test_a_malformed_dict_is_an_error_naming_the_key_path(snapshot, message):
    with pytest.raises(memsnap.InputError) as e:
        memsnap.load(snapshot)
    assert str(e.value).startswith(message), str(e.value)


def test_a_dict_that_refers_to_itself_is_read_without_recursing():
    frames = []
    frames.append({"filename": "a.py", "line": 1, "name": "f", "self": frames})
    d = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512,
                                             "stream": 0, "time_us": 1, "frames": frames}]]}
    d["device_traces"][0][0]["user_metadata"] = d  # rendered as text, depth-bounded
    s = memsnap.load(d)
    assert s.events == 1 and s.summary().trace_entries == 1


def test_record_reads_the_snapshot_of_the_block_from_memory():
    with open(fixture("timeline_training.json")) as f:
        recorded = json.load(f)
    calls = []

    class FakeMemory:  # torch.cuda.memory's two functions
        @staticmethod
        def _record_memory_history(**kwargs):
            calls.append(kwargs)

        @staticmethod
        def _snapshot():
            return recorded

    with memsnap.record(memory=FakeMemory, max_entries=1000) as rec:
        assert rec.snapshot is None
    assert calls == [{"max_entries": 1000}, {"enabled": None}]
    assert rec.snapshot.name == "<recorded>"
    assert rec.snapshot.summary().trace_entries == memsnap.load(recorded).events


def test_two_threads_read_at_once_with_the_gil_released(tmp_path):
    gen = os.environ.get("MEMSNAP_GEN")
    if not gen or not os.path.exists(gen):
        pytest.skip("MEMSNAP_GEN (build/bench/memsnap_gen) is not built")
    path = tmp_path / "big.pickle"
    subprocess.run([gen, "--events", "1000000", "--seed", "3", "-o", str(path)], check=True,
                   capture_output=True)
    want = memsnap.load(path, threads=1).summary().to_dict()

    # Two threads read at once (one decoding thread each, so a read lasts a while) while this one
    # runs Python: with the GIL held through a read, its longest pause would be a whole read.
    def attempt():
        go, results, spans = threading.Event(), [None, None], []

        def read(i):
            go.wait()
            start = time.perf_counter()
            results[i] = memsnap.load(path, threads=1)
            spans.append(time.perf_counter() - start)

        readers = [threading.Thread(target=read, args=(i,)) for i in range(2)]
        for t in readers:
            t.start()
        longest, last = 0.0, time.perf_counter()
        go.set()
        while any(t.is_alive() for t in readers):
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        for t in readers:
            t.join()
        return longest, min(spans), results

    for _ in range(3):  # a loaded machine may pause this thread on its own
        longest, span, results = attempt()
        if longest < span / 2:
            break
    assert longest < span / 2, f"this thread paused {longest:.3f} s during a {span:.3f} s read"
    for r in results:
        assert r.summary().to_dict() == want


def test_two_threads_with_categories_of_their_own_each_get_their_own():
    s = memsnap.load(fixture("attribution_training.json"))
    adam, fwd = {"adam": r"optim/adam\.py"}, ["fwd=model/net\\.py"]

    def kinds(result):
        return [row["category"] for row in result.to_dict()["rows"]]

    want_a = s.top(by="category", categories=adam).to_dict()
    want_b = s.top(by="category", categories=fwd).to_dict()
    assert "adam" in kinds(s.top(by="category", categories=adam))
    assert "fwd" not in kinds(s.top(by="category", categories=adam))
    assert "fwd" in kinds(s.top(by="category", categories=fwd))
    assert "adam" not in kinds(s.top(by="category", categories=fwd))
    assert not {"adam", "fwd"} & set(kinds(s.top(by="category")))
    # At once: the GIL is released while each command runs, so the two run side by side.
    wrong = []

    def run(categories, want):
        for _ in range(25):
            got = s.top(by="category", categories=categories).to_dict()
            if got != want:
                wrong.append([row["category"] for row in got["rows"]])

    threads = [threading.Thread(target=run, args=(adam, want_a)),
               threading.Thread(target=run, args=(fwd, want_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, f"{len(wrong)} answers in the other thread's categories: {wrong[:3]}"


@pytest.mark.corpus
def test_every_method_on_the_corpus_equals_the_cli_json(corpus, cli):
    for path in corpus:
        s = memsnap.load(path)
        for label, method, args in METHODS:
            code, out, err = cli(args[0], "--json", *args[1:], path)
            if code == 2:  # the CLI refuses it (oom of a snapshot without a trace): so must Python
                with pytest.raises(memsnap.InputError) as e:
                    method(s)
                assert str(e.value) in err, f"{path}: {label}"
                continue
            same(method(s), json.loads(out))


@pytest.mark.corpus
def test_the_corpus_read_as_dicts_equals_the_files(corpus):
    for path in corpus:
        if not path.endswith((".pickle", ".pkl")):
            continue
        with open(path, "rb") as f:
            as_dict = pickle.load(f)  # the corpus is plain data: dicts, lists, ints, strs
        from_file, from_dict = memsnap.load(path), memsnap.load(as_dict)
        for label, method, _ in METHODS[:5]:
            assert without_source(method(from_dict).to_dict()) == \
                without_source(method(from_file).to_dict()), f"{path}: {label}"
