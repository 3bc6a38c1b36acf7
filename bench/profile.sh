#!/usr/bin/env bash
# Where a claim's time goes: perf of the server under the same load
# as http_durable_cycles_per_s, sorted by part of the request path (parse,
# route, JSON, claim and release SQL, commit, response write) by
# bench/perf_breakdown.py.
#
#   bench/profile.sh [SECONDS]   (about 15 s; BIN and LOAD as bench/lib.sh:
#                                 build/ unless set, e.g. to build-bench/ after
#                                 bench/run for the Release build)
#
# One server (sync full, 1 shard, default io threads) over 1,000 containers,
# http_load 64 connections closed loop, claim then release; perf records the
# server with DWARF call graphs for SECONDS (default 3) in the middle of the
# run. Prints the share of the server's CPU of each part and, from the
# generator's cycles a second, its microseconds of CPU a cycle. The perf data
# stays in the work folder only while the script runs; set PROFILE_KEEP=DIR to
# keep it (server.perf) and its text (server.txt) there.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECONDS_RECORDED=${1:-3}
FREQUENCY=1999
# setup.sh installs only what is missing, perf (linux-perf) among it.
"$ROOT/scripts/setup.sh" --deps-only linux-perf

Header
Fleet "$WORK/fleet.json" bench:default:1000:b-
"$BIN" register --db "$WORK/profile.db" "$WORK/fleet.json" >/dev/null
StartServer "$WORK/profile.db" serve-profile --sync full --dead-after-ms 3600000

# The recording sits inside the measured window: 1 s warmup, then 2 s before
# it starts, and at least 2 s after it ends.
duration=$(awk -v s="$SECONDS_RECORDED" 'BEGIN { print s + 4 }')
"$LOAD" --port "$PORT" -c 64 --duration "$duration" --warmup 1 --region bench \
  --prefix profile_ >"$WORK/load.txt" 2>&1 &
load_pid=$!
sleep 3
perf record -F "$FREQUENCY" --call-graph dwarf,32768 -p "$PID" -o "$WORK/server.perf" \
  -- sleep "$SECONDS_RECORDED" >/dev/null 2>&1
wait "$load_pid" || { cat "$WORK/load.txt" >&2; exit 1; }
grep -E '^profile_(cycles_per_s|double_allocations) ' "$WORK/load.txt"

perf script -i "$WORK/server.perf" 2>/dev/null >"$WORK/server.txt"
python3 "$ROOT/bench/perf_breakdown.py" --frequency "$FREQUENCY" --seconds "$SECONDS_RECORDED" \
  --cycles-per-s "$(Get "$WORK/load.txt" profile_cycles_per_s)" <"$WORK/server.txt"
if [[ -n ${PROFILE_KEEP:-} ]]; then
  mkdir -p "$PROFILE_KEEP"
  cp "$WORK/server.perf" "$WORK/server.txt" "$PROFILE_KEEP/"
fi
