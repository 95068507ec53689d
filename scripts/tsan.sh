#!/usr/bin/env bash
# Builds the tests whose code runs on several threads (memsnap_thread_tests: the parallel decoding
# of one pickle against the sequential one, the reader's event feed and the timeline streamed
# beside it, ParallelFor, replay's and oom's configurations side by side, summary's event pass
# split between threads, the report's analysis on two threads) with ThreadSanitizer (GCC) in build-tsan/ and runs them. Bounded so that
# CI can afford it: the library and 8 test files are compiled, not the whole unit suite, which runs
# no more threads. Measured on the project's shared 2-core machine: docs/reader.md, "Parallel
# decoding of one pickle".
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 -g1 (line tables, enough for the sanitizers' reports): GCC compiles the instrumented code
# in about half the CPU time of RelWithDebInfo's -O2 -g (README.md, "Tests and CI"). Asserts stay
# in (no -DNDEBUG) and the standard library checks its bounds (-D_GLIBCXX_ASSERTIONS).
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMSNAP_ENABLE_TSAN=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -D_GLIBCXX_ASSERTIONS" -DMEMSNAP_UNITY_BUILD=ON \
  -DMEMSNAP_BUILD_BENCH=OFF -DMEMSNAP_PYTHON=OFF \
  -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" \
  >/dev/null
cmake --build build-tsan -j"${MEMSNAP_JOBS:-2}" --target memsnap_thread_tests
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# The corpus cases too when the corpus is there, on MEMSNAP_TSAN_CORPUS_FILES files spread over it
# (default 8; 0: all): each file is decoded 8 times and compared, and on the whole corpus that one
# case ran past 20 minutes on the shared 2-core machine. The Release suite compares every file.
(cd build-tsan/tests && MEMSNAP_CORPUS_FILES="${MEMSNAP_TSAN_CORPUS_FILES:-8}" ./memsnap_thread_tests \
  -tc="*stream*,*feed*,*ParallelFor*,*--threads*,*thread*,*side by side*,*several threads*")
