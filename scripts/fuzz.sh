#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ (clang-14, ASan + UBSan, UB aborts)
# into build-fuzz/ and runs one, or all, for SECONDS each on its seed corpus.
# New inputs go to a temp corpus, never into the repo. Fails on any crash,
# leak, UB, timeout or broken FUZZ_CHECK; the input is then saved under
# build-fuzz/artifacts/NAME/ (add it to fuzz/corpus/NAME/ once fixed).
#
#   scripts/fuzz.sh NAME SECONDS    NAME: claim renew registration heartbeats keys http
#   scripts/fuzz.sh all SECONDS     every target, one after another
#
# FUZZ_KEEP_CORPUS=DIR keeps the grown corpora in DIR/NAME/ instead of a temp
# folder; FUZZ_ARGS adds libFuzzer flags.
set -euo pipefail
cd "$(dirname "$0")/.."

targets=(claim renew registration heartbeats keys http)
if (($# != 2)) || ! [[ $2 =~ ^[0-9]+$ ]]; then
  echo "usage: scripts/fuzz.sh NAME|all SECONDS (NAME: ${targets[*]})" >&2
  exit 2
fi
name=$1
seconds=$2
if [[ $name == all ]]; then
  run=("${targets[@]}")
elif [[ " ${targets[*]} " == *" $name "* ]]; then
  run=("$name")
else
  echo "fuzz: no target $name (${targets[*]})" >&2
  exit 2
fi

# clang and libFuzzer only here: the ordinary build (scripts/setup.sh) does
# not need them.
# FUZZ_NO_BUILD=1: build-fuzz/ is built already (scripts/deep_checks.sh runs
# two fuzzers at once, which must not both run make in one tree).
if [[ -z ${FUZZ_NO_BUILD:-} ]]; then
  scripts/setup.sh --deps-only clang-14 libfuzzer-14-dev
  # The flags scripts/deep_checks.sh gives build-fuzz/ (line tables only), so
  # that neither run rebuilds the other's tree.
  cmake -S . -B build-fuzz -DEDGEALLOC_FUZZ=ON -DEDGEALLOC_UNITY_BUILD=ON -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -gline-tables-only" >/dev/null
  nice cmake --build build-fuzz -j2 --target "${run[@]/#/fuzz_}"
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${run[@]}"; do
  if [[ -n ${FUZZ_KEEP_CORPUS:-} ]]; then
    work=$FUZZ_KEEP_CORPUS/$t
    mkdir -p "$work"
  else
    work=$(mktemp -d "/tmp/edgealloc-corpus-$t-XXXXXX")
  fi
  artifacts=build-fuzz/artifacts/$t
  log=build-fuzz/logs/$t-$(date +%Y%m%d-%H%M%S)-$$.log
  mkdir -p "$artifacts" build-fuzz/logs
  max_len=4096
  [[ $t == http ]] && max_len=12288  # past the 8 KiB header limit
  # The first folder gets the new inputs; the seeds are only read.
  status=0
  nice build-fuzz/fuzz/fuzz_"$t" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2560 \
    -max_len=$max_len -print_final_stats=1 -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} \
    "$work" "fuzz/corpus/$t" >"$log" 2>&1 || status=$?
  [[ -z ${FUZZ_KEEP_CORPUS:-} ]] && rm -rf "$work"
  done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true)
  runs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 || true)
  if ((status == 0)); then
    echo "fuzz $t: ok, $runs(s); ${done_line:-(no DONE line)}"
  else
    echo "fuzz $t: FAILED (exit $status); log $log, input in $artifacts/" >&2
    grep -E 'ERROR: |runtime error|FUZZ_CHECK|SUMMARY|Test unit written' "$log" | head -8 >&2 || true
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: failed: ${failed[*]}" >&2
  exit 1
fi
