#!/usr/bin/env bash
# Installs what memsnap needs to build and test, from Debian packages. Idempotent: installs only
# what is missing. Run as root (or with sudo available).
set -euo pipefail

packages=(build-essential cmake ccache python3 zlib1g-dev
          libsimdjson-dev nlohmann-json3-dev libcli11-dev libabsl-dev doctest-dev nodejs)
# The Python module (python/, built when pybind11 and Python's headers are found) and its tests
# (tests/python: pytest, pandas for to_pandas()); pip, setuptools and wheel pack it as a wheel
# offline (scripts/install_check.sh).
# MEMSNAP_SETUP_MINIMAL=1 (scripts/example.sh) installs only what building memsnap needs.
if [[ "${MEMSNAP_SETUP_MINIMAL:-0}" != 1 ]]; then
  packages+=(python3-dev python3-pybind11 python3-pytest python3-pandas python3-pip
             python3-setuptools python3-wheel)
fi
# npm comes with NodeSource's nodejs; Debian's nodejs needs its own npm package.
if ! command -v npm >/dev/null 2>&1; then packages+=(npm); fi
# Fuzzing and sanitizer runs (tests/fuzz) use clang with its runtime.
if [[ "${MEMSNAP_SETUP_FUZZ:-0}" == 1 ]]; then packages+=(clang libclang-rt-dev); fi
# Browser test of the HTML report.
if [[ "${MEMSNAP_SETUP_BROWSER:-0}" == 1 ]]; then packages+=(chromium); fi
# The format check (scripts/check_format.sh): Debian's clang-format, with git-clang-format.
if [[ "${MEMSNAP_SETUP_FORMAT:-0}" == 1 ]]; then packages+=(clang-format git); fi
# The install check (scripts/install_check.sh): man to read the page, dpkg-shlibdeps (dpkg-dev)
# for the .deb's dependencies.
if [[ "${MEMSNAP_SETUP_INSTALL:-0}" == 1 ]]; then packages+=(man-db dpkg-dev); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The HTML report's chart library (uPlot), inlined into memsnap at build time, and the browser
# test's driver (playwright-core, which downloads no browser): the versions pinned in
# web/package-lock.json, from the npm registry.
cd "$(dirname "$0")/../web"
if [[ ! -d node_modules/uplot || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "setup: npm ci in web/" >&2
  npm ci --no-audit --no-fund --loglevel=error
fi
