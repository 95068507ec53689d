#!/usr/bin/env bash
# GPU acceptance test for `memsnap replay --backend cuda` (docs/gpu.md). Needs a CUDA toolkit
# (nvcc/cuda.h) to build and an NVIDIA driver + GPU to run. Builds memsnap, runs the fake-driver
# unit tests, replays a generated fixture trace on every allocator (native, expandable,
# cudaMallocAsync) and compares the driver's view with the simulator. Exit 0 = all matched.
#
# Environment: BUILD (build dir, default build-gpu), GPU (ordinal, 0), SCALE (1), PEAK_GIB (2),
# TOL (relative tolerance, 0.05), JOBS (build parallelism, nproc), OUT (where results go).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$SRC/build-gpu}
GPU=${GPU:-0}
SCALE=${SCALE:-1}
PEAK_GIB=${PEAK_GIB:-2}
TOL=${TOL:-0.05}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"

step() { printf '\n== %s\n' "$*"; }

step "build ($BUILD)"
cmake -S "$SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DMEMSNAP_ENABLE_CUDA=ON \
      -DMEMSNAP_BUILD_BENCH=OFF > "$OUT/cmake.log"
grep 'memsnap: CUDA' "$OUT/cmake.log"
cmake --build "$BUILD" -j"${JOBS:-$(nproc)}" --target memsnap memsnap_tests > "$OUT/build.log"
"$BUILD/memsnap" --version | tee "$OUT/version.txt"
grep -q 'features: cuda' "$OUT/version.txt" || { echo "built without CUDA"; exit 1; }

step "fake-driver unit tests"
"$BUILD/tests/memsnap_tests" -ts=cuda_backend

step "device"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version --format=csv || true

step "fixture (peak about $PEAK_GIB GiB)"
python3 "$SRC/tests/gpu/make_fixture.py" "$OUT/fixture.pickle" --peak-gib "$PEAK_GIB"
"$BUILD/memsnap" summary "$OUT/fixture.pickle" | head -20 || true

step "simulator"
"$BUILD/memsnap" replay "$OUT/fixture.pickle" --conf expandable_segments:True | tee "$OUT/sim.txt"

step "replay on GPU $GPU: native, expandable, cudaMallocAsync"
"$BUILD/memsnap" replay "$OUT/fixture.pickle" --backend cuda --gpu "$GPU" --scale "$SCALE" \
  --conf expandable_segments:True --conf backend:cudaMallocAsync | tee "$OUT/gpu.txt"
"$BUILD/memsnap" replay "$OUT/fixture.pickle" --backend cuda --gpu "$GPU" --scale "$SCALE" \
  --conf expandable_segments:True --conf backend:cudaMallocAsync --json > "$OUT/gpu.json"

step "--allocator shorthand"
"$BUILD/memsnap" replay "$OUT/fixture.pickle" --backend cuda --gpu "$GPU" --scale "$SCALE" \
  --allocator cudaMallocAsync --json > "$OUT/async.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['configs']; assert [x['allocator'] for x in c]==['native','cudaMallocAsync'], c" "$OUT/async.json"

step "error paths"
set +e
"$BUILD/memsnap" replay "$OUT/fixture.pickle" --backend cuda --gpu 999 2> "$OUT/bad_gpu.err"
rc=$?
set -e
cat "$OUT/bad_gpu.err"
[ "$rc" = 2 ] || { echo "--gpu 999: expected exit 2, got $rc"; exit 1; }

step "compare with the simulator (tolerance $TOL)"
python3 "$SRC/tests/gpu/check_results.py" "$OUT/gpu.json" --tolerance "$TOL"
echo "results in $OUT"
