#!/usr/bin/env python3
"""An output never replaces an input, and a failed write says why (docs/design.md, "Errors").

  outputs_test.py MEMSNAP SOURCE_DIR

Every flag that names an output file is pointed at the input snapshot itself, at a hard link and at
a symlink to it: each must exit 2 with a message naming the flag, and leave the input byte for byte
as it was; so must a --categories file and a standard input redirected from the output. An
existing snapshot that is not an input is refused unless --force; memsnap's own outputs (a
Perfetto trace, the HTML report, CSV) are overwritten without it. Writes to a /dev/full and to a
read-only file system name the path and the system's reason.

Temporary files (io/output.h): only a stale one of memsnap's own is removed, never a user's file
however it is named (the input included), with or without a `/` in the output's name; any output
name that fits NAME_MAX can be written. A rewritten output keeps its permission bits, and an
output that is a symlink writes the file it leads to and stays a symlink."""
import fcntl
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


def leftovers(d):
    """Temporary files of any memsnap, old (`OUT.tmp.PID`) or new (`.memsnap-HEX.tmp`)."""
    return [f for f in os.listdir(d) if ".tmp." in f or f.startswith(".memsnap-")]


def xattrs_work(d):
    probe = os.path.join(d, "xattr-probe")
    open(probe, "w").close()
    try:
        os.setxattr(probe, "user.memsnap-probe", b"1")
        return True
    except OSError:
        return False
    finally:
        os.remove(probe)


def snapshot_bytes(name):
    data = json.load(open(os.path.join(SOURCE, "testdata", name)))
    return pickle.dumps(data, protocol=4)


def temp_names(tmp, snap):
    """Only memsnap's own stale temporary files are removed; any valid output name works."""
    d = os.path.join(tmp, "temps")
    os.mkdir(d)
    path = os.path.join(d, "snap.pickle")
    open(path, "wb").write(snap)
    # A file named as the old temporary files were (OUT.tmp.PID of a finished process) is the
    # user's: as the input of a write to OUT, or beside it; with and without a `/` in OUT.
    for out in ("out.json", "./out.json"):
        name = "out.json.tmp.3999999"
        shutil.copy(path, os.path.join(d, name))
        p = run(["convert", name, out], d)
        expect(p.returncode == 0, f"convert {name} {out}: written", p)
        expect(os.path.exists(os.path.join(d, name)) and
               open(os.path.join(d, name), "rb").read() == snap, f"convert {name} {out}: input kept")
        for f in (name, "out.json"):
            if os.path.exists(os.path.join(d, f)):
                os.remove(os.path.join(d, f))
    for out in ("report.html", "./report.html", os.path.join(d, "report.html")):
        name = os.path.join(d, "report.html.tmp.4000001")
        open(name, "w").write("precious\n")
        p = run(["report", "snap.pickle", "-o", out], d)
        expect(p.returncode == 0, f"report -o {out}: written", p)
        expect(os.path.exists(name) and open(name).read() == "precious\n",
               f"report -o {out}: the unrelated report.html.tmp.4000001 is kept")
        if os.path.exists(name):
            os.remove(name)
    # Even a file named in memsnap's own pattern is the user's unless memsnap marked it (where
    # the file system keeps extended attributes: elsewhere the name and the lock are the proof).
    mine = ".memsnap-0123456789abcdef.tmp"
    if xattrs_work(d):
        shutil.copy(path, os.path.join(d, mine))
        for out in ("out.json", "./out.json"):
            p = run(["convert", mine, out], d)
            expect(p.returncode == 0 and os.path.exists(os.path.join(d, mine)) and
                   open(os.path.join(d, mine), "rb").read() == snap,
                   f"convert {mine} {out}: the input, in memsnap's pattern but unmarked, is kept", p)
            os.remove(os.path.join(d, "out.json"))
        os.remove(os.path.join(d, mine))
    else:
        print("note: no user extended attributes here; the unmarked-file case is not run")

    # A stale one of memsnap's (marked, no process holds its lock: a SIGKILL) is removed by the
    # next write in its folder, with or without a `/`; one a live writer holds is left alone.
    def leave(name, held):
        f = open(os.path.join(d, name), "wb")
        f.write(b"half")
        f.flush()
        try:
            os.setxattr(f.fileno(), "user.memsnap", b"temp")
        except OSError:
            pass  # no extended attributes here: the name and the lock decide
        if held:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            return f
        f.close()
        return None

    for out in ("report.html", "./report.html"):
        stale, live = ".memsnap-00000000deadbeef.tmp", ".memsnap-00000000000a11fe.tmp"
        leave(stale, held=False)
        holder = leave(live, held=True)
        p = run(["report", "snap.pickle", "-o", out], d)
        expect(p.returncode == 0, f"report -o {out} beside stale temporary files", p)
        expect(not os.path.exists(os.path.join(d, stale)),
               f"report -o {out}: memsnap's stale temporary file is removed")
        expect(os.path.exists(os.path.join(d, live)),
               f"report -o {out}: a temporary file a live writer holds is kept")
        holder.close()
        os.remove(os.path.join(d, live))

    # Any name that fits NAME_MAX can be an output (the temporary file's name is short).
    for n in (245, 255):
        name = "r" * (n - 5) + ".html"
        p = run(["report", "snap.pickle", "-o", name], d)
        expect(p.returncode == 0 and os.path.exists(os.path.join(d, name)),
               f"report -o <a {n}-character name>: written", p)
        if os.path.exists(os.path.join(d, name)):
            os.remove(os.path.join(d, name))
    os.remove(path)
    expect(not leftovers(d), f"temps: no temporary file left: {leftovers(d)}")
    shutil.rmtree(d)


