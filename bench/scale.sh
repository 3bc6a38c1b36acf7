#!/usr/bin/env bash
# Cost as the pool grows: claims a second over HTTP with
# 1,000, 100,000 and 1,000,000 registered containers, and the server's memory
# at 1,000,000.
#
#   bench/scale.sh           (about 1.5 minutes; needs the server, the load
#                             generator and load_fleet built: BIN, LOAD and
#                             LOAD_FLEET, by default under build/)
#   bench/scale.sh --quick   (about 15 s: 1k and 1M only, 3 s each; 100k is
#                             printed as skipped; the 1M file is loaded once
#                             and copied from a cache under ${TMPDIR:-/tmp}
#                             for half an hour, see LoadDb)
#
# What is compared. The claim walks the partial index containers_claimable
# (region, pool, latency_ms) WHERE status = 'available' for one (region,
# pool), and takes one of the K cheapest. So every N has the same claim pool:
# 1,000 containers of region `bench`, pool `default`, where the 64 connections
# claim and release. The other N - 1,000 are elsewhere, all available (so all
# in the claimable index too), half in region `bench` under pool `other`
# (beside the claim pool in every index) and half over 8 regions `fill0..7`.
# A claim that stays an index walk costs the same at every N, up to the depth
# of the B-trees and the cache misses of a bigger file; one that scans costs
# 1,000 times more at 1M than at 1k. The ratio 1M over 1k is then what growth
# alone costs, and the mirror's refresh (one GROUP BY over every row, every
# --mirror-refresh-ms) is part of that cost, as in production.
#
# The loaded rows carry the load time as their heartbeat, and nothing sends
# heartbeats during the run, so the servers run with --dead-after-ms 3600000:
# otherwise after 30 s the claim's health filter would skip every container
# and the reaper would kill them all, which is another benchmark.
#
# For each N: a fresh database from load_fleet, `edgealloc serve --sync full`
# (the default page cache and mirror period), timed from start to /readyz,
# then http_load claim+release cycles, 64 connections, closed loop; then
# VmRSS and VmHWM of the server from /proc/<pid>/status, and the server's CPU
# (all of it, and its mirror threads') over the generator's measured window.
# The full run measures 1k, 100k, 1M and 1k again, and takes the 1k figures
# as the mean of both, so that other work on the machine that comes or goes
# during the run weighs on both ends of the ratio.
#
# Prints `name value unit` (or `name skipped why`): claim_rate_1k_per_s,
# claim_rate_100k_per_s, claim_rate_1m_per_s, claim_rate_1m_vs_1k_ratio,
# server_cpu_per_cycle_1m_vs_1k_ratio (steadier than rates on a shared
# machine), rss_mb_1m, rss_hwm_mb_1m, startup_ms_1m, load_fleet_seconds_1m;
# before them each run's figures, prefixed n1k_, n100k_, n1m_, n1k_again_
# (the generator's lines included).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD_FLEET="${LOAD_FLEET:-$ROOT/build/bench/load_fleet}"
ParseQuickFlag "$@"

CLAIM_POOL=1000
DURATION=10
((QUICK)) && DURATION=3
WARMUP=1
declare -A COUNT=([1k]=1000 [100k]=100000 [1m]=1000000)

Header
echo "# binaries: $BIN, $LOAD, $LOAD_FLEET (the server's build:" \
  "$(awk -F= '/^CMAKE_BUILD_TYPE:/ { print $2 }' "$(dirname "$BIN")/CMakeCache.txt" 2>/dev/null || echo unknown))"
echo "# claim pool: $CLAIM_POOL containers of bench/default at every N; the rest available elsewhere"

