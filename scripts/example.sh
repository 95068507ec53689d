#!/usr/bin/env bash
# Installs what is missing, builds memsnap and the snapshot generator (only those two: the test
# suite builds in scripts/test.sh), generates a small realistic snapshot (a simulated training
# loop, ~50k trace events, ~4 MB) and runs `memsnap summary` on it.
set -euo pipefail
cd "$(dirname "$0")/.."
MEMSNAP_SETUP_MINIMAL=1 ./scripts/setup.sh
MEMSNAP_BUILD_TARGETS="memsnap memsnap_gen" ./scripts/build.sh
./build/bench/memsnap_gen --events 50000 --seed 1 -o build/example.pickle
./build/memsnap summary build/example.pickle
