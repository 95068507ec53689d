#!/usr/bin/env bash
# Builds memsnap and its unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (GCC) in
# build-asan/ and runs the unit suite there. The three corpus-conversion cases that shell out to
# CPython for every corpus file are left to the Release run (scripts/test.sh): under ASan they take
# many minutes and exercise Python far more than memsnap. The mutation test (unit/mutation_test.cpp:
# mutants of snapshots through every command) runs on MEMSNAP_MUTATION_FILES corpus files
# (default 12; ctest corpus/mutation has them all) with MEMSNAP_MUTANTS mutants of each kind (default 2) per file.
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -g1 (line tables, enough for the sanitizers' reports): GCC compiles the instrumented code
# in about half the CPU time of RelWithDebInfo's -O2 -g (README.md, "Tests and CI"). Asserts stay
# in (no -DNDEBUG), and the standard library checks its own bounds (-D_GLIBCXX_ASSERTIONS): the
# sanitizer builds are where a broken invariant must stop the run.
# A unity build (MEMSNAP_UNITY_BUILD): about half the CPU time of compiling file by file, and this
# build is made anew in every CI run.
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSNAP_ENABLE_ASAN=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -D_GLIBCXX_ASSERTIONS" -DMEMSNAP_UNITY_BUILD=ON \
  -DMEMSNAP_ENABLE_UBSAN=ON -DMEMSNAP_BUILD_BENCH=OFF -DMEMSNAP_PYTHON=OFF \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null
cmake --build build-asan -j"${MEMSNAP_JOBS:-2}" --target memsnap memsnap_tests
export MEMSNAP_MUTATION_FILES="${MEMSNAP_MUTATION_FILES:-12}" MEMSNAP_MUTANTS="${MEMSNAP_MUTANTS:-2}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The suite in MEMSNAP_JOBS shards (default 2) side by side, each a range of the test cases
# (doctest's --first/--last); a shard's output is shown when it fails, or with MEMSNAP_VERBOSE=1.
filter=(-tce="*CPython loads our pickles*,*JSON and pickle of every corpus snapshot*,*every corpus file survives model*")
cd build-asan/tests
cases=$(./memsnap_tests "${filter[@]}" --count | grep -o 'filters: [0-9]*' | grep -o '[0-9]*$')
shards="${MEMSNAP_JOBS:-2}"
pids=()
range=()
for ((k = 0; k < shards; k++)); do
  first=$((cases * k / shards + 1)) last=$((cases * (k + 1) / shards))
  ./memsnap_tests "${filter[@]}" --first="$first" --last="$last" >"shard$k.log" 2>&1 &
  pids+=($!)
  range+=("$first-$last")
done
status=0
for ((k = 0; k < shards; k++)); do
  rc=0
  wait "${pids[$k]}" || rc=$?
  if ((rc == 0 || rc == 77)); then  # 77: every case of the shard skipped (no corpus)
    [[ "${MEMSNAP_VERBOSE:-0}" == 1 ]] && cat "shard$k.log"
    echo "sanitize: shard $((k + 1))/$shards (cases ${range[$k]} of $cases): $(grep '^\[doctest\] assertions' "shard$k.log")" >&2
  else
    cat "shard$k.log" >&2
    echo "sanitize: shard $((k + 1))/$shards FAILED" >&2
    status=1
  fi
done
# Traces the final state does not explain (tests/consistency/variants.py): oom, report, replay
# --sweep and frag on the awkward variants of two corpus files, under the sanitizers.
if [[ -d ../../../shared/snapshots ]]; then
  python3 ../../tests/consistency/variants.py ../memsnap ../../../shared/snapshots --files 2 \
    --signals-only >variants.log 2>&1 || { cat variants.log >&2; status=1; }
  echo "sanitize: variants: $(tail -1 variants.log)" >&2
fi
exit $status
