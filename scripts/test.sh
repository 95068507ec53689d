#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, golden, corpus and browser tests). CI runs
# this first, then the sanitizer and fuzzing stages (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
MEMSNAP_SETUP_BROWSER=1 ./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"${MEMSNAP_JOBS:-2}"