def modes_and_links(tmp, snap):
    """A rewritten output keeps its mode; a symlinked output writes the file it leads to."""
    d = os.path.join(tmp, "links")
    os.mkdir(d)
    open(os.path.join(d, "snap.pickle"), "wb").write(snap)
    for name, args in (("report.html", ["report", "snap.pickle", "-o", "report.html"]),
                       ("blocks.csv", ["export", "-f", "csv", "snap.pickle", "-o", "blocks.csv"]),
                       ("out.pickle", ["--force", "convert", "snap.pickle", "out.pickle"])):
        for mode in (0o600, 0o640, 0o755):
            run(args, d)
            os.chmod(os.path.join(d, name), mode)
            p = run(args, d)
            got = stat.S_IMODE(os.stat(os.path.join(d, name)).st_mode)
            expect(p.returncode == 0 and got == mode,
                   f"{' '.join(args)} over a mode {mode:o} file: keeps it (got {got:o})", p)
        os.remove(os.path.join(d, name))

    # A symlink, relative or absolute, to a file in another folder, or dangling: the file it
    # leads to is written, the link stays a link, no temporary file is left in either folder.
    real = os.path.join(d, "real")
    os.mkdir(real)
    target = os.path.join(real, "report.html")
    open(target, "w").write("old page\n")
    os.chmod(target, 0o600)
    for link, dest in (("rel.html", "real/report.html"), ("abs.html", target),
                       ("chain.html", "rel.html")):
        os.symlink(dest, os.path.join(d, link))
        p = run(["report", "snap.pickle", "-o", link], d)
        expect(p.returncode == 0, f"report -o {link} (a symlink): written", p)
        expect(os.path.islink(os.path.join(d, link)), f"report -o {link}: still a symlink")
        expect(open(target).read().startswith("<!DOCTYPE html>") or
               open(target).read().startswith("<!doctype html>"),
               f"report -o {link}: the file it leads to holds the page")
        expect(stat.S_IMODE(os.stat(target).st_mode) == 0o600,
               f"report -o {link}: the target keeps its mode")
        open(target, "w").write("old page\n")
    os.symlink("real/new.html", os.path.join(d, "dangling.html"))
    p = run(["report", "snap.pickle", "-o", "dangling.html"], d)
    expect(p.returncode == 0 and os.path.islink(os.path.join(d, "dangling.html")) and
           os.path.isfile(os.path.join(real, "new.html")),
           "report -o a dangling symlink: writes the file it names, keeps the link", p)
    os.symlink("loop.html", os.path.join(d, "loop.html"))
    p = run(["report", "snap.pickle", "-o", "loop.html"], d)
    expect(p.returncode == 2 and "loop.html: Too many levels of symbolic links" in p.stderr,
           "report -o a symlink loop: exit 2 naming it", p)
    expect(not leftovers(d) and not leftovers(real),
           f"links: no temporary file left: {leftovers(d) + leftovers(real)}")
    shutil.rmtree(d)


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
                expect(not leftovers(tmp), f"{' '.join(a)}: no temporary file left")

        # A directory input stands for its files.
        fresh()
        p = run(["top", "--folded", "snap.pickle", "."], tmp)
        expect(p.returncode == 2 and "is the same file as the input" in p.stderr,
               "top --folded F DIR: F inside DIR is refused", p)

        # Every file a command reads is an input: the --categories file (a global flag, before
        # or after the command) and standard input redirected from the output, --force or not.
        cats = os.path.join(tmp, "cats.txt")
        cat_rules = b"lora=peft/tuners\n"
        more_writers = writers + [
            (["export", "-f", "json", "snap.pickle", "-o", "OUT"], "--output"),
            (["export", "-f", "folded", "snap.pickle", "-o", "OUT"], "--output"),
            (["convert", "--format", "pickle", "snap.pickle", "OUT"], "output"),
            (["report", "snap.pickle", "snap.pickle", "-o", "OUT"], "--output"),
        ]
        for args, flag in more_writers:
            for force in ([], ["--force"]):
                for where in ("before", "after"):
                    fresh()
                    open(cats, "wb").write(cat_rules)
                    a = [("cats.txt" if x == "OUT" else x) for x in args]
                    a = (force + ["--categories", "cats.txt"] + a if where == "before"
                         else force + a[:1] + ["--categories", "cats.txt"] + a[1:])
                    p = run(a, tmp)
                    want = (f"memsnap {args[0]}: {flag} cats.txt: cats.txt is the same file as the "
                            f"input cats.txt; refusing to write over it\n")
                    expect(p.returncode == 2 and p.stderr == want, f"{' '.join(a)}: refused", p)
                    expect(open(cats, "rb").read() == cat_rules,
                           f"{' '.join(a)}: the categories file is intact")
        stdin_writers = [
            (["convert", "-", "OUT"], "output"),
            (["export", "-f", "csv", "-", "-o", "OUT"], "--output"),
            (["report", "-", "-o", "OUT"], "--output"),
            (["top", "--folded", "OUT", "-"], "--folded"),
            (["check", "--max-peak", "1TiB", "--junit", "OUT", "-"], "--junit"),
        ]
        for args, flag in stdin_writers:
            for out in ("snap.pickle", "./snap.pickle", "hard.pickle", "sym.pickle"):
                fresh()
                a = ["--force"] + [out if x == "OUT" else x for x in args]
                with open(path, "rb") as stdin:
                    p = run(a, tmp, stdin=stdin)
                want = (f"memsnap {args[0]}: {flag} {out}: {out} is the same file as the input - "
                        f"(standard input); refusing to write over it\n")
                expect(p.returncode == 2 and p.stderr == want, f"{' '.join(a)} < snap.pickle", p)
                expect(open(path, "rb").read() == snap, f"{' '.join(a)} < snap.pickle: intact")
        # Standard input from another file does not stop a write.
        fresh()
        open(os.path.join(tmp, "copy.pickle"), "wb").write(snap)
        with open(os.path.join(tmp, "copy.pickle"), "rb") as stdin:
            p = run(["export", "-f", "csv", "-", "-o", "blocks.csv"], tmp, stdin=stdin)
        expect(p.returncode == 0, "export - -o blocks.csv < another file: written", p)
        os.remove(os.path.join(tmp, "copy.pickle"))
        os.remove(os.path.join(tmp, "blocks.csv"))
        os.remove(cats)

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
        temp_names(tmp, snap)
        modes_and_links(tmp, snap)
        expect(not leftovers(tmp), f"no temporary file left anywhere: {leftovers(tmp)}")

    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
