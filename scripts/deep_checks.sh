#!/usr/bin/env bash
# The deep checks, one after another, each a step that passes or fails; the
# last line says `N passed, M failed` and the exit status is 1 if any failed.
# Timings on 2 shared cores are in docs/fuzzing.md.
#
#   scripts/deep_checks.sh                 every step below, in order
#   scripts/deep_checks.sh --builds        steps 1 and 4's builds only
#   scripts/deep_checks.sh --after-builds  the rest, the trees being built
#
#   1. build-fuzz/ (clang-14, ASan + UBSan, UB aborts, libFuzzer coverage):
#      every fuzz target and every test binary, one tree for both;
#   2. each fuzz target for FUZZ_SECONDS (20) on its seed corpus, two at once;
#   3. ctest over the tests in that tree: the C++ test binaries and the
#      python and browser tests, which run the sanitized `edgealloc`, on
#      SQLite (the PostgreSQL-only suites but the writer's are the plain
#      run's: EDGEALLOC_TEST_ENGINES=sqlite, asan_exclude);
#   4. build-tsan/ (clang-14, ThreadSanitizer): the writer, batcher, mirror
#      and server tests under ctest.
#
# A sanitizer report anywhere fails its step, also one from a server a python
# test started and killed: reports go to files (log_path), which are checked
# after ctest, not only to the stderr a test may ignore.
set -uo pipefail
cd "$(dirname "$0")/.."

fuzz_seconds=${FUZZ_SECONDS:-20}
# Line tables are all a sanitizer report needs (function, file and line a
# frame); full debug info made the two clang trees about a fifth slower to
# build. scripts/fuzz.sh configures build-fuzz/ with the same flags.
sanitizer_cxx_flags="-O1 -gline-tables-only"
fuzz_targets=(claim renew registration heartbeats keys http)
# ThreadSanitizer builds the threaded tests only: the store writer, the
# batcher, the mirror and the server.
tsan_binaries=(store_sqlite_test batcher_test stats_test mirror_test snapshot_test
               server_http_test server_api_test server_ops_test server_test)
# Test names (ctest -R) for ThreadSanitizer: those binaries' cases, but not
# the python server tests (the ASan tree runs them; they need edgealloc) nor
# the placeholders ctest keeps for binaries this tree does not build (e.g.
# a binary left out of the tree).
tsan_tests='^(writer:|batcher|stats:|mirror:|snapshot:|server/)'
# Left out of the ASan tree's ctest: PostgreSQL alone, covered by the plain
# run (the PostgreSQL writer's own tests, pg_writer:, stay in; the binaries
# of the others are not even built there, EDGEALLOC_PG_ONLY_TESTS=OFF), and the
# server under libfaketime (its LD_PRELOAD beside the sanitizer runtime), as
# the nemesis (both engines) and the multi-node clock skew are: the plain run covers both.
# Nor the checks that never run a binary of this tree (documents, rules,
# the nemesis checkers' self-tests): the plain run's answer is theirs. Nor
# the dashboard's check in a headless browser (72 s in the plain run, about
# as long as the rest of the python server tests together), which tests the
# page's script; the server routes it calls run sanitized in their own tests.
# Nor the Python server tests on PostgreSQL (the events history over three
# nodes, the webhooks' PostgreSQL cases: 105 s of test time sanitized), as
# the C++ suites of PostgreSQL alone are not.
# Nor the tests of the Python side (the client library, the example agent
# and fleet loop) and of the metrics' text format (promtool): 111 s of
# a core sanitized, and what they call of the server runs sanitized in the
# route tests and the API model.
asan_exclude='^(server/dashboard_check$|server/events_history_postgres$|webhooks/postgres_.*|server/promtool_check_metrics$|clients/python$|agent/.*|examples/.*|fault/nemesis$|fault/sqlite_nemesis$|fault/deafness_outage$|fault/clock_step$|fault/db_clock_step$|server/cursor_nodes$|server/tenant_limits_mismatch$|scripts/try_postgres$|docs/(words|files)$|packaging/(prometheus_rules|grafana_dashboard_json)$|openapi/(lint|api_md)$|layering$|fault/(sqlite_)?nemesis_checker$)'
tsan_exclude='^server/(events_history_sqlite|events_history_postgres|api_model|promtool_check_metrics|fd_exhaustion|logging|dashboard_check|client_commands|deaths_logged|keys_reload|refusal_log|cursor_nodes|tenant_limits_mismatch)$|_NOT_BUILT'

