# shellcheck shell=bash
# Shared by bench/run and the bench scripts; sourced, not run.
#
# Every server is started through StartServer, which records its pid, so the
# EXIT trap stops exactly the servers this script started (never by name: the
# lead's servers and other benches may run beside it on the same machine).

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${BIN:-$ROOT/build/edgealloc}"
LOAD="${LOAD:-$ROOT/build/bench/http_load}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/edgealloc-bench.XXXXXX")"
SERVER_PIDS=()

Cleanup() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do StopServer "$pid"; done
  rm -rf "$WORK"
}
trap Cleanup EXIT
trap 'exit 130' INT TERM

# Where servers and load generators run. Empty (anywhere) unless PinApart
# was called: StartServer runs a server through ON_SERVER, and a script runs
# its load generator through ON_LOAD.
ON_SERVER=()
ON_LOAD=()
PINNING="none: the server and the load generator share every core"

# PinApart: with two cores or more, servers on all but the last (taskset) and
# load generators on the last, so that a server's figure is its own and not
# the generator's too; with one core, nothing (PINNING says which).
PinApart() {
  local n
  n=$(nproc)
  ((n >= 2)) && command -v taskset >/dev/null 2>&1 || return 0
  local server_cpus="0"
  ((n > 2)) && server_cpus="0-$((n - 2))"
  ON_SERVER=(taskset -c "$server_cpus")
  ON_LOAD=(taskset -c "$((n - 1))")
  PINNING="servers on core(s) $server_cpus, load generators on core $((n - 1)) (taskset)"
}

# A bench script's arguments: --quick sets QUICK=1, --help prints the
# script's opening comment (its usage), anything else is refused (exit 2).
ParseQuickFlag() {
  local script=${BASH_SOURCE[1]} arg
  QUICK=0
  for arg in "$@"; do
    case $arg in
      --quick) QUICK=1 ;;
      -h|--help) sed -n '2,/^[^#]/p' "$script" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
      *) echo "bench/$(basename "$script"): unknown argument $arg (try --help)" >&2; exit 2 ;;
    esac
  done
}

# A port the kernel says is free now. Another process could take it before the
# server binds; StartServer then fails loudly instead of measuring someone
# else's server.
FreePort() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# SIGTERM, then SIGKILL after a few seconds: a SIGTERM'd server drains its
# heartbeat queue first, and a queue filled by a flood (up to 10^6 items, at a
# few hundred rows/s with --batch-max 1) would take many minutes. What the
# kill drops was accepted but not yet written; no figure depends on it.
StopServer() {
  local pid=$1
  kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "# server $pid still draining after 5 s of SIGTERM; SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}

# StartServer DB LOGNAME ARGS...: starts a server (through ON_SERVER), sets
# PORT and PID, waits for /readyz (READY_WAIT_S seconds, 10 unless set: a
# server under valgrind needs more).
StartServer() {
  local db=$1 log=$2
  shift 2
  PORT=$(FreePort)
  "${ON_SERVER[@]}" "$BIN" serve --db "$db" --listen "127.0.0.1:$PORT" "$@" >"$WORK/$log.log" 2>&1 &
  PID=$!
  SERVER_PIDS+=("$PID")
  for _ in $(seq 1 $((${READY_WAIT_S:-10} * 10))); do
    if curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then return 0; fi
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.1
  done
  echo "server did not become ready:" >&2
  cat "$WORK/$log.log" >&2
  exit 1
}

# Metric PORT NAME: the value of one unlabelled sample of /metrics. awk reads
# to the end: an early exit would SIGPIPE curl, which pipefail makes fatal.
Metric() {
  curl -fs "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n && !v { v = $2 } END { print v }'
}

# MetricSum PORT NAME [SCALE]: a /metrics counter of one server, summed over
# its labels, times SCALE (1 by default), as an integer.
MetricSum() {
  curl -fs "http://127.0.0.1:$1/metrics" |
    awk -v n="$2" -v k="${3:-1}" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%d\n", s * k }'
}

Now() { date +%s.%N; }

# Ratio A B: A / B with 3 decimals (awk: bash has no floats); nan unless
# both are numbers and B is not 0 (a figure that was skipped or is nan).
Ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN {
    num = "^-?[0-9]+([.][0-9]*)?$"
    if (a !~ num || b !~ num || b == 0) print "nan"; else printf "%.3f\n", a / b }'
}

# Median: the middle of the numbers on stdin (the mean of the two middle
# ones for an even count).
Median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# Get FILE NAME: the value of `NAME value unit` in a file of http_load output.
Get() { awk -v n="$2" '$1 == n { print $2; exit }' "$1"; }

# Fleet FILE SPEC...: a registration file, SPEC = region:pool:count:idprefix.
Fleet() {
  local out=$1
  shift
  python3 - "$out" "$@" <<'EOF'
import json, sys
out, specs = sys.argv[1], sys.argv[2:]
cs = []
for spec in specs:
    region, pool, count, prefix = spec.split(":")
    cs += [{"id": f"{prefix}{i}", "region": region, "pool": pool, "latency_ms": i % 50}
           for i in range(int(count))]
json.dump({"containers": cs}, open(out, "w"))
EOF
}

Header() {
  echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -n)"
  echo "# sqlite $(sqlite3 :memory: 'select sqlite_version()' 2>/dev/null || echo unknown)" \
    "(the system libsqlite3 the server links; CMake found" \
    "$(awk -F'[][]' '/^FIND_PACKAGE_MESSAGE_DETAILS_SQLite3/ { print $6 }' "$(dirname "$BIN")/CMakeCache.txt" 2>/dev/null))"
  echo "# sync full (the server's default; every claim and batch commit is fsynced)"
  # The cache of the build the server binary came from (build-bench/ under bench/run).
  echo "# build $(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$(dirname "$BIN")/CMakeCache.txt" 2>/dev/null || echo unknown)"
  echo "# cores $(nproc) (the load generator and the server share them)"
  echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) before the run"
}
