#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs them (docs/reader.md, "Fuzzing").
#
#   scripts/fuzz.sh [seconds_per_target] [target...]     bounded run, each target in turn
#                                                        (default 60 s; CI runs 20 s)
#   scripts/fuzz.sh --long [--hours H] [--execs N] [--slice S] [target...]
#                                                        a campaign: the targets take turns of
#                                                        S seconds (default 1800) at nice 19, one
#                                                        process at a time, until each has run N
#                                                        executions in all (default 10^7) or H
#                                                        hours have passed (default 8; H may be
#                                                        a fraction)
#   scripts/fuzz.sh --report [target...]                 what the campaigns reached so far
#
# Targets: pickle json html gzip reader timeline (byte level) pickle_paths (the pickle decoder's
# fast path against its generic path) structured (decodes a snapshot, mutates its fields, writes
# it back with the project's pickle writer). Seeds are generated (scripts/make_fuzz_seeds.py),
# never the real corpus. The growing corpus lives in $MEMSNAP_FUZZ_STATE/corpus/<target>/
# (default build-fuzz; point it outside the checkout to keep it across clones) and is kept
# between runs and campaigns; crash reproducers go to $MEMSNAP_FUZZ_STATE/artifacts/<target>/
# (copy one into tests/fuzz/regressions/ to make it a unit test). A campaign appends one line per
# turn to $MEMSNAP_FUZZ_STATE/campaign/<target>.tsv (date, seconds, executions, edges covered,
# features, corpus files); --report sums them. Exits non-zero when a target finds a crash.
set -euo pipefail
cd "$(dirname "$0")/.."
all_targets=(pickle json html gzip reader timeline pickle_paths structured)
mode=bounded
seconds=60
hours=8
execs=10000000
slice=1800
if [[ "${1:-}" == --long || "${1:-}" == --report ]]; then
  mode="${1#--}"
  shift
  while [[ "${1:-}" == --* ]]; do
    case "$1" in
      --hours) hours="$2"; shift 2 ;;
      --execs) execs="$2"; shift 2 ;;
      --slice) slice="$2"; shift 2 ;;
      *) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    esac
  done
