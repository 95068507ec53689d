#!/usr/bin/env bash
# Configures and builds memsnap in build/ (Release, warnings on). Extra arguments go to cmake.
# MEMSNAP_WARNINGS_AS_ERRORS=ON (CI sets it) makes compiler warnings errors. MEMSNAP_BUILD_TARGETS
# (space-separated) builds only those targets (scripts/example.sh: memsnap and memsnap_gen).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" "$@" >/dev/null
targets=()
for t in ${MEMSNAP_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build build -j"${MEMSNAP_JOBS:-2}" "${targets[@]}"
