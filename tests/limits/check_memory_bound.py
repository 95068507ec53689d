#!/usr/bin/env python3
"""Hostile inputs keep memsnap's memory proportional to the file size (issue: hardening).

Each input is a few MB of the densest shapes we know for making a decoder allocate: values piled on
the pickle stack, memoized containers, empty dicts, deep JSON nesting, JSON arrays of tiny objects.
memsnap must refuse them (exit 2) or read them (exit 0) with a peak RSS of at most
16 x the file size + 64 MiB, and never crash. A file that repeats one trace entry through a million
memo references costs no more than a million distinct entries (issue 33). Usage:
check_memory_bound.py MEMSNAP
"""
import os
import pickle
import sys
import tempfile

MIB = 1 << 20
SIZE = 16 * MIB
SLOPE, BASE = 16, 64 * MIB


def shapes():
    n = SIZE
    p = b"\x80\x04"
    yield "pickle NONE x N (stack)", p + b"N" * n + b"."
    yield "pickle MARK x N", p + b"(" * n + b"."
    yield "pickle EMPTY_DICT x N", p + b"}" * n + b"."
    yield "pickle EMPTY_LIST then DUP x N", p + b"]" + b"2" * n + b"."
    yield "pickle EMPTY_LIST MEMOIZE x N", p + b"]\x94" * (n // 2) + b"."
    yield "pickle EMPTY_LIST MEMOIZE POP x N", p + b"]\x940" * (n // 3) + b"N."
    yield "pickle EMPTY_DICT MEMOIZE POP x N", p + b"}\x940" * (n // 3) + b"N."
    yield "pickle empty str MEMOIZE POP x N", p + b"\x8c\x00\x940" * (n // 4) + b"N."
    # A list of minimal trace entries: 'action' and 'alloc' memoized once, then GETs.
    head = p + b"}(\x8c\x08segments]\x8c\x0ddevice_traces](](" \
        + b"}(\x8c\x06action\x94\x8c\x05alloc\x94u"
    yield "pickle minimal trace entries", head + b"}(h\x00h\x01u" * (n // 7) + b"eeu."
    yield "JSON zeros", b"[" + b"0," * (n // 2) + b"0]"
    yield "JSON empty objects", b"[" + b"{}," * (n // 3) + b"{}]"
    yield "JSON minimal segments", b"[" + b'{"total_size":0},' * (n // 17) + b'{"total_size":0}]'
    yield "JSON nesting", b"[" * (n // 2) + b"]" * (n // 2)
    yield "JSON minimal trace entries", b'{"device_traces":[[' + b'{"action":"alloc"},' * (n // 19) \
        + b'{"action":"alloc"}]]}'


def run(memsnap, args, tmp):
    """Runs memsnap with `args`: (exit code, peak RSS in bytes, stderr)."""
    err_path = os.path.join(tmp, "stderr")
    pid = os.fork()
    if pid == 0:
        devnull = os.open(os.devnull, os.O_WRONLY)
        err = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(devnull, 1)
        os.dup2(err, 2)
        os.execv(memsnap, [memsnap] + args)
    _, status, usage = os.wait4(pid, 0)
    with open(err_path, errors="replace") as f:
        err = f.read()
    return os.waitstatus_to_exitcode(status), usage.ru_maxrss * 1024, err


def frames_of(data):
    """The offsets of a protocol 4 pickle's FRAME headers, each found from the one before, that
    the parallel decoding's workers step over: between trace entries (an EMPTY_DICT follows)."""
    out, at = [], 2
    while at + 9 <= len(data) and data[at] == 0x95:
        if at + 9 < len(data) and data[at + 9] == ord("}"):
            out.append(at)
        at += 9 + int.from_bytes(data[at + 1:at + 9], "little")
    return out


def repeated_entries(memsnap, tmp):
    """Issue 33: one trace entry repeated by a million memo references (what Python's pickler
    writes for [e] * N; never PyTorch) must cost no more than a million distinct entries, and
    --strict refuses it naming the reference's offset. Then a FRAME whose length runs past the
    end, in the distinct file (24 MB: decoded on several threads), is refused on 1 and 2 threads.
    Yields (ok, line) per check."""
    n = 10**6
    rep_path, dis_path = os.path.join(tmp, "repeated"), os.path.join(tmp, "distinct")
    # Made in a child process: a forked memsnap's peak RSS counts this process's memory until its
    # exec, and the million dicts would dwarf what is measured.
    pid = os.fork()
    if pid == 0:
        entry = {"action": "alloc", "addr": 2**30, "size": 512, "stream": 0}
        with open(rep_path, "wb") as f:
            pickle.dump({"segments": [], "device_traces": [[entry] * n]}, f, 4)
        with open(dis_path, "wb") as f:
            pickle.dump({"segments": [], "device_traces": [[
                {"action": "alloc" if i % 2 == 0 else "free_completed",
                 "addr": 2**30 + 512 * (i // 2), "size": 512, "stream": 0} for i in range(n)]]},
                f, 4)
        os._exit(0)
    os.waitpid(pid, 0)
    rep_code, rep_rss, _ = run(memsnap, ["summary", rep_path], tmp)
    dis_code, dis_rss, _ = run(memsnap, ["summary", dis_path], tmp)
    yield (rep_code == 0 and dis_code == 0 and rep_rss <= dis_rss,
           f"one entry x {n} memo GETs: exit {rep_code}, peak RSS {rep_rss / MIB:.1f} MiB; {n} "
           f"distinct entries: exit {dis_code}, {dis_rss / MIB:.1f} MiB (must be no more)")
    code, _, err = run(memsnap, ["--strict", "summary", rep_path], tmp)
    yield (code == 2 and f"{rep_path}: --strict:" in err and "re-uses trace entry #0" in err,
           f"the same under --strict: exit {code}, {err.strip()[:160]}")
    with open(dis_path, "rb") as f:
        distinct = f.read()
    at = frames_of(distinct)[-2]  # near the end: the workers take chunks from the back
    for length in (10**12, 2**64 - 1):
        bad = bytearray(distinct)
        bad[at + 1:at + 9] = length.to_bytes(8, "little")
        with open(dis_path, "wb") as f:
            f.write(bad)
        for threads in ("1", "2"):
            code, _, err = run(memsnap, ["summary", "--threads", threads, dis_path], tmp)
            want = f"offset {at}: FRAME of {length} bytes runs past the end of the input"
            yield (code == 2 and want in err,
                   f"FRAME of {length} bytes at offset {at}, --threads {threads}: exit {code}, "
                   f"{err.strip()[:160]}")


def main():
    memsnap = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for ok, line in repeated_entries(memsnap, tmp):
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {line}")
        for name, data in shapes():
            path = os.path.join(tmp, "input")
            with open(path, "wb") as f:
                f.write(data)
            code, rss, _ = run(memsnap, ["summary", path], tmp)
            limit = SLOPE * len(data) + BASE
            ok = code in (0, 2) and rss <= limit
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:40s} {len(data) / MIB:5.1f} MiB  exit {code:3d}"
                  f"  peak RSS {rss / MIB:6.1f} MiB ({rss / len(data):4.1f}x, limit "
                  f"{limit / MIB:.0f} MiB)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
