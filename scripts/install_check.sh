#!/usr/bin/env bash
# Checks that memsnap installs like a command-line tool, from the build in build/ (or $1):
#   - `cmake --install` into a temporary prefix puts bin/memsnap, the man page and the bash
#     completion where they belong, and the installed binary runs (`--version`);
#   - `man -l` renders the page, with every command in it;
#   - the installed completion script, sourced in bash, completes commands and flags;
#   - the Python module (when the build made it, build/python): `cmake --install` puts the package
#     memsnap into site-packages under the prefix, and it imports and reads a snapshot from there;
#     `pip wheel` packs build/python offline and `pip install --no-index` of that wheel works;
#   - `cpack -G DEB` makes a .deb whose Depends names the Debian packages of what memsnap links,
#     whose files are those above, and whose memsnap runs once unpacked (dpkg-deb -x).
# Installs man-db and dpkg-dev if missing (MEMSNAP_SETUP_INSTALL=1 scripts/setup.sh). CI runs it
# after scripts/test.sh (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build}"
MEMSNAP_SETUP_INSTALL=1 ./scripts/setup.sh
cmake --build "$build" -j"${MEMSNAP_JOBS:-2}" --target memsnap memsnap_man
python_module=0
if [[ -f "$build/python/setup.py" ]]; then
  python_module=1
  cmake --build "$build" -j"${MEMSNAP_JOBS:-2}" --target memsnap_python
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "install_check: FAIL: $*" >&2; exit 1; }

echo "install_check: cmake --install into $work/prefix" >&2
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/memsnap share/man/man1/memsnap.1 share/bash-completion/completions/memsnap \
         share/doc/memsnap/README.md share/doc/memsnap/cli.md; do
  [[ -f "$work/prefix/$f" ]] || fail "cmake --install did not install $f"
done
version="$("$work/prefix/bin/memsnap" --version)" || fail "the installed memsnap --version failed"
echo "$version" | sed 's/^/  /' >&2
grep -q "^memsnap [0-9]" <<<"$version" || fail "--version does not start with 'memsnap <version>'"
grep -q "^features: " <<<"$version" || fail "--version does not name the optional features"
grep -q "^build: .*sanitizers: " <<<"$version" || fail "--version does not describe the build"

# The Python module: installed beside the binary, it imports and reads a snapshot; then the wheel.
if ((python_module)); then
  example="$(pwd)/testdata/summary_basic.json"
  init="$(find "$work/prefix" -path '*/memsnap/__init__.py' | head -1)"
  [[ -n "$init" ]] || fail "cmake --install did not install the Python package memsnap"
  site="$(dirname "$(dirname "$init")")"
  ls "$site"/memsnap/_memsnap*.so >/dev/null 2>&1 || fail "cmake --install did not install _memsnap"
  # The interpreter the build found, then Debian's (the one with pip, setuptools and wheel).
  pythons=("$(sed -n 's/^_\?Python3_EXECUTABLE:[A-Z]*=//p' "$build/CMakeCache.txt" | head -1)"
           /usr/bin/python3)
  read_check='import memsnap, sys; s = memsnap.load(sys.argv[1]); print(s.summary().trace_entries)'
  (cd "$work" && PYTHONPATH="$site" "${pythons[0]}" -c "$read_check" "$example" >/dev/null) ||
    fail "the installed Python package does not import and read a snapshot ($site)"
  echo "install_check: Python package installed in ${site#"$work/prefix/"}, imports and reads" >&2
  wheel_python=""
  for py in "${pythons[@]}"; do
    if [[ -x "$py" ]] && "$py" -c 'import setuptools, wheel, pip' 2>/dev/null; then
      wheel_python="$py"
      break
    fi
  done
  [[ -n "$wheel_python" ]] || fail "no Python with pip, setuptools and wheel to pack the wheel"
  # Packed from a copy: pip builds in the folder it is given.
  cp -r "$build/python" "$work/python-src"
  "$wheel_python" -m pip wheel --no-index --no-build-isolation --no-deps -q \
    -w "$work/wheels" "$work/python-src" >"$work/wheel.log" 2>&1 ||
    fail "pip wheel failed: $(tail -20 "$work/wheel.log")"
  whl="$(ls "$work"/wheels/memsnap-*.whl)"
  "$wheel_python" -m pip install --no-index --no-deps -q --target "$work/wheel-site" "$whl" \
    >"$work/pip.log" 2>&1 || fail "pip install of $(basename "$whl") failed: $(cat "$work/pip.log")"
  (cd "$work" && PYTHONPATH="$work/wheel-site" "$wheel_python" -c "$read_check" "$example" \
    >/dev/null) || fail "memsnap installed from $(basename "$whl") does not import and read"
  echo "install_check: $(basename "$whl") packs offline, installs and reads" >&2
