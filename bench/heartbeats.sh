#!/usr/bin/env bash
# Heartbeat ingestion: what batching buys, and what a heartbeat
# flood costs the claim path.
#
#   bench/heartbeats.sh          (about 1.5 minutes; needs build/edgealloc and
#                                 build/bench/http_load built, or BIN and LOAD
#                                 naming others, as bench/run does)
#
# 1. The same flood (16 connections x 100 heartbeats a request, closed loop,
#    10 s, over 10,000 containers) against --batch-max 100 and --batch-max 1:
#    heartbeats accepted a second over HTTP, and container rows written a
#    second by the batcher (delta of edgealloc_heartbeats_written_total over
#    the same window; coalesced is printed too, and is 0 here because 100
#    consecutive ids are distinct). heartbeat_batch_ratio = rows/s at 100 over
#    rows/s at 1.
# 2. With --batch-max 100: claim/release cycles (64 connections, 1,000
#    containers of region `bench`) alone, then with an open-loop flood beside
#    them: 100 requests x 100 = 10,000 heartbeats/s, then 500 x 100 = 50,000.
#    claim_rate_with_heartbeats<R>_ratio = cycles/s with the flood of R
#    requests/s over without; the issue's figure is R = 500, also printed as
#    claim_rate_with_heartbeats_ratio.
#
# The write path alone, without HTTP, is bench/heartbeat_rows (build-*/bench/).
#
# Prints `name value unit` lines; the generator's own lines carry a prefix.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

HB_CONTAINERS=10000
FLOOD_ARGS=(--mode heartbeats --items 100 --containers "$HB_CONTAINERS" --id-prefix hb-)
DURATION=10
WARMUP=1

Header

Fleet "$WORK/fleet.json" "hb:default:$HB_CONTAINERS:hb-" "bench:default:1000:c-"
"$BIN" register --db "$WORK/template.db" "$WORK/fleet.json" >/dev/null

# Each server gets its own copy of the registered fleet, so no run sees the
# rows (or the queue backlog) an earlier one left.
FreshDb() {
  mkdir -p "$WORK/$1"
  cp "$WORK/template.db" "$WORK/$1/x.db"
  echo "$WORK/$1/x.db"
}

# No per-key budget: the flood is one key, and this measures the writes.
SERVE_ARGS=(--dead-after-ms 3600000 --queue-capacity 1000000 --heartbeat-items-per-key-per-s 0)

# Flood BATCH: one flood against a fresh server at --batch-max BATCH.
Flood() {
  local batch=$1 out="$WORK/flood$1.txt" db t0 t1 w0 w1 c0 c1 a0 a1
  db=$(FreshDb "b$batch")
  StartServer "$db" "serve-b$batch" "${SERVE_ARGS[@]}" --batch-max "$batch"
  "$LOAD" --port "$PORT" -c 16 --duration "$DURATION" --warmup "$WARMUP" "${FLOOD_ARGS[@]}" \
    --prefix "b${batch}_" >"$out" &
  local load=$!
  # The server-side window matches the generator's measured one: it opens
  # when the warmup ends and closes when the generator exits.
  sleep "$WARMUP"
  t0=$(Now); w0=$(Metric "$PORT" edgealloc_heartbeats_written_total)
  c0=$(Metric "$PORT" edgealloc_heartbeats_coalesced_total)
  wait "$load" || echo "# http_load exited $?" >&2
  t1=$(Now); w1=$(Metric "$PORT" edgealloc_heartbeats_written_total)
  c1=$(Metric "$PORT" edgealloc_heartbeats_coalesced_total)
  cat "$out"
  local secs rows
  secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
  rows=$(awk -v a="$w0" -v b="$w1" -v s="$secs" 'BEGIN { printf "%.0f", (b - a) / s }')
  echo "b${batch}_rows_written_per_s $rows 1/s"
  echo "b${batch}_coalesced_per_s $(awk -v a="$c0" -v b="$c1" -v s="$secs" 'BEGIN { printf "%.0f", (b - a) / s }') 1/s"
  echo "b${batch}_metrics_window $secs s"
  echo "b${batch}_queue_depth_after $(Metric "$PORT" edgealloc_heartbeat_queue_depth) count"
  eval "ROWS_$batch=$rows"
  StopServer "$PID"
}

Flood 100
Flood 1
echo "heartbeat_batch_ratio $(Ratio "$ROWS_100" "$ROWS_1") x"

# Claims with and without the flood, on one server (--batch-max 100).
db=$(FreshDb claims)
StartServer "$db" serve-claims "${SERVE_ARGS[@]}" --batch-max 100
"$LOAD" --port "$PORT" -c 64 --duration "$DURATION" --warmup "$WARMUP" --region bench \
  --prefix off_ | tee "$WORK/off.txt"
# ClaimsUnderFlood RATE: claims measured while RATE requests x 100 heartbeats
# a second are offered beside them, open loop.
ClaimsUnderFlood() {
  local rate=$1 t0 t1 w0 w1 flood
  t0=$(Now); w0=$(Metric "$PORT" edgealloc_heartbeats_written_total)
  "$LOAD" --port "$PORT" -c 16 --rate "$rate" --duration "$((DURATION + 3))" --warmup 0 \
    "${FLOOD_ARGS[@]}" --prefix "flood${rate}_" >"$WORK/flood$rate-side.txt" &
  flood=$!
  # The flood starts two seconds before the claims are measured (one of
  # sleep, one of the claims' warmup) and ends about a second after, so the
  # whole claim window runs under it.
  sleep 1
  "$LOAD" --port "$PORT" -c 64 --duration "$DURATION" --warmup "$WARMUP" --region bench \
    --prefix "on${rate}_" | tee "$WORK/on$rate.txt"
  wait "$flood" || echo "# http_load (flood) exited $?" >&2
  t1=$(Now); w1=$(Metric "$PORT" edgealloc_heartbeats_written_total)
  cat "$WORK/flood$rate-side.txt"
  echo "flood${rate}_rows_written_per_s $(awk -v a="$w0" -v b="$w1" -v t0="$t0" -v t1="$t1" \
    'BEGIN { printf "%.0f", (b - a) / (t1 - t0) }') 1/s"
  echo "flood${rate}_queue_depth_after $(Metric "$PORT" edgealloc_heartbeat_queue_depth) count"
  CLAIM_RATIO=$(Ratio "$(Get "$WORK/on$rate.txt" "on${rate}_cycles_per_s")" \
    "$(Get "$WORK/off.txt" off_cycles_per_s)")
  echo "claim_rate_with_heartbeats${rate}_ratio $CLAIM_RATIO x"
}

# 100 x 100 = 10,000 heartbeats/s first: below what the batcher writes, so
# the queue stays short and the run leaves nothing behind. Then 500 x 100 =
# 50,000/s, above it: the batcher writes flat out for the whole window.
ClaimsUnderFlood 100
ClaimsUnderFlood 500
echo "claim_rate_with_heartbeats_ratio $CLAIM_RATIO x"
StopServer "$PID"