# Proc PID FIELD: a /proc/PID/status field in MB (the file says kB).
Proc() { awk -v f="$2:" '$1 == f { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }

# Cpu PID [COMM]: CPU seconds (utime + stime) of the server so far, or of its
# threads whose name starts with COMM (kvmirror names its mirror-<shard>).
Cpu() {
  local t ticks=0
  for t in /proc/"$1"/task/*; do
    [[ -z ${2:-} || "$(cat "$t/comm" 2>/dev/null)" == "$2"* ]] || continue
    ticks=$((ticks + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat" 2>/dev/null || echo 0)))
  done
  awk -v s="$ticks" -v t="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", s / t }'
}

# LoadDb SIZE DB SPEC...: writes DB with load_fleet and sets LOADED to the
# seconds it took (or "cached"). In --quick mode a 1M file costs more than
# the run (6 to 14 s on this machine), so it is copied from a cache when one
# was written by the same load_fleet binary with the same specs less than 30
# minutes ago (the rows' heartbeats must stay younger than --dead-after-ms);
# the cache holds one file, replaced when the key changes. The full run
# always loads afresh.
CACHE="${TMPDIR:-/tmp}/edgealloc-scale-cache"
LoadDb() {
  local size=$1 db=$2 key cached
  shift 2
  if ((QUICK)) && [[ $size == 1m ]]; then
    key=$(printf '%s\n' "$(sha1sum <"$LOAD_FLEET")" "$@" | sha1sum | cut -c1-16)
    cached="$CACHE/$key.db"
    if [[ -n $(find "$cached" -mmin -30 2>/dev/null) ]]; then
      cp "$cached" "$db"
      LOADED=cached
      return
    fi
    rm -rf "$CACHE"
    mkdir -p "$CACHE"
    "$LOAD_FLEET" --db "$db" "$@" >"$WORK/load$size.txt"
    cp "$db" "$cached.tmp" && mv "$cached.tmp" "$cached"
  else
    "$LOAD_FLEET" --db "$db" "$@" >"$WORK/load$size.txt"
  fi
  LOADED=$(Get "$WORK/load$size.txt" load_fleet_seconds)
}

# Run SIZE LABEL: load, serve, measure, stop. Every figure of the run is
# printed with the prefix LABEL_ (the generator's too) and kept in FIG.
declare -A FIG
Emit() {
  FIG[$1]=$2
  echo "$1 $2 $3"
}
Run() {
  local size=$1 label=$2 n=${COUNT[$1]} db="$WORK/$2/x.db" rest half specs t0 t1 c0 c1 m0 m1 load
  mkdir -p "$WORK/$label"
  rest=$((n - CLAIM_POOL))
  half=$((rest / 2))
  specs=("bench:default:$CLAIM_POOL:c-")
  ((half > 0)) && specs+=("bench:other:$half:o-")
  local r left=$((rest - half))
  for r in 0 1 2 3 4 5 6 7; do
    local share=$((left / 8 + (r < left % 8 ? 1 : 0)))
    ((share > 0)) && specs+=("fill$r:default:$share:f$r-")
  done
  LoadDb "$size" "$db" "${specs[@]}"
  if [[ $LOADED == cached ]]; then
    Emit "${label}_load_fleet_seconds" skipped cached
  else
    Emit "${label}_load_fleet_seconds" "$LOADED" s
  fi
  Emit "${label}_db_mb" "$(du -m "$db" | cut -f1)" MB
  t0=$(Now)
  StartServer "$db" "serve$label" --sync full --dead-after-ms 3600000
  t1=$(Now)
  Emit "${label}_startup_ms" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }')" ms
  "$LOAD" --port "$PORT" -c 64 --duration "$DURATION" --warmup "$WARMUP" --region bench \
    --prefix "${label}_" >"$WORK/claims$label.txt" &
  load=$!
  # The CPU window matches the generator's measured one: from the end of its
  # warmup to its exit.
  sleep "$WARMUP"
  t0=$(Now); c0=$(Cpu "$PID"); m0=$(Cpu "$PID" mirror)
  wait "$load" || echo "# http_load exited $?" >&2
  t1=$(Now); c1=$(Cpu "$PID"); m1=$(Cpu "$PID" mirror)
  cat "$WORK/claims$label.txt"
  local rate
  rate=$(Get "$WORK/claims$label.txt" "${label}_cycles_per_s")
  FIG[${label}_cycles_per_s]=$rate
  Emit "${label}_rss_mb" "$(Proc "$PID" VmRSS)" MB
  Emit "${label}_rss_hwm_mb" "$(Proc "$PID" VmHWM)" MB
  # CPU a cycle is steadier than cycles a second on a shared machine: the
  # server's, every thread (mirror and reapers included), over the window.
  Emit "${label}_server_cpu_us_per_cycle" "$(awk -v a="$c0" -v b="$c1" -v s="$t0" -v e="$t1" \
    -v r="$rate" 'BEGIN { if (r > 0) printf "%.1f", (b - a) / (e - s) / r * 1e6; else print "nan" }')" us
  Emit "${label}_mirror_cpu_share" "$(awk -v a="$m0" -v b="$m1" -v s="$t0" -v e="$t1" \
    'BEGIN { printf "%.3f", (b - a) / (e - s) }')" cores
  StopServer "$PID"
  rm -rf "$WORK/$label"
}

# Mean A B: the mean of two figures.
Mean() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (a + b) / 2 }'; }

if ((QUICK)); then
  Run 1k n1k
  Run 1m n1m
  rate_1k=${FIG[n1k_cycles_per_s]}
  cpu_1k=${FIG[n1k_server_cpu_us_per_cycle]}
  echo "claim_rate_100k_per_s skipped quick"
else
  # 1k before and after the others, so that a change in the machine's load
  # from other work during the run weighs on both ends of the ratio.
  Run 1k n1k
  Run 100k n100k
  Run 1m n1m
  Run 1k n1k_again
  rate_1k=$(Mean "${FIG[n1k_cycles_per_s]}" "${FIG[n1k_again_cycles_per_s]}" | cut -d. -f1)
  cpu_1k=$(Mean "${FIG[n1k_server_cpu_us_per_cycle]}" "${FIG[n1k_again_server_cpu_us_per_cycle]}")
  echo "claim_rate_100k_per_s ${FIG[n100k_cycles_per_s]} 1/s"
fi
echo "claim_rate_1k_per_s $rate_1k 1/s"
echo "claim_rate_1m_per_s ${FIG[n1m_cycles_per_s]} 1/s"
echo "claim_rate_1m_vs_1k_ratio $(Ratio "${FIG[n1m_cycles_per_s]}" "$rate_1k") x"
echo "server_cpu_per_cycle_1m_vs_1k_ratio $(Ratio "${FIG[n1m_server_cpu_us_per_cycle]}" "$cpu_1k") x"
echo "rss_mb_1m ${FIG[n1m_rss_mb]} MB"
echo "rss_hwm_mb_1m ${FIG[n1m_rss_hwm_mb]} MB"
echo "startup_ms_1m ${FIG[n1m_startup_ms]} ms"
if [[ ${FIG[n1m_load_fleet_seconds]} == cached ]]; then
  echo "load_fleet_seconds_1m skipped cached"
else
  echo "load_fleet_seconds_1m ${FIG[n1m_load_fleet_seconds]} s"
fi
