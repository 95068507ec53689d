#!/usr/bin/env python3
"""An output never replaces an input, and a failed write says why (docs/design.md, "Errors").

  outputs_test.py MEMSNAP SOURCE_DIR

Every flag that names an output file is pointed at the input snapshot itself, at a hard link and at
a symlink to it: each must exit 2 with a message naming the flag, and leave the input byte for byte
as it was. An existing snapshot that is not an input is refused unless --force; memsnap's own
outputs (a Perfetto trace, the HTML report, CSV) are overwritten without it. Writes to a /dev/full
and to a read-only file system name the path and the system's reason."""
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile

MEMSNAP, SOURCE = sys.argv[1], sys.argv[2]
failures = []


def run(args, cwd, stdin=None):
    return subprocess.run([MEMSNAP] + args, cwd=cwd, capture_output=True, text=True, stdin=stdin)


def expect(cond, what, proc=None):
    if not cond:
        detail = f"\n  exit {proc.returncode}\n  stderr: {proc.stderr.strip()}" if proc else ""
        failures.append(what + detail)
        print("FAIL:", what + detail)


def snapshot_bytes(name):
    data = json.load(open(os.path.join(SOURCE, "testdata", name)))
    return pickle.dumps(data, protocol=4)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        snap = snapshot_bytes("timeline_training.json")
        other = snapshot_bytes("check_base.json")
        path = os.path.join(tmp, "snap.pickle")

        def fresh():
            for name in ("snap.pickle", "hard.pickle", "sym.pickle"):
                if os.path.lexists(os.path.join(tmp, name)):
                    os.remove(os.path.join(tmp, name))
            open(path, "wb").write(snap)
            os.link(path, os.path.join(tmp, "hard.pickle"))
            os.symlink("snap.pickle", os.path.join(tmp, "sym.pickle"))

        # Every command and flag that writes a file: (args with OUT where the output goes, flag).
        writers = [
            (["top", "--folded", "OUT", "snap.pickle"], "--folded"),
            (["diff", "--folded", "OUT", "snap.pickle", "snap.pickle"], "--folded"),
            (["report", "snap.pickle", "-o", "OUT"], "--output"),
            (["export", "-f", "csv", "snap.pickle", "-o", "OUT"], "--output"),
            (["export", "-f", "perfetto", "snap.pickle", "--output", "OUT"], "--output"),
            (["convert", "snap.pickle", "OUT"], "output"),
            (["check", "--max-peak", "1TiB", "--junit", "OUT", "snap.pickle"], "--junit"),
            (["check", "--max-peak", "1TiB", "--markdown", "OUT", "snap.pickle"], "--markdown"),
            (["replay", "--csv", "OUT", "snap.pickle"], "--csv"),
        ]
        for args, flag in writers:
            for out in ("snap.pickle", "hard.pickle", "sym.pickle", "./snap.pickle"):
                fresh()
                a = [out if x == "OUT" else x for x in args]
                p = run(a, tmp)
                # --force does not let an output replace an input either.
                pf = run(["--force"] + a, tmp)
                expect(p.returncode == 2 and pf.returncode == 2,
                       f"{' '.join(a)}: refused with exit 2", p)
                want = f"memsnap {a[0]}: {flag} {out}: {out} is the same file as the input"
                expect(p.stderr.startswith(want), f"{' '.join(a)}: says '{want}'", p)
                expect(open(path, "rb").read() == snap, f"{' '.join(a)}: the input is intact")
                expect(not any(".tmp." in f for f in os.listdir(tmp)),
                       f"{' '.join(a)}: no temporary file left")

        # A directory input stands for its files.
        fresh()
        p = run(["top", "--folded", "snap.pickle", "."], tmp)
        expect(p.returncode == 2 and "is the same file as the input" in p.stderr,
               "top --folded F DIR: F inside DIR is refused", p)

        # `--folded` followed by the snapshot takes it as its output: the message says so.
        fresh()
        p = run(["top", "--at", "end", "--folded", "snap.pickle"], tmp)
        expect(p.returncode == 2 and p.stderr ==
               "memsnap top: --folded snap.pickle: snap.pickle is a memory snapshot; refusing to "
               "overwrite it (use --force)\n", "top --folded SNAP without FILE: names the flag", p)
        expect(open(path, "rb").read() == snap, "top --folded SNAP: the snapshot is intact")

        # An existing snapshot that is not an input: refused without --force, replaced with it.
        for name, data in (("other.pickle", other), ("other.json", None), ("other.pickle.gz", None)):
            target = os.path.join(tmp, name)
            fresh()
            if name == "other.json":
                shutil.copy(os.path.join(SOURCE, "testdata", "check_base.json"), target)
            elif name.endswith(".gz"):
                import gzip
                open(target, "wb").write(gzip.compress(other))
            else:
                open(target, "wb").write(data)
            before = open(target, "rb").read()
            p = run(["export", "-f", "csv", "snap.pickle", "-o", name], tmp)
            expect(p.returncode == 2 and p.stderr ==
                   f"memsnap export: --output {name}: {name} is a memory snapshot; refusing to "
                   f"overwrite it (use --force)\n", f"export -o {name} (a snapshot): refused", p)
            expect(open(target, "rb").read() == before, f"export -o {name}: left as it was")
            p = run(["--force", "export", "-f", "csv", "snap.pickle", "-o", name], tmp)
            expect(p.returncode == 0, f"--force export -o {name}: written", p)
            expect(open(target, "rb").read().startswith(b"device,address"),
                   f"--force export -o {name}: holds the CSV")
            os.remove(target)

        # memsnap's own outputs are not snapshots: writing them again needs no --force.
        fresh()
        for args in (["export", "-f", "perfetto", "snap.pickle", "-o", "trace.json"],
                     ["export", "-f", "csv", "snap.pickle", "-o", "blocks.csv"],
                     ["report", "snap.pickle", "-o", "report.html"],
                     ["check", "--max-peak", "1TiB", "--junit", "junit.xml", "snap.pickle"]):
            for attempt in (1, 2):
                p = run(args, tmp)
                expect(p.returncode == 0, f"{' '.join(args)} (run {attempt}): overwrites", p)

        # A write that fails names the path and the system's reason, and leaves nothing behind.
        # A private node of /dev/full (1, 7), so that a writer that renamed over its destination
        # would replace only this one (one did, before: it is not a regular file).
        full = os.path.join(tmp, "full")
        try:
            os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
        except OSError as e:
            print(f"note: no device node can be made here ({e}); the ENOSPC case is not run")
            full = None
        if full:
            p = run(["export", "-f", "csv", "snap.pickle", "-o", "full"], tmp)
            expect(p.returncode == 2 and p.stderr ==
                   "memsnap export: full: No space left on device\n", "export -o /dev/full", p)
            p = run(["convert", "snap.pickle", "full"], tmp)
            expect(p.returncode == 2 and p.stderr ==
                   "memsnap convert: full: No space left on device\n", "convert to /dev/full", p)
            expect(stat.S_ISCHR(os.stat(full).st_mode), "the device node is still a device")
            with open(full, "wb") as sink:
                p = subprocess.run([MEMSNAP, "summary", "snap.pickle"], cwd=tmp, stdout=sink,
                                   stderr=subprocess.PIPE, text=True)
            expect(p.returncode == 2 and p.stderr ==
                   "memsnap summary: writing standard output: No space left on device\n",
                   "summary > /dev/full", p)
        p = run(["top", "--folded", "no/such/dir/out.txt", "snap.pickle"], tmp)
        expect(p.returncode == 2 and p.stderr ==
               "memsnap top: no/such/dir/out.txt: No such file or directory\n",
               "top --folded into a missing directory", p)
        # A read-only file system (root ignores file modes, not a read-only mount).
        ro = os.path.join(tmp, "ro")
        os.mkdir(ro)
        script = (f"mount -t tmpfs -o ro tmpfs {ro} && exec {MEMSNAP} report snap.pickle "
                  f"-o {ro}/report.html")
        p = subprocess.run(["unshare", "-m", "sh", "-c", script], cwd=tmp, capture_output=True,
                           text=True)
        if "mount" in p.stderr or "unshare" in p.stderr:
            print("note: no private mount namespace here; the read-only case is not run")
        else:
            expect(p.returncode == 2 and p.stderr ==
                   f"memsnap report: {ro}/report.html: Read-only file system\n",
                   "report -o on a read-only file system", p)
        expect(not any(".tmp." in f for f in os.listdir(tmp)), "no temporary file left anywhere")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
