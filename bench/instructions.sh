#!/usr/bin/env bash
# The server's instructions a durable claim+release cycle and a /healthz
# request: the server under valgrind's callgrind, which counts instructions
# whatever the machine's noise, so that a change to the request path can be
# judged by one run before and one after (timed runs on a shared machine
# move by more than most such changes).
#
#   bench/instructions.sh           (about 2 minutes: 2,000 cycles, 4,000 /healthz)
#   bench/instructions.sh --quick   (500 cycles, 1,000 /healthz)
#
# One server (sync full, 1,000 containers, as bench/run's HTTP runs) under
# callgrind; http_load (not under callgrind) runs claim then release on 16
# connections, then /healthz. Each phase: a warm-up, the counters zeroed
# (callgrind_control -z), the measured run, then the counters dumped
# (callgrind_control -d); its instructions over the releases (or requests)
# /metrics counted in between. The /metrics reads themselves are inside the
# window: two requests among thousands.
#
# Prints `name value unit`: server_instructions_per_cycle,
# server_instructions_per_healthz, cycle_vs_healthz_instructions_ratio, and
# the top functions of each phase (inclusive, by callgrind_annotate) as `#`
# notes. Set INSTRUCTIONS_KEEP=DIR to keep the callgrind files.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ParseQuickFlag "$@"
"$ROOT/scripts/setup.sh" --deps-only valgrind

CYCLES=2000
((QUICK)) && CYCLES=500

Header
Fleet "$WORK/fleet.json" bench:default:1000:i-
"$BIN" register --db "$WORK/instructions.db" "$WORK/fleet.json" >/dev/null

# StartServer through callgrind: ON_SERVER is the prefix it runs the server
# with. Counting starts at once; each phase zeroes it before its window.
ON_SERVER=(valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.%p.out")
READY_WAIT_S=120 StartServer "$WORK/instructions.db" serve-instructions --sync full \
  --dead-after-ms 3600000
CG_PID=$PID

# ShortNames N: the first N of callgrind_annotate's function lines as `#   Ir share name`,
# the name without its template and call arguments (Beast's run to pages),
# the process-wide lines (thread starts, the totals) left out.
ShortNames() {
  python3 -c '
import re, sys
shown = 0
for line in sys.stdin:
    m = re.match(r"\s*([0-9,]+) \(\s*([0-9.]+)%\)\s+(\S+):(.*?)(?: \[.*\])?$", line)
    if not m or m.group(3) != "???": continue
    name = m.group(4)
    while True:
        shorter = re.sub(r"<[^<>]*>", "", name)
        if shorter == name: break
        name = shorter
    name = re.sub(r"\([^()]*\)", "()", name)
    if shown < int(sys.argv[1]):
        print(f"#   {m.group(1):>14} {m.group(2):>6}%  {name[:110]}")
    shown += 1
' "$1"
}

# Phase NAME COUNTER MODE_ARGS...: runs http_load until the server's COUNTER
# moved by at least the phase's target, the counters zeroed first and dumped
# after; prints the server's instructions per unit of COUNTER.
Phase() {
  local name=$1 counter=$2 target=$3
  shift 3
  "$LOAD" --port "$PORT" -c 16 --duration 2 --warmup 0 --prefix warm_ "$@" >/dev/null
  callgrind_control -z "$CG_PID" >/dev/null 2>&1
  local n0 n1
  n0=$(MetricSum "$PORT" "$counter")
  local rounds=0
  while :; do
    "$LOAD" --port "$PORT" -c 16 --duration 3 --warmup 0 --prefix run_ "$@" >/dev/null
    n1=$(MetricSum "$PORT" "$counter")
    ((n1 - n0 >= target)) && break
    # A server that stopped answering would keep this loop going for ever.
    if ((++rounds >= 40)); then
      echo "bench/instructions.sh: $name counted $((n1 - n0)) of $target in $rounds runs" >&2
      exit 1
    fi
  done
  callgrind_control -d "$name" "$CG_PID" >/dev/null 2>&1
  local file
  file=$(ls -t "$WORK"/callgrind.*.out.* | head -1)
  local ir
  ir=$(awk '/^summary:/ { print $2 }' "$file")
  awk -v ir="$ir" -v n=$((n1 - n0)) -v name="$name" \
    'BEGIN { printf "server_instructions_per_%s %.0f count\n", name, ir / n }'
  echo "# $name: $((n1 - n0)) counted, $ir instructions; the top functions, inclusive:"
  callgrind_annotate --inclusive=yes "$file" 2>/dev/null | ShortNames 40
  if [[ -n ${INSTRUCTIONS_KEEP:-} ]]; then
    mkdir -p "$INSTRUCTIONS_KEEP"
    cp "$file" "$INSTRUCTIONS_KEEP/$name.callgrind"
  fi
}

Phase cycle edgealloc_releases_total "$CYCLES" --region bench >"$WORK/cycle.txt"
Phase healthz edgealloc_http_requests_total $((CYCLES * 2)) --mode healthz >"$WORK/healthz.txt"
cat "$WORK/cycle.txt" "$WORK/healthz.txt"
cycle=$(Get "$WORK/cycle.txt" server_instructions_per_cycle)
healthz=$(Get "$WORK/healthz.txt" server_instructions_per_healthz)
echo "cycle_vs_healthz_instructions_ratio $(Ratio "$cycle" "$healthz") x"
