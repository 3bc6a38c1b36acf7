#!/usr/bin/env bash
# Shards: does --shards 4 take more durable claims than
# --shards 1, and what is the limit on this machine?
#
#   bench/shards.sh [--quick]    (about 40 s; 10 s with --quick; BIN and LOAD
#                                 as bench/lib.sh, bench/run points them at
#                                 build-bench/)
#
# Fleet: 4 regions r0..r3 of 1,000 containers each. FNV-1a puts them in 4
# different shards with --shards 4 (r1 r2 r3 r0 -> 0 1 2 3) and 2 a shard with
# --shards 2, so the load below is spread evenly at every N. For N = 1, 2, 4:
# a fresh database registered with --shards N, a server with --shards N (sync
# full), and one http_load of C connections closed loop, claim then release,
# connection i in region r(i mod 4). --quick runs N = 1 and 4 only.
#
# Beside cycles/s, each run prints what says where the limit is, over the
# generator's measured window:
#   shards<N>_commit_busy       seconds spent in COMMIT (fsync) a second,
#                               summed over the shards' writers: near 1.0 a
#                               shard means its writer waits on the disk all
#                               the time (fsync-bound)
#   shards<N>_jobs_per_commit   claims and releases a group commit carried
#   shards<N>_commits_per_s     group commits a second, all shards
#   shards<N>_commit_ms         time in COMMIT a commit: if it grows with N,
#                               the shards' fsyncs queue on the disk
#   shards<N>_cpu_busy          busy share of all cores (/proc/stat, anyone's
#                               work, the other engineers' too): near 1.0
#                               means CPU-bound
#   shards<N>_iowait            iowait share of all cores, same window
#   shards<N>_server_cores      cores the server used (utime+stime)
# shards4_vs_1_ratio = cycles/s at 4 over cycles/s at 1.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
CONNECTIONS=${SHARDS_CONNECTIONS:-64}
if ((QUICK)); then
  DURATION=2; WARMUP=0.5; COUNTS=(1 4)
else
  DURATION=8; WARMUP=1; COUNTS=(1 2 4)
fi
REGIONS=(r0 r1 r2 r3)
PER_REGION=1000

specs=()
for r in "${REGIONS[@]}"; do specs+=("$r:default:$PER_REGION:$r-"); done
Fleet "$WORK/fleet.json" "${specs[@]}"

# MetricSum PORT NAME: the sum of every sample of one family (all shards).
MetricSum() {
  curl -fs "http://127.0.0.1:$1/metrics" |
    awk -v n="$2" '$1 == n || index($1, n "{") == 1 { s += $2 } END { printf "%.6f\n", s }'
}
# OkJobs PORT: jobs committed ok, all shards.
OkJobs() {
  curl -fs "http://127.0.0.1:$1/metrics" |
    awk '/^edgealloc_store_jobs_total\{/ && /result="ok"/ { s += $2 } END { printf "%.0f\n", s }'
}
# CpuTicks: "busy iowait total" jiffies of all cores, from /proc/stat.
CpuTicks() {
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i;
                     print t - $5 - $6, $6, t; exit }' /proc/stat
}
# ProcTicks PID: utime + stime of one process, in clock ticks.
ProcTicks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

echo "# shards: ${#REGIONS[@]} regions x $PER_REGION containers, $CONNECTIONS connections" \
  "closed loop, sync full, ${DURATION} s measured after ${WARMUP} s, cores $(nproc)"
HZ=$(getconf CLK_TCK)
for n in "${COUNTS[@]}"; do
  mkdir -p "$WORK/s$n"
  db="$WORK/s$n/x.db"
  "$BIN" register --db "$db" --shards "$n" "$WORK/fleet.json" >/dev/null
  StartServer "$db" "serve-shards$n" --shards "$n" --dead-after-ms 3600000
  out="$WORK/shards$n.txt"
  "$LOAD" --port "$PORT" -c "$CONNECTIONS" --duration "$DURATION" --warmup "$WARMUP" \
    --regions "$(IFS=,; echo "${REGIONS[*]}")" --prefix "shards${n}_" >"$out" &
  load=$!
  # The server-side window opens when the generator's warmup ends and closes
  # when it exits, as in bench/heartbeats.sh.
  sleep "$WARMUP"
  t0=$(Now); c0=$(MetricSum "$PORT" edgealloc_store_commit_seconds_total)
  x0=$(MetricSum "$PORT" edgealloc_store_transactions_total); j0=$(OkJobs "$PORT")
  read -r b0 w0 a0 < <(CpuTicks); p0=$(ProcTicks "$PID")
  wait "$load" || echo "# http_load (shards $n) exited $?" >&2
  t1=$(Now); c1=$(MetricSum "$PORT" edgealloc_store_commit_seconds_total)
  x1=$(MetricSum "$PORT" edgealloc_store_transactions_total); j1=$(OkJobs "$PORT")
  read -r b1 w1 a1 < <(CpuTicks); p1=$(ProcTicks "$PID")
  cat "$out"
  awk -v n="$n" -v t0="$t0" -v t1="$t1" -v c0="$c0" -v c1="$c1" -v x0="$x0" -v x1="$x1" \
      -v j0="$j0" -v j1="$j1" -v b0="$b0" -v b1="$b1" -v w0="$w0" -v w1="$w1" \
      -v a0="$a0" -v a1="$a1" -v p0="$p0" -v p1="$p1" -v hz="$HZ" 'BEGIN {
    s = t1 - t0
    printf "shards%d_commit_busy %.2f s/s\n", n, (c1 - c0) / s
    printf "shards%d_jobs_per_commit %.1f count\n", n, (x1 > x0) ? (j1 - j0) / (x1 - x0) : 0
    printf "shards%d_commits_per_s %.0f 1/s\n", n, (x1 - x0) / s
    printf "shards%d_commit_ms %.2f ms\n", n, (x1 > x0) ? (c1 - c0) * 1000 / (x1 - x0) : 0
    printf "shards%d_cpu_busy %.2f share\n", n, (a1 > a0) ? (b1 - b0) / (a1 - a0) : 0
    printf "shards%d_iowait %.2f share\n", n, (a1 > a0) ? (w1 - w0) / (a1 - a0) : 0
    printf "shards%d_server_cores %.2f cores\n", n, (p1 - p0) / hz / s
  }'
  StopServer "$PID"
done
echo "shards4_vs_1_ratio $(Ratio "$(Get "$WORK/shards4.txt" shards4_cycles_per_s)" \
  "$(Get "$WORK/shards1.txt" shards1_cycles_per_s)") x"
