#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (unit, golden and corpus tests). CI runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh
ctest --test-dir build --output-on-failure -j"${MEMSNAP_JOBS:-2}"
