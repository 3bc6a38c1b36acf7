#!/usr/bin/env bash
# Cost as the pool grows (issue #5 goal 4): claims a second over HTTP with
# 1,000, 100,000 and 1,000,000 registered containers, and the server's memory
# at 1,000,000.
#
#   bench/scale.sh           (about 1.5 minutes; needs the server, the load
#                             generator and load_fleet built: BIN, LOAD and
#                             LOAD_FLEET, by default under build/)
#   bench/scale.sh --quick   (about 15 s: 1k and 1M only, 3 s each; 100k is
#                             printed as skipped)
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
# (the default page cache and refresh), timed from start to /readyz, then
# http_load claim+release cycles, 64 connections, closed loop; then VmRSS and
# VmHWM of the server from /proc/<pid>/status, and the CPU its capacity
# mirror thread spent over the run.
#
# Prints `name value unit` (or `name skipped why`): claim_rate_1k_per_s,
# claim_rate_100k_per_s, claim_rate_1m_per_s, claim_rate_1m_vs_1k_ratio,
# rss_mb_1m, rss_hwm_mb_1m, startup_ms_1m, load_fleet_seconds_1m, and the same
# per N; the generator's own lines carry a prefix (n1k_, n100k_, n1m_).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD_FLEET="${LOAD_FLEET:-$ROOT/build/bench/load_fleet}"
QUICK=0
for arg in "$@"; do
  case $arg in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,40p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/scale.sh: unknown argument $arg (try --help)" >&2; exit 2 ;;
  esac
done

CLAIM_POOL=1000
if ((QUICK)); then
  DURATION=3
  SIZES=(1k 1m)
else
  DURATION=10
  SIZES=(1k 100k 1m)
fi
WARMUP=1
declare -A COUNT=([1k]=1000 [100k]=100000 [1m]=1000000)

Header
echo "# claim pool: $CLAIM_POOL containers of bench/default at every N; the rest available elsewhere"

# Proc PID FIELD: a /proc/PID/status field in MB (the file says kB).
Proc() { awk -v f="$2:" '$1 == f { printf "%.1f\n", $2 / 1024 }' "/proc/$1/status"; }

# MirrorCpu PID: CPU seconds of the server's capacity mirror threads so far
# (kvmirror names them edgealloc-mirror*; utime + stime, in clock ticks).
MirrorCpu() {
  local tick t sum=0
  tick=$(getconf CLK_TCK)
  for t in /proc/"$1"/task/*; do
    [[ "$(cat "$t/comm" 2>/dev/null)" == mirror* ]] || continue
    sum=$((sum + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$t/stat")))
  done
  awk -v s="$sum" -v t="$tick" 'BEGIN { printf "%.2f\n", s / t }'
}

# Run SIZE: load, serve, measure, stop.
Run() {
  local size=$1 n=${COUNT[$1]} db="$WORK/$1/x.db" rest half specs t0 t1 m0 m1
  mkdir -p "$WORK/$size"
  rest=$((n - CLAIM_POOL))
  half=$((rest / 2))
  specs=("bench:default:$CLAIM_POOL:c-")
  ((half > 0)) && specs+=("bench:other:$half:o-")
  local r left=$((rest - half))
  for r in 0 1 2 3 4 5 6 7; do
    local share=$((left / 8 + (r < left % 8 ? 1 : 0)))
    ((share > 0)) && specs+=("fill$r:default:$share:f$r-")
  done
  "$LOAD_FLEET" --db "$db" "${specs[@]}" >"$WORK/load$size.txt"
  echo "load_fleet_seconds_$size $(Get "$WORK/load$size.txt" load_fleet_seconds) s"
  echo "db_mb_$size $(du -m "$db" | cut -f1) MB"
  t0=$(Now)
  StartServer "$db" "serve$size" --sync full --dead-after-ms 3600000
  t1=$(Now)
  echo "startup_ms_$size $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
  m0=$(MirrorCpu "$PID")
  "$LOAD" --port "$PORT" -c 64 --duration "$DURATION" --warmup "$WARMUP" --region bench \
    --prefix "n${size}_" >"$WORK/claims$size.txt" || echo "# http_load exited $?" >&2
  m1=$(MirrorCpu "$PID")
  cat "$WORK/claims$size.txt"
  eval "RATE_$size=$(Get "$WORK/claims$size.txt" "n${size}_cycles_per_s")"
  echo "claim_rate_${size}_per_s $(Get "$WORK/claims$size.txt" "n${size}_cycles_per_s") 1/s"
  echo "rss_mb_$size $(Proc "$PID" VmRSS) MB"
  echo "rss_hwm_mb_$size $(Proc "$PID" VmHWM) MB"
  echo "mirror_cpu_share_$size $(awk -v a="$m0" -v b="$m1" -v d="$((DURATION + WARMUP))" \
    'BEGIN { printf "%.3f", (b - a) / d }') cores"
  StopServer "$PID"
  rm -rf "$WORK/$size"
}

for size in "${SIZES[@]}"; do Run "$size"; done
((QUICK)) && echo "claim_rate_100k_per_s skipped quick"
echo "claim_rate_1m_vs_1k_ratio $(Ratio "$RATE_1m" "$RATE_1k") x"