passed=0
failed=0
failures=()
step() {
  local name=$1
  shift
  local start=$SECONDS
  echo "=== $name"
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures+=("$name")
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

# No file in DIR: no sanitizer report was written there.
no_reports() {
  local dir=$1
  if compgen -G "$dir/*" >/dev/null; then
    echo "sanitizer reports in $dir:" >&2
    for f in "$dir"/*; do
      echo "--- $f" >&2
      head -40 "$f" >&2
    done
    return 1
  fi
}

deps() { scripts/setup.sh --deps-only clang-14 libfuzzer-14-dev; }

# Everything but the benchmark programs: the fuzz targets, edgealloc and
# every test binary.
asan_build() {
  cmake -S . -B build-fuzz -DEDGEALLOC_FUZZ=ON -DEDGEALLOC_UNITY_BUILD=ON -DEDGEALLOC_BENCH=OFF -DEDGEALLOC_PG_ONLY_TESTS=OFF \
    -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="$sanitizer_cxx_flags" \
    >/dev/null && nice cmake --build build-fuzz -j2
}

asan_ctest() {
  local logs=$PWD/build-fuzz/sanitizer-logs
  rm -rf "$logs" && mkdir -p "$logs"
  # SQLite only, and none of the suites that are PostgreSQL alone but the
  # writer's (the plain run covers them; their servers would take most of
  # this step's time): the engine's own code still runs sanitized.
  # The API model explores 200 examples in the plain run; sanitized, each
  # step is several times slower, so 30 here. The fault sweeps take every
  # fault point in the plain run, every third here (EDGEALLOC_FAULT_STRIDE):
  # sanitized, the full sweeps were 300 s of a core.
  MODEL_EXAMPLES=30 EDGEALLOC_FAULT_STRIDE=3 EDGEALLOC_TEST_ENGINES=sqlite ASAN_OPTIONS=detect_leaks=1:log_path=$logs/asan \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan \
    ctest --test-dir build-fuzz --output-on-failure -j2 --timeout 600 \
    -E "$asan_exclude"
  local status=$?
  no_reports "$logs" && return $status
}

# Fuzzes the targets named at once, build-fuzz/ being built; fails if any did.
fuzz_together() {
  local pids=() status=0
  for t in "$@"; do
    FUZZ_NO_BUILD=1 scripts/fuzz.sh "$t" "$fuzz_seconds" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || status=1; done
  return $status
}

tsan_build() {
  cmake -S . -B build-tsan -DEDGEALLOC_UNITY_BUILD=ON -DEDGEALLOC_BENCH=OFF -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG="$sanitizer_cxx_flags" -DCMAKE_CXX_FLAGS="-fsanitize=thread" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null &&
    nice cmake --build build-tsan -j2 --target "${tsan_binaries[@]}"
}

tsan_ctest() {
  local logs=$PWD/build-tsan/sanitizer-logs
  rm -rf "$logs" && mkdir -p "$logs"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:log_path=$logs/tsan \
    ctest --test-dir build-tsan --output-on-failure -j2 --timeout 600 \
    -R "$tsan_tests" -E "$tsan_exclude"
  local status=$?
  no_reports "$logs" && return $status
}

# Every step by default; --builds only the two trees' builds (.ci/run runs
# them at the lowest priority while the ordinary tests run), --after-builds
# every step but those (then, once they are built).
mode=${1:-all}
case $mode in
  all | --builds | --after-builds) ;;
  *)
    echo "deep_checks: unknown argument $mode (scripts/deep_checks.sh [--builds|--after-builds])" >&2
    exit 2
    ;;
esac

start=$SECONDS
if [[ $mode != --after-builds ]]; then
  step "deps (clang-14, libfuzzer-14-dev)" deps
  step "asan+ubsan build (build-fuzz/)" asan_build
fi
if [[ $mode == --builds ]]; then
  step "tsan build (build-tsan/)" tsan_build
else
  # Two fuzzers at a time, one a core: each is a single process.
  for ((i = 0; i < ${#fuzz_targets[@]}; i += 2)); do
    pair=("${fuzz_targets[@]:i:2}")
    step "fuzz ${pair[*]} ${fuzz_seconds}s" fuzz_together "${pair[@]}"
  done
  step "asan+ubsan ctest (all tests, SQLite; PostgreSQL: the writer)" asan_ctest
  [[ $mode == all ]] && step "tsan build (build-tsan/)" tsan_build
  step "tsan ctest (writer, batcher, mirror, server)" tsan_ctest
fi

echo "deep checks took $((SECONDS - start)) s"
((failed)) && echo "failed: ${failures[*]}"
echo "$passed passed, $failed failed"
((failed == 0))