fi

# The man page: rendered without roff warnings, and naming every command of `memsnap --help`.
page="$work/memsnap.txt"
MANWIDTH=100 man --warnings -l "$work/prefix/share/man/man1/memsnap.1" >"$page" \
  2>"$work/man.err" || fail "man -l failed: $(cat "$work/man.err")"
[[ ! -s "$work/man.err" ]] || fail "man -l warns: $(cat "$work/man.err")"
for section in NAME SYNOPSIS DESCRIPTION "GLOBAL OPTIONS" COMMANDS "EXIT STATUS"; do
  grep -q "^$section" "$page" || fail "the man page has no $section section"
done
commands="$("$work/prefix/bin/memsnap" --help |
            awk '/^Subcommands:/ { on = 1; next } on && NF == 0 { on = 0 } on { print $1 }')"
[[ -n "$commands" ]] || fail "memsnap --help lists no subcommands"
for c in $commands; do
  grep -q "memsnap $c \[OPTIONS\]" "$page" || fail "the man page does not describe '$c'"
done
echo "install_check: man -l: $(wc -l <"$page") lines, $(wc -w <<<"$commands") commands" >&2

# The completion: sourced from its installed place, it completes a command and a flag.
completion="$work/prefix/share/bash-completion/completions/memsnap"
got="$(bash -c '
  source "$1"
  complete -p memsnap >/dev/null || exit 1
  COMP_WORDS=(memsnap ti); COMP_CWORD=1; _memsnap; echo "${COMPREPLY[*]}"
  COMP_WORDS=(memsnap top --py); COMP_CWORD=2; _memsnap; echo "${COMPREPLY[*]}"
' _ "$completion")" || fail "sourcing $completion does not define a completion for memsnap"
[[ "$got" == $'timeline\n--python-only' ]] ||
  fail "the completion completes 'memsnap ti' and 'memsnap top --py' as: $got"
echo "install_check: bash completion completes commands and flags" >&2

# The .deb.
(cd "$build" && cpack -G DEB -B "$work/deb" >"$work/cpack.log" 2>&1) ||
  fail "cpack -G DEB failed: $(tail -20 "$work/cpack.log")"
deb="$(ls "$work"/deb/memsnap_*.deb)"
info="$(dpkg-deb --info "$deb")"
contents="$(dpkg-deb --contents "$deb")"
echo "install_check: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB" >&2
depends="$(dpkg-deb --field "$deb" Depends)"
echo "  Depends: $depends" >&2
for dep in libc6 libstdc++6 libabsl zlib1g libsimdjson; do
  grep -q "$dep" <<<"$depends" || fail "the .deb does not depend on $dep: $depends"
done
for f in ./usr/bin/memsnap ./usr/share/man/man1/memsnap.1 \
         ./usr/share/bash-completion/completions/memsnap; do
  grep -q " $f\$" <<<"$contents" || fail "the .deb does not contain $f"
done
grep -q "^ Package: memsnap$" <<<"$info" || fail "the .deb is not the package memsnap"
dpkg-deb -x "$deb" "$work/unpacked"
"$work/unpacked/usr/bin/memsnap" --version >/dev/null || fail "memsnap from the .deb does not run"
if ((python_module)); then
  # Debian's python3 reads /usr/lib/python3/dist-packages: the package must be there and import.
  deb_site="$work/unpacked/usr/lib/python3/dist-packages"
  [[ -f "$deb_site/memsnap/__init__.py" ]] ||
    fail "the .deb does not put the Python package in /usr/lib/python3/dist-packages"
  (cd "$work" && PYTHONPATH="$deb_site" /usr/bin/python3 -c "$read_check" "$example" >/dev/null) ||
    fail "the Python package from the .deb does not import and read with /usr/bin/python3"
  echo "install_check: the .deb's Python package imports with /usr/bin/python3" >&2
fi
echo "install_check: ok" >&2
