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
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSNAP_ENABLE_ASAN=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -D_GLIBCXX_ASSERTIONS" \
  -DMEMSNAP_ENABLE_UBSAN=ON -DMEMSNAP_BUILD_BENCH=OFF -DMEMSNAP_PYTHON=OFF \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null
cmake --build build-asan -j"${MEMSNAP_JOBS:-2}" --target memsnap memsnap_tests
export MEMSNAP_MUTATION_FILES="${MEMSNAP_MUTATION_FILES:-12}" MEMSNAP_MUTANTS="${MEMSNAP_MUTANTS:-2}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan/tests && ./memsnap_tests \
  -tce="*CPython loads our pickles*,*JSON and pickle of every corpus snapshot*,*every corpus file survives model*")
