#!/usr/bin/env python3
"""A signal in the middle of a write leaves no temporary file and no half output.

  signals_test.py MEMSNAP MEMSNAP_GEN

A large `convert` to JSON (hundreds of MB, written for about a second) is interrupted by SIGINT,
SIGTERM and SIGHUP once its temporary file holds data: the temporary file must be gone and the
destination absent (or, when it existed, untouched). SIGKILL cannot be caught: the destination
stays whole, and the next write into the same folder removes the dead process's temporary file
(`.memsnap-HEX.tmp`, io/output.h), with or without a `/` in the output's name."""
import glob
import os
import signal
import subprocess
import sys
import tempfile
import time

MEMSNAP, GEN = sys.argv[1], sys.argv[2]
failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def temps(d):
    return glob.glob(os.path.join(d, ".memsnap-*.tmp")) + glob.glob(os.path.join(d, "*.tmp.*"))


def interrupted_write(tmp, src, out, sig, cwd=None):
    """Starts `convert src out`, sends `sig` once its temporary file holds 4 MB; returns the exit
    status and the temporary file (None when none was seen)."""
    before = set(temps(tmp))
    # --force: a rewrite replaces a snapshot (the earlier output).
    proc = subprocess.Popen([MEMSNAP, "-q", "--force", "convert", src, out], cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tmpfile = None
    deadline = time.monotonic() + 20
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            new = [t for t in temps(tmp) if t not in before]
            if new and os.path.getsize(new[0]) > (4 << 20):
                tmpfile = new[0]
                proc.send_signal(sig)
                break
        except OSError:
            pass
        time.sleep(0.002)
    proc.wait()
    return proc.returncode, tmpfile


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "big.pickle")
        subprocess.run([GEN, "--events", "80000", "--seed", "3", "-o", src], check=True,
                       capture_output=True)
        out = os.path.join(tmp, "big.json")
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            name = signal.Signals(sig).name
            rc, tmpfile = interrupted_write(tmp, src, out, sig)
            expect(rc == -sig, f"{name}: memsnap dies of the signal (status {rc})")
            expect(tmpfile is not None and not os.path.exists(tmpfile),
                   f"{name}: the temporary file is removed")
            expect(not os.path.exists(out), f"{name}: no destination written")
            expect(temps(tmp) == [], f"{name}: no temporary file left: {temps(tmp)}")

        # A whole earlier output survives an interrupted rewrite.
        p = subprocess.run([MEMSNAP, "-q", "convert", src, out], capture_output=True)
        expect(p.returncode == 0, "convert writes the whole output")
        whole = os.path.getsize(out)
        rc, _ = interrupted_write(tmp, src, out, signal.SIGTERM)
        expect(rc == -signal.SIGTERM, f"SIGTERM on a rewrite: dies of it (status {rc})")
        expect(os.path.getsize(out) == whole and temps(tmp) == [],
               "SIGTERM on a rewrite: the earlier output is whole, no temporary file")

        # SIGKILL: the temporary file stays; the destination is still the whole earlier output,
        # and the next write into its folder removes the dead process's temporary file, whether
        # the output is named with a `/` or bare.
        small = os.path.join(tmp, "small.pickle")
        subprocess.run([GEN, "--events", "100", "--seed", "3", "-o", small], check=True,
                       capture_output=True)
        for name in (out, "big.json"):
            rc, tmpfile = interrupted_write(tmp, src, name, signal.SIGKILL, cwd=tmp)
            expect(rc == -signal.SIGKILL, f"SIGKILL ({name}): killed (status {rc})")
            expect(tmpfile is not None and os.path.exists(tmpfile),
                   f"SIGKILL ({name}): its temporary file is left (nothing can run)")
            expect(os.path.getsize(out) == whole,
                   f"SIGKILL ({name}): the destination is the whole earlier one")
            p = subprocess.run([MEMSNAP, "-q", "--force", "convert", small, name], cwd=tmp,
                               capture_output=True)
            expect(p.returncode == 0, f"SIGKILL ({name}): the next convert succeeds")
            expect(tmpfile is not None and not os.path.exists(tmpfile) and temps(tmp) == [],
                   f"SIGKILL ({name}): the next write removed the stale temporary file: "
                   f"{temps(tmp)}")
            p = subprocess.run([MEMSNAP, "-q", "--force", "convert", src, out], capture_output=True)
            whole = os.path.getsize(out)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
