#!/usr/bin/env bash
# Builds memsnap and its unit tests with AddressSanitizer + UndefinedBehaviorSanitizer (GCC) in
# build-asan/ and runs the unit suite there. The three corpus-conversion cases that shell out to
# CPython for every corpus file are left to the Release run (scripts/test.sh): under ASan they take
# many minutes and exercise Python far more than memsnap.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSNAP_ENABLE_ASAN=ON \
  -DMEMSNAP_ENABLE_UBSAN=ON -DMEMSNAP_BUILD_BENCH=OFF \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null
cmake --build build-asan -j"${MEMSNAP_JOBS:-2}" --target memsnap memsnap_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-asan/tests && ./memsnap_tests \
  -tce="*CPython loads our pickles*,*JSON and pickle of every corpus snapshot*,*every corpus file survives model*")
