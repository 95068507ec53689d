#!/usr/bin/env bash
# Builds memsnap and its unit tests with ThreadSanitizer (GCC) in build-tsan/ and runs the tests
# whose code runs on several threads: the reader's event feed and the timeline streamed beside it,
# ParallelFor (--threads, files read side by side), and replay's configurations. Bounded so that
# CI can afford it: the whole unit suite under TSan takes far longer and runs no more threads.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSNAP_ENABLE_TSAN=ON \
  -DMEMSNAP_BUILD_BENCH=OFF >/dev/null
cmake --build build-tsan -j"${MEMSNAP_JOBS:-2}" --target memsnap memsnap_tests
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
(cd build-tsan/tests && ./memsnap_tests -tc="*stream*,*feed*,*ParallelFor*,*--threads*,*thread*,*side by side*")
