#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for a bounded time.
#   scripts/fuzz.sh [seconds_per_target] [target...]     (default 60 s; targets: pickle json html
#   gzip reader timeline)
# Seeds are generated (scripts/make_fuzz_seeds.py); the growing corpus lives in build-fuzz/corpus/,
# crash reproducers in build-fuzz/artifacts/<target>/. Copy a reproducer into
# tests/fuzz/regressions/ to make it a unit test (tests/unit/fuzz_seeds_test.cpp replays them).
# Exits non-zero when a target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
shift || true
targets=("$@")
((${#targets[@]})) || targets=(pickle json html gzip reader timeline)
jobs="${MEMSNAP_FUZZ_BUILD_JOBS:-2}"

CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMEMSNAP_ENABLE_FUZZ=ON -DMEMSNAP_ENABLE_ASAN=ON -DMEMSNAP_ENABLE_UBSAN=ON \
  -DMEMSNAP_BUILD_TESTS=OFF -DMEMSNAP_BUILD_BENCH=OFF -DMEMSNAP_ENABLE_CUDA=OFF \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null
cmake --build build-fuzz -j"$jobs" --target $(printf 'fuzz_%s ' "${targets[@]}")

python3 scripts/make_fuzz_seeds.py build-fuzz/seeds >/dev/null
status=0
for t in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$t" "build-fuzz/artifacts/$t"
  echo "fuzz: $t for ${seconds}s" >&2
  if ! build-fuzz/tests/fuzz/fuzz_"$t" "build-fuzz/corpus/$t" "build-fuzz/seeds/$t" \
      tests/fuzz/regressions -dict=tests/fuzz/snapshot.dict \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
      -artifact_prefix="build-fuzz/artifacts/$t/" -print_final_stats=1 \
      >"build-fuzz/fuzz_$t.log" 2>&1; then
    echo "fuzz: $t FOUND A CRASH (see build-fuzz/fuzz_$t.log, build-fuzz/artifacts/$t/)" >&2
    tail -30 "build-fuzz/fuzz_$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|cov:" "build-fuzz/fuzz_$t.log" | tail -2 >&2 || true
  fi
done
exit $status
