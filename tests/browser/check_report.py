#!/usr/bin/env python3
"""Renders `memsnap report` pages in headless Chromium and checks that they load without
JavaScript errors and that the plots have content.

Usage: check_report.py MEMSNAP SOURCE_DIR [--keep DIR] [--corpus CORPUS_DIR]
With --corpus only the page of the largest corpus pickle is checked; it exits 77 when the corpus is
absent, and fails then when MEMSNAP_REQUIRE_CORPUS=1. Without it, only pages of fixtures.
Exits 77 (ctest SKIP_RETURN_CODE) when Chromium is absent: install Debian's `chromium` package,
e.g. MEMSNAP_SETUP_BROWSER=1 scripts/setup.sh. MEMSNAP_CHROMIUM overrides the browser path.
With --keep DIR the pages and screenshots are left in DIR (see docs/report.md)."""
import os
import pickle
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

SKIP = 77
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         "--enable-logging=stderr", "--v=0"]


def chromium(browser, profile, *args):
    cmd = [browser] + FLAGS + [f"--user-data-dir={profile}"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA PNG (what Chromium writes) into rows of bytes and its depth."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), f"unexpected PNG format {depth}/{color}"
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return rows, bpp


def check_screenshot(path, failures):
    rows, bpp = png_pixels(path)
    colors, inked, total = set(), 0, 0
    for y in range(0, len(rows), 4):
        row = rows[y]
        for x in range(0, len(row) - bpp + 1, bpp * 4):
            px = row[x:x + 3]
            colors.add(px)
            total += 1
            if px != b"\xff\xff\xff":
                inked += 1
    if len(colors) < 20 or inked < total * 0.05:
        failures.append(f"{path}: screenshot looks blank ({len(colors)} colours, "
                        f"{inked}/{total} non-white samples)")


def check_dom(name, result, expect, failures):
    dom = result.stdout
    if 'data-rendered="ok"' not in dom:
        failures.append(f"{name}: the script did not finish (no data-rendered=\"ok\")")
    m = re.search(r'data-js-error="([^"]*)"', dom)
    if m:
        failures.append(f"{name}: JavaScript error: {m.group(1)}")
    for line in result.stderr.splitlines():
        if "CONSOLE" in line and ("Uncaught" in line or "Error" in line):
            failures.append(f"{name}: console: {line.strip()}")
    for what, pattern, minimum in expect:
        n = len(re.findall(pattern, dom))
        if n < minimum:
            failures.append(f"{name}: expected at least {minimum} {what}, found {n}")


def main():
    memsnap, source_dir = sys.argv[1], sys.argv[2]
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    corpus = sys.argv[sys.argv.index("--corpus") + 1] if "--corpus" in sys.argv else None
    browser = os.environ.get("MEMSNAP_CHROMIUM", "/usr/bin/chromium")
    if not os.path.exists(browser):
        print(f"skipped: {browser} not found (install Debian's chromium package, e.g. "
              "MEMSNAP_SETUP_BROWSER=1 scripts/setup.sh)")
        return SKIP
    corpus_files = []
    if corpus:
        if os.path.isdir(corpus):
            corpus_files = sorted((f for f in os.listdir(corpus) if f.endswith(".pickle")),
                                  key=lambda f: -os.path.getsize(os.path.join(corpus, f)))
        if not corpus_files:
            if os.environ.get("MEMSNAP_REQUIRE_CORPUS") == "1":
                print(f"FAIL: the corpus {corpus} is absent and MEMSNAP_REQUIRE_CORPUS=1")
                return 1
            print(f"skipped: the corpus {corpus} is absent")
            return SKIP
    sys.path.insert(0, os.path.join(source_dir, "tests", "unit"))
    from pyhelpers import load_json

    tmp = keep or tempfile.mkdtemp(prefix="memsnap-browser-")
    os.makedirs(tmp, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="memsnap-chromium-")
    failures = []
    try:
        basic = os.path.join(tmp, "basic.pickle")
        pickle.dump(load_json("report_basic.json"), open(basic, "wb"), protocol=4)
        later = os.path.join(tmp, "later.pickle")
        pickle.dump(load_json("summary_basic.json"), open(later, "wb"), protocol=4)
        pages = [("basic", [basic], [
            ("timeline charts", r'<svg[^>]*class="timeline"', 1),
            ("bands", r'<path class="band"', 4),
            ("peak markers", r'<line class="peak"', 1),
            ("site rows", r'<td class="site">', 4),
            ("segment map rows", r'<rect class="seg-bg"', 3)])]
        pages.append(("replay", [basic, "--replay", "expandable_segments:True"], [
            ("timeline charts", r'<svg[^>]*class="timeline"', 1),
            ("replay curve charts", r'<svg[^>]*class="lines"', 1)]))
        pages.append(("diff", [basic, later], [
            ("curve charts", r'<svg[^>]*class="lines"', 1),
            ("site rows", r'<td class="site">', 2)]))
        if corpus:
            pages = [("corpus", [os.path.join(corpus, corpus_files[0])], [
                ("timeline charts", r'<svg[^>]*class="timeline"', 1),
                ("bands", r'<path class="band"', 50),
                ("site rows", r'<td class="site">', 10)])]
        for name, inputs, expect in pages:
            html = os.path.join(tmp, f"{name}.html")
            proc = subprocess.run([memsnap, "-q", "report"] + inputs + ["-o", html],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                failures.append(f"{name}: memsnap report failed: {proc.stderr.strip()}")
                continue
            url = "file://" + os.path.abspath(html)
            check_dom(name, chromium(browser, profile, "--dump-dom", url), expect, failures)
            png = os.path.join(tmp, f"{name}.png")
            shot = chromium(browser, profile, "--window-size=1280,1600", f"--screenshot={png}", url)
            if not os.path.exists(png):
                failures.append(f"{name}: no screenshot: {shot.stderr[-500:]}")
            else:
                check_screenshot(png, failures)
            print(f"checked {name}: {html}")
    finally:
        shutil.rmtree(profile, ignore_errors=True)
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
