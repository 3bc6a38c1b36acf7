#!/usr/bin/env bash
# What the event log costs a durable cycle: bench/store_cycles (64 clients of
# claim+release through the allocator and the group-commit writer, sync
# full, no HTTP) with the event log's triggers and without them (dropped
# from the same file before the run: --without-events), in alternating
# rounds so that the machine's noise falls on both alike.
#
#   bench/events.sh           (5 rounds of each, 4 s a run: about 50 s)
#   bench/events.sh --quick   (2 rounds of each, 1 s a run)
#
# Prints `name value unit`: events_on_cycles_per_s and
# events_off_cycles_per_s (the median of each's rounds) and
# events_on_vs_off_ratio (on over off; the goal is at least 0.9) and
# double_allocations (over every run), each round's own line before them as
# a `#` note.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STORE_CYCLES="${STORE_CYCLES:-$ROOT/build/bench/store_cycles}"
ParseQuickFlag "$@"
ROUNDS=5 SECONDS_A_RUN=4
((QUICK)) && ROUNDS=2 SECONDS_A_RUN=1

# Rate ARGS...: one run's durable cycles a second; its double allocations
# are added to $WORK/doubles.
echo 0 >"$WORK/doubles"
Rate() {
  "$STORE_CYCLES" --dir "$WORK" --clients 64 --containers 1000 --seconds "$SECONDS_A_RUN" \
    --no-baseline "$@" >"$WORK/run.txt"
  awk -v d="$(cat "$WORK/doubles")" '$1 == "double_allocations" { print d + $2 }' \
    "$WORK/run.txt" >"$WORK/doubles.new"
  mv "$WORK/doubles.new" "$WORK/doubles"
  awk '$1 == "store_durable_cycles_per_s" { print $2 }' "$WORK/run.txt"
}

on=() off=()
for ((i = 1; i <= ROUNDS; i++)); do
  on+=("$(Rate)")
  off+=("$(Rate --without-events)")
  echo "# round $i: on ${on[-1]} off ${off[-1]} cycles/s"
done
ON=$(printf '%s\n' "${on[@]}" | Median)
OFF=$(printf '%s\n' "${off[@]}" | Median)
echo "events_on_cycles_per_s $ON 1/s"
echo "events_off_cycles_per_s $OFF 1/s"
echo "events_on_vs_off_ratio $(Ratio "$ON" "$OFF") x"
echo "double_allocations $(cat "$WORK/doubles") count"
