#!/usr/bin/env python3
"""Hostile inputs keep memsnap's memory proportional to the file size (issue: hardening).

Each input is a few MB of the densest shapes we know for making a decoder allocate: values piled on
the pickle stack, memoized containers, empty dicts, deep JSON nesting, JSON arrays of tiny objects.
memsnap must refuse them (exit 2) or read them (exit 0) with a peak RSS of at most
16 x the file size + 64 MiB, and never crash. Usage: check_memory_bound.py MEMSNAP
"""
import os
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


def main():
    memsnap = sys.argv[1]
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, data in shapes():
            path = os.path.join(tmp, "input")
            with open(path, "wb") as f:
                f.write(data)
            pid = os.fork()
            if pid == 0:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                os.execv(memsnap, [memsnap, "summary", path])
            _, status, usage = os.wait4(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            rss = usage.ru_maxrss * 1024
            limit = SLOPE * len(data) + BASE
            ok = code in (0, 2) and rss <= limit
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name:40s} {len(data) / MIB:5.1f} MiB  exit {code:3d}"
                  f"  peak RSS {rss / MIB:6.1f} MiB ({rss / len(data):4.1f}x, limit "
                  f"{limit / MIB:.0f} MiB)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
