#!/usr/bin/env bash
# What a claim costs by placement: claims a second and claim p99 for
# `fittest` on containers of 1 slot (the workload before slots), `packed` on
# containers of 8 slots, and `fittest` with a two-key selector, each with
# 1,000 and with 1,000,000 containers registered; and each mode's rate over
# the 1-slot fittest one's at the same size.
#
#   bench/placement.sh           (about 2 minutes; needs load_fleet and
#                                 placement_cycles built: LOAD_FLEET and
#                                 PLACEMENT_CYCLES, by default under build/)
#   bench/placement.sh --quick   (1 s a mode, 1,000 containers only)
#
# Each mode claims in a pool of its own of 1,000 containers in region
# `bench`: `default` (1 slot each), `eight` (8 slots each) and `sel` (1
# slot each, attributes {"arch":"x86","gpu":"yes"|"no"}, half of each:
# the selector arch=x86, gpu=yes matches 500). At 1,000 a database holds the
# mode's pool alone; at 1,000,000 one database holds the three pools and
# 997,000 more containers, half in region bench pool `other` (with the same
# attributes, so that the selector's index holds 500,000 more rows beside
# the pool's) and half over 8 regions fill0..7. Rows are written by
# load_fleet (the rows `register` writes, attributes copied for the
# selector), then bench/placement_cycles runs 64 clients of claim+release
# cycles through the allocator and the group-commit writer (sync full), no
# HTTP, one mode after the other on the same file: every cycle releases what
# it claimed, so each mode starts from the same fleet.
#
# Prints `name value unit`: placement_<mode>_<size>_claims_per_s,
# placement_<mode>_<size>_claim_p99_ms, placement_<mode>_<size>_vs_fittest1_ratio
# (mode fittest1, packed8, selector2; size 1k, 1m) and double_allocations
# (over every run), each run's own lines before them prefixed with its name.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD_FLEET="${LOAD_FLEET:-$ROOT/build/bench/load_fleet}"
PLACEMENT_CYCLES="${PLACEMENT_CYCLES:-$ROOT/build/bench/placement_cycles}"
ParseQuickFlag "$@"
SECONDS_A_MODE=5
((QUICK)) && SECONDS_A_MODE=1
MODES=(fittest1 packed8 selector2)
declare -A POOL_SPEC=([fittest1]="bench:default:1000:c-:1:none"
                      [packed8]="bench:eight:1000:e-:8:none"
                      [selector2]="bench:sel:1000:s-:1:gpu")
declare -A ARGS=([fittest1]="--pool default --placement fittest"
                 [packed8]="--pool eight --placement packed"
                 [selector2]="--pool sel --placement fittest --selector")

Header
echo "# binaries: $LOAD_FLEET, $PLACEMENT_CYCLES"
declare -A FIG
Emit() {
  FIG[$1]=$2
  echo "$1 $2 $3"
}
DOUBLES=0

# Measure MODE SIZE DB: one mode's run on DB, its lines prefixed.
Measure() {
  local mode=$1 size=$2 db=$3 out="$WORK/$1_$2.txt"
  # shellcheck disable=SC2086
  "$PLACEMENT_CYCLES" --db "$db" ${ARGS[$mode]} --clients 64 --seconds "$SECONDS_A_MODE" >"$out" ||
    echo "# placement_cycles $mode $size exited $?"
  # (double_allocations once, summed below: bench/run adds up every such line)
  grep -v '^double_allocations ' "$out" | sed "s/^\([a-z]\)/${mode}_${size}_\1/"
  Emit "placement_${mode}_${size}_claims_per_s" "$(Get "$out" claims_per_s)" 1/s
  Emit "placement_${mode}_${size}_claim_p99_ms" "$(Get "$out" claim_p99_ms)" ms
  local doubles
  doubles=$(Get "$out" double_allocations)
  DOUBLES=$((DOUBLES + ${doubles:-0}))
}

# 1,000: a database a mode, its pool alone.
for mode in "${MODES[@]}"; do
  "$LOAD_FLEET" --db "$WORK/$mode.db" "${POOL_SPEC[$mode]}" >"$WORK/load_$mode.txt"
  Measure "$mode" 1k "$WORK/$mode.db"
done

# 1,000,000: one database, the three pools and the rest.
if ((QUICK)); then
  for mode in "${MODES[@]}"; do
    echo "placement_${mode}_1m_claims_per_s skipped quick"
    echo "placement_${mode}_1m_claim_p99_ms skipped quick"
  done
else
  rest=$((1000000 - 3000))
  half=$((rest / 2))
  specs=("${POOL_SPEC[@]}" "bench:other:$half:o-:1:gpu")
  left=$((rest - half))
  for r in 0 1 2 3 4 5 6 7; do
    specs+=("fill$r:default:$((left / 8 + (r < left % 8 ? 1 : 0))):f$r-")
  done
  "$LOAD_FLEET" --db "$WORK/1m.db" "${specs[@]}" >"$WORK/load_1m.txt"
  Emit placement_1m_load_fleet_seconds "$(Get "$WORK/load_1m.txt" load_fleet_seconds)" s
  for mode in "${MODES[@]}"; do Measure "$mode" 1m "$WORK/1m.db"; done
fi

for size in 1k 1m; do
  base=${FIG[placement_fittest1_${size}_claims_per_s]:-}
  [[ -z $base ]] && continue
  for mode in "${MODES[@]}"; do
    Emit "placement_${mode}_${size}_vs_fittest1_ratio" \
      "$(Ratio "${FIG[placement_${mode}_${size}_claims_per_s]}" "$base")" x
  done
done
Emit double_allocations "$DOUBLES" count
