#!/usr/bin/env bash
# Capacity mirror: do capacity reads and mirror refreshes stay off
# the claim path?
#
#   bench/mirror.sh              (about 1.5 minutes; needs build/edgealloc and
#                                 build/bench/http_load built)
#
# Pool: 10,000 containers, region `bench` (1,000, where the claims go) and
# nine more regions of two pools each, so a refresh counts 19 (region, pool)
# pairs over every row, not one.
#
# 1. One server, --mirror-refresh-ms 1000 (the default): claim/release cycles
#    (64 connections, closed loop, 10 s) alone, then with 2,000 GET
#    /v1/capacity a second beside them (8 connections, open loop).
#    claim_rate_with_capacity_reads_ratio = cycles/s with over without (goal
#    >= 0.95). Then the read rate the mirror sustains alone (32 connections,
#    closed loop, 5 s).
# 2. Claim p99 with --mirror-refresh-ms 100 against 3600000 (never, after the
#    first read): one fresh server each, run in turn never, 100, never, 100
#    (one server at a time, so an idle refreshing server costs the other
#    nothing). claim_p99_refresh100_vs_never_ratio = mean p99 at 100 over mean
#    p99 at never; each round's ratio is printed too, to show the noise.
#
# Prints `name value unit` lines; the generator's own lines carry a prefix.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

DURATION=10
WARMUP=1
CLAIMS=(-c 64 --duration "$DURATION" --warmup "$WARMUP" --region bench)

Header

specs=("bench:default:1000:c-")
for r in 1 2 3 4 5 6 7 8 9; do
  specs+=("r$r:chrome:500:r$r-chrome-" "r$r:sandbox:500:r$r-sandbox-")
done
Fleet "$WORK/fleet.json" "${specs[@]}"
"$BIN" register --db "$WORK/template.db" "$WORK/fleet.json" >/dev/null

FreshDb() {
  mkdir -p "$WORK/$1"
  cp "$WORK/template.db" "$WORK/$1/x.db"
  echo "$WORK/$1/x.db"
}

SERVE_ARGS=(--dead-after-ms 3600000)

# 1. Reads beside claims, and the read ceiling.
db=$(FreshDb reads)
StartServer "$db" serve-reads "${SERVE_ARGS[@]}" --mirror-refresh-ms 1000
"$LOAD" --port "$PORT" "${CLAIMS[@]}" --prefix off_ | tee "$WORK/off.txt"
# The reads start two seconds before the claims are measured (one of sleep,
# one of the claims' warmup) and end about a second after, so the whole claim
# window runs under them.
"$LOAD" --port "$PORT" --mode capacity --rate 2000 -c 8 --duration "$((DURATION + 3))" \
  --warmup 0 --prefix reads_ >"$WORK/reads.txt" &
reads=$!
sleep 1
"$LOAD" --port "$PORT" "${CLAIMS[@]}" --prefix on_ | tee "$WORK/on.txt"
wait "$reads" || echo "# http_load (reads) exited $?" >&2
cat "$WORK/reads.txt"
echo "claim_rate_with_capacity_reads_ratio" \
  "$(Ratio "$(Get "$WORK/on.txt" on_cycles_per_s)" "$(Get "$WORK/off.txt" off_cycles_per_s)") x"
"$LOAD" --port "$PORT" --mode capacity -c 32 --duration 5 --warmup 1 --prefix ceiling_
StopServer "$PID"

# 2. Refresh every 100 ms against never.
P99_100=()
P99_NEVER=()
for round in 1 2; do
  for refresh in 3600000 100; do
    db=$(FreshDb "refresh$refresh-$round")
    StartServer "$db" "serve-refresh$refresh-$round" "${SERVE_ARGS[@]}" \
      --mirror-refresh-ms "$refresh"
    r0=$(Metric "$PORT" edgealloc_mirror_refreshes_total)
    out="$WORK/refresh$refresh-$round.txt"
    "$LOAD" --port "$PORT" "${CLAIMS[@]}" --prefix "refresh${refresh}_r${round}_" | tee "$out"
    r1=$(Metric "$PORT" edgealloc_mirror_refreshes_total)
    # Shows the refresh ran as asked: about 110 in the 11 s at 100 ms, and
    # none at all (beyond the first) at never.
    echo "refresh${refresh}_r${round}_mirror_refreshes $(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.0f", b - a }') count"
    p99=$(Get "$out" "refresh${refresh}_r${round}_claim_p99_ms")
    if [[ $refresh == 100 ]]; then P99_100+=("$p99"); else P99_NEVER+=("$p99"); fi
    StopServer "$PID"
  done
  echo "claim_p99_refresh100_vs_never_r${round}_ratio" \
    "$(Ratio "${P99_100[-1]}" "${P99_NEVER[-1]}") x"
done
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { print s / NR }'; }
echo "claim_p99_refresh100_vs_never_ratio" \
  "$(Ratio "$(mean "${P99_100[@]}")" "$(mean "${P99_NEVER[@]}")") x"
