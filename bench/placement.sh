#!/usr/bin/env bash
# What a claim costs by placement: claims a second and claim p99 for
# `fittest` on containers of 1 slot (the workload before slots), `packed` on
# containers of 8 slots, and `fittest` with a two-key selector, each with
# 1,000 and with 1,000,000 containers registered; and each mode's rate over
# the 1-slot fittest one's at the same size.
#
#   bench/placement.sh           (about 2.5 minutes; needs load_fleet and
#                                 placement_cycles built: LOAD_FLEET and
#                                 PLACEMENT_CYCLES, by default under build/)
#   bench/placement.sh --quick   (one round of 1 s a mode, 1,000 containers only)
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
# it claimed, so each mode starts from the same fleet. Each size runs 3
# rounds of the three modes in turn, 3 s a mode: a mode's claims a second and
# p99 are the medians of its rounds, and its ratio the median of its rounds'
# ratios to the fittest1 run of the same round, so that load that comes and
# goes on a shared machine weighs on both sides of a ratio (one run of each,
# one after the other, gave 0.687 and 0.760 for the same build).
#
# Prints `name value unit`: placement_<mode>_<size>_claims_per_s,
# placement_<mode>_<size>_claim_p99_ms, placement_<mode>_<size>_vs_fittest1_ratio
# (mode fittest1, packed8, selector2; size 1k, 1m) and double_allocations
# (over every run), each run's own lines before them prefixed with its mode,
# size and round (fittest1_1m_r2_claims_per_s ...).

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

LOAD_FLEET="${LOAD_FLEET:-$ROOT/build/bench/load_fleet}"
PLACEMENT_CYCLES="${PLACEMENT_CYCLES:-$ROOT/build/bench/placement_cycles}"
ParseQuickFlag "$@"
ROUNDS=3
SECONDS_A_MODE=3
((QUICK)) && ROUNDS=1 SECONDS_A_MODE=1
MODES=(fittest1 packed8 selector2)
declare -A POOL_SPEC=([fittest1]="bench:default:1000:c-:1:none"
                      [packed8]="bench:eight:1000:e-:8:none"
                      [selector2]="bench:sel:1000:s-:1:gpu")
declare -A ARGS=([fittest1]="--pool default --placement fittest"
                 [packed8]="--pool eight --placement packed"
                 [selector2]="--pool sel --placement fittest --selector")

Header
echo "# binaries: $LOAD_FLEET, $PLACEMENT_CYCLES"
Emit() { echo "$1 $2 $3"; }
DOUBLES=0

# Measure MODE SIZE ROUND DB: one run of a mode on DB, its lines prefixed.
Measure() {
  local mode=$1 size=$2 round=$3 db=$4 out="$WORK/$1_$2_r$3.txt"
  # shellcheck disable=SC2086
  "$PLACEMENT_CYCLES" --db "$db" ${ARGS[$mode]} --clients 64 --seconds "$SECONDS_A_MODE" >"$out" ||
    echo "# placement_cycles $mode $size round $round exited $?"
  # (double_allocations once, summed below: bench/run adds up every such line)
  grep -v '^double_allocations ' "$out" | sed "s/^\([a-z]\)/${mode}_${size}_r${round}_\1/"
  local doubles
  doubles=$(Get "$out" double_allocations)
  DOUBLES=$((DOUBLES + ${doubles:-0}))
}

# MedianOf SIZE NAME [ratio]: the median over the rounds of the mode
# $MODE's NAME, or with `ratio` of its Ratio to the same round's fittest1;
# nan if a round lacks it.
MedianOf() {
  local size=$1 name=$2 ratio=${3:-} r v values=()
  for ((r = 1; r <= ROUNDS; r++)); do
    v=$(Get "$WORK/${MODE}_${size}_r$r.txt" "$name")
    [[ -n $ratio ]] && v=$(Ratio "$v" "$(Get "$WORK/fittest1_${size}_r$r.txt" "$name")")
    if ! [[ $v =~ ^-?[0-9]+([.][0-9]*)?$ ]]; then
      echo nan
      return
    fi
    values+=("$v")
  done
  printf '%s\n' "${values[@]}" | Median
}

# Rounds SIZE DB...: ROUNDS rounds of the modes in turn (mode i on the i-th
# DB, or every mode on the one DB given), then each mode's figures.
Rounds() {
  local size=$1 r i
  shift
  local dbs=("$@")
  for ((r = 1; r <= ROUNDS; r++)); do
    for i in "${!MODES[@]}"; do
      Measure "${MODES[$i]}" "$size" "$r" "${dbs[$((${#dbs[@]} > 1 ? i : 0))]}"
    done
  done
  for MODE in "${MODES[@]}"; do
    Emit "placement_${MODE}_${size}_claims_per_s" "$(MedianOf "$size" claims_per_s)" 1/s
    Emit "placement_${MODE}_${size}_claim_p99_ms" "$(MedianOf "$size" claim_p99_ms)" ms
  done
  for MODE in "${MODES[@]}"; do
    Emit "placement_${MODE}_${size}_vs_fittest1_ratio" \
      "$(MedianOf "$size" claims_per_s ratio)" x
  done
}

# 1,000: a database a mode, its pool alone.
dbs=()
for mode in "${MODES[@]}"; do
  "$LOAD_FLEET" --db "$WORK/$mode.db" "${POOL_SPEC[$mode]}" >"$WORK/load_$mode.txt"
  dbs+=("$WORK/$mode.db")
done
Rounds 1k "${dbs[@]}"

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
  Rounds 1m "$WORK/1m.db"
fi

Emit double_allocations "$DOUBLES" count