elif [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
targets=("$@")
((${#targets[@]})) || targets=("${all_targets[@]}")
jobs="${MEMSNAP_FUZZ_BUILD_JOBS:-2}"
state="${MEMSNAP_FUZZ_STATE:-build-fuzz}"
# MEMSNAP_FUZZ_BIN: run the fuzzers already built there (say, copied out of the checkout so that a
# campaign goes on while the checkout is rebuilt) instead of building them.
bin="${MEMSNAP_FUZZ_BIN:-build-fuzz/tests/fuzz}"

# Whole snapshots for the target that mutates them as such; 64 KiB keeps the byte-level ones
# fast (pickle_paths too: structured compares both pickle paths on whole files).
max_len() {
  case "$1" in
    structured) echo 1048576 ;;
    *) echo 65536 ;;
  esac
}

# Sums of a target's campaign: turns, seconds, executions; the last coverage, features, corpus.
report() {
  local t="$1" f="$state/campaign/$1.tsv"
  if [[ ! -s "$f" ]]; then
    printf '%-13s no campaign yet\n' "$t"
    return
  fi
  awk -F'\t' -v t="$t" '{n++; s+=$2; e+=$3; cov=$4; ft=$5; files=$6}
    END {printf "%-13s %3d turns %8.1f h %12d executions  cov %6d  ft %7d  corpus %6d\n",
         t, n, s/3600, e, cov, ft, files}' "$f"
}

executions_so_far() {
  local f="$state/campaign/$1.tsv"
  [[ -s "$f" ]] && awk -F'\t' '{e+=$3} END {print e+0}' "$f" || echo 0
}

if [[ "$mode" == report ]]; then
  for t in "${targets[@]}"; do report "$t"; done
  exit 0
fi

if [[ -z "${MEMSNAP_FUZZ_BIN:-}" ]]; then
  # Asserts stay in (RelWithDebInfo without -DNDEBUG) and the standard library checks its bounds
  # (-D_GLIBCXX_ASSERTIONS): a fuzzer must stop on a broken invariant, not read past it.
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g -D_GLIBCXX_ASSERTIONS" \
    -DMEMSNAP_ENABLE_FUZZ=ON -DMEMSNAP_ENABLE_ASAN=ON -DMEMSNAP_ENABLE_UBSAN=ON \
    -DMEMSNAP_BUILD_TESTS=OFF -DMEMSNAP_BUILD_BENCH=OFF -DMEMSNAP_ENABLE_CUDA=OFF -DMEMSNAP_PYTHON=OFF \
    -DMEMSNAP_WARNINGS_AS_ERRORS="${MEMSNAP_WARNINGS_AS_ERRORS:-OFF}" >/dev/null
  [[ "$mode" == long ]] && build_nice=19 || build_nice=0
  nice -n "$build_nice" cmake --build build-fuzz -j"$jobs" \
    --target $(printf 'fuzz_%s ' "${targets[@]}")
fi
python3 scripts/make_fuzz_seeds.py "$state/seeds" >/dev/null

# Runs target $1 for $2 seconds and at most $3 executions (0: no limit) at niceness $4; appends
# the turn to the campaign log when $5 is "log". Returns non-zero on a crash.
run_target() {
  local t="$1" secs="$2" runs="$3" niceness="$4" log="$5"
  mkdir -p "$state/corpus/$t" "$state/artifacts/$t" "$state/campaign"
  local start=$SECONDS
  if ! nice -n "$niceness" "$bin/fuzz_$t" "$state/corpus/$t" \
      "$state/seeds/$t" tests/fuzz/regressions -dict=tests/fuzz/snapshot.dict \
      -max_total_time="$secs" -runs="$((runs > 0 ? runs : -1))" -timeout=10 \
      -rss_limit_mb=2048 -max_len="$(max_len "$t")" -artifact_prefix="$state/artifacts/$t/" \
      -print_final_stats=1 >"$state/fuzz_$t.log" 2>&1; then
    echo "fuzz: $t FOUND A CRASH (see $state/fuzz_$t.log, $state/artifacts/$t/)" >&2
    tail -30 "$state/fuzz_$t.log" >&2
    return 1
  fi
  local done_runs cov ft files
  done_runs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$state/fuzz_$t.log" |
              grep -o '[0-9]*$' | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$state/fuzz_$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  ft=$(grep -o 'ft: [0-9]*' "$state/fuzz_$t.log" | tail -1 | grep -o '[0-9]*$' || echo 0)
  files=$(find "$state/corpus/$t" -type f | wc -l)
  echo "fuzz: $t: ${done_runs:-0} executions in $((SECONDS - start)) s, cov ${cov:-0}," \
       "ft ${ft:-0}, corpus $files" >&2
  if [[ "$log" == log ]]; then
    printf '%s\t%d\t%d\t%d\t%d\t%d\n' "$(date -u +%FT%TZ)" "$((SECONDS - start))" \
      "${done_runs:-0}" "${cov:-0}" "${ft:-0}" "$files" >>"$state/campaign/$t.tsv"
  fi
}

status=0
if [[ "$mode" == bounded ]]; then
  for t in "${targets[@]}"; do
    echo "fuzz: $t for ${seconds}s" >&2
    run_target "$t" "$seconds" 0 0 nolog || status=1
  done
  exit $status
fi

# The campaign: turns until every target reached its executions or the time is up.
deadline=$((SECONDS + $(awk -v h="$hours" 'BEGIN {print int(h * 3600)}')))
declare -A crashed=()
while ((SECONDS < deadline)); do
  pending=0
  for t in "${targets[@]}"; do
    so_far=$(executions_so_far "$t")
    ((so_far < execs)) && [[ -z "${crashed[$t]:-}" ]] || continue
    pending=1
    left=$((deadline - SECONDS))
    ((left > 0)) || break
    if ! run_target "$t" "$((left < slice ? left : slice))" "$((execs - so_far))" 19 log; then
      crashed[$t]=1
      status=1
    fi
  done
  ((pending)) || break
done
for t in "${targets[@]}"; do report "$t"; done
exit $status
