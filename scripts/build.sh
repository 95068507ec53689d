#!/usr/bin/env bash
# Configures and builds memsnap in build/ (Release, warnings on). Extra arguments go to cmake.
# MEMSNAP_WARNINGS_AS_ERRORS=ON (CI sets it) makes compiler warnings errors.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" "$@" >/dev/null
cmake --build build -j"${MEMSNAP_JOBS:-2}"
