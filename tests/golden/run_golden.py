#!/usr/bin/env python3
"""Runs one golden CLI case: tests/golden/<command>/<case>/{args, expected.stdout[, expected.stderr,
expected.exit]}.

  run_golden.py MEMSNAP CASE_DIR SOURCE_DIR [CORPUS_DIR]

`args` holds one argument per line; `@testdata/` and `@corpus/` expand to the project's testdata
folder and the real-snapshot corpus (CORPUS_DIR, as configured by MEMSNAP_CORPUS_DIR). A case that
names `@corpus/` exits 77 when the corpus is absent, which ctest reports as skipped, not passed;
with MEMSNAP_REQUIRE_CORPUS=1 it fails instead. A `setup` file (Python) may create inputs first,
with the variable `tmp` naming a scratch folder and `testdata` the fixture folder; `@tmp/` expands
to that folder. MEMSNAP_UPDATE_GOLDEN=1 rewrites the expected files. A run that takes longer
than MEMSNAP_GOLDEN_TIMEOUT seconds (default 300) fails the case: a regression that opens a FIFO a
setup made (check/dir_unreadable_entries) would otherwise block until ctest's own limit."""
import difflib
import os
import subprocess
import sys
import tempfile

SKIP = 77  # ctest SKIP_RETURN_CODE (tests/CMakeLists.txt)


def main():
    memsnap, case_dir, source_dir = sys.argv[1:4]
    testdata = os.path.join(source_dir, "testdata")
    corpus = os.path.normpath(sys.argv[4] if len(sys.argv) > 4 else
                              os.path.join(source_dir, "..", "shared", "snapshots"))
    lines = [line for line in open(os.path.join(case_dir, "args")).read().splitlines()
             if line.strip() and not line.startswith("#")]
    if any("@corpus/" in line for line in lines) and not os.path.isdir(corpus):
        if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
            print(f"FAIL: the corpus {corpus} is absent and MEMSNAP_REQUIRE_CORPUS=1")
            return 1
        print(f"skipped: the corpus {corpus} is absent")
        return SKIP
    with tempfile.TemporaryDirectory() as tmp:
        setup = os.path.join(case_dir, "setup")
        if os.path.exists(setup):
            code = open(setup).read()
            exec(compile(code, setup, "exec"), {"tmp": tmp, "testdata": testdata,
                                                "source_dir": source_dir})
        # Inputs are passed as paths relative to the scratch folder through the links @testdata
        # and @corpus, so that output (and column widths computed from file names) does not
        # depend on where the checkout lives.
        os.symlink(testdata, os.path.join(tmp, "@testdata"))
        if os.path.isdir(corpus):
            os.symlink(corpus, os.path.join(tmp, "@corpus"))
        args = [line.replace("@tmp/", tmp + "/") for line in lines]
        timeout = float(os.environ.get("MEMSNAP_GOLDEN_TIMEOUT", "300"))
        try:
            proc = subprocess.run([memsnap] + args, capture_output=True, text=True, cwd=tmp,
                                  env={**os.environ, "COLUMNS": "100", "NO_COLOR": "1"},
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"FAIL: memsnap {' '.join(args)} did not finish in {timeout:g} s")
            return 1

        def norm(s):
            return s.replace(testdata + "/", "@testdata/").replace(corpus + "/", "@corpus/") \
                    .replace(tmp + "/", "@tmp/")
        actual = {"expected.stdout": norm(proc.stdout), "expected.stderr": norm(proc.stderr),
                  "expected.exit": f"{proc.returncode}\n"}
        failed = False
        for name, text in actual.items():
            path = os.path.join(case_dir, name)
            if os.environ.get("MEMSNAP_UPDATE_GOLDEN") == "1":
                if name == "expected.stdout" or text.strip() not in ("", "0"):
                    open(path, "w").write(text)
                continue
            if not os.path.exists(path):
                expected = "0\n" if name == "expected.exit" else ""
            else:
                expected = open(path).read()
            if expected != text:
                failed = True
                sys.stdout.writelines(difflib.unified_diff(
                    expected.splitlines(True), text.splitlines(True), path, "actual"))
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
