#!/usr/bin/env bash
# The PostgreSQL engine: edgealloc on PostgreSQL
# beside the raw claim statement through pgbench, in one run, on one
# throwaway server.
#
#   bench/postgres.sh            (about 75 s; needs build-*/edgealloc and
#   bench/postgres.sh --quick     build-*/bench/http_load with the statements
#                                 its build writes beside it, BIN and LOAD as
#                                 bench/run sets them; --quick: about 30 s)
#
# Starts PostgreSQL 15 (bench/pg_lib.sh: initdb into the run's temp dir, a
# free port, fsync = on, synchronous_commit = on: every commit flushed to disk
# before it is answered, as SQLite's synchronous FULL; as the `postgres` user
# when run as root), then, each on a fresh database of that server:
#
# 1. pg_http_cycles_per_s_1node: claim+release cycles a second over HTTP,
#    `edgealloc serve --db postgresql://...`, 64 keep-alive connections,
#    closed loop, 1,000 containers of region `bench` (as bench/run's SQLite
#    cycle figure).
# 2. pg_http_cycles_per_s_2nodes: the same 64 connections split over two
#    servers on one database (one http_load with --ports, so one book of
#    holders and tokens checks exclusivity across the nodes).
# 3. pgbench_claim_per_s_16c: the ceiling. pgbench, 16 clients, a script of
#    kClaim (store/postgres/session_sql.h, the values the server binds) and
#    then kRelease of what it claimed, each its own autocommit transaction (as
#    the server, whose claim is durable before it is answered): claims a
#    second = the script's tps. pgbench_cycle_1tx_per_s_16c (full run only):
#    the same two statements in one transaction, one commit a cycle.
# 4. pg_vs_pgbench_ratio_1node, pg_vs_pgbench_ratio_2nodes: HTTP cycles a
#    second over pgbench's claims a second (goals: >= 2 for one node,
#    >= 0.8 for two).
# 5. pg_heartbeat_rows_per_s: as bench/heartbeats.sh's flood: 16 connections
#    x 100 heartbeats a request, closed loop, over 10,000 containers,
#    --batch-max 100; rows written a second from the server's
#    edgealloc_heartbeats_written_total over the measured window; with the
#    default 4 writer connections and (pg_heartbeat_rows_per_s_1writer) with
#    --pg-writers 1, and their ratio.
# 6. pg_sync_standby_heartbeat_rows_per_s (full run only): the same with a
#    synchronous streaming standby, 1 writer and 4.
#
# Also printed, to read the figures: the group commits of each HTTP run
# (transactions a second and jobs a transaction, from /metrics) and the CPU
# the PostgreSQL server's processes used. Double allocations and reused
# tokens are http_load's (pg1_, pg2_); the script exits 1 if any.
#
# Not pinned to cores (bench/run pins its HTTP runs and the peers, PinApart
# in bench/lib.sh): PostgreSQL, edgealloc, http_load and pgbench all run
# here, and on two cores the servers' one core would hold both PostgreSQL
# and edgealloc while pgbench's PostgreSQL had it alone.
#
# Prints `name value unit` lines; the generator's own lines carry a prefix.

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
if ((QUICK)); then
  DURATION=3; WARMUP=0.5; HB_DURATION=3
else
  DURATION=10; WARMUP=1; HB_DURATION=10
fi
CONNS=64
PGBENCH_CLIENTS=16
HB_CONTAINERS=10000

source "$(dirname "${BASH_SOURCE[0]}")/pg_lib.sh"

# Our edgealloc servers first (they hold connections), then PostgreSQL, then
# lib.sh's cleanup (which removes the temp dir).
PgCleanup() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do StopServer "$pid"; done
  SERVER_PIDS=()
  if [[ -n ${STANDBY_PIDFILE:-} && -f $STANDBY_PIDFILE ]]; then
    PgAs "$PG_BIN/pg_ctl" -D "$STANDBY" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  fi
  StopPg
  Cleanup
}
trap PgCleanup EXIT

PG_VERSION=$("$PG_BIN/postgres" --version | awk '{ print $3 }')
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -n); PostgreSQL $PG_VERSION ($PG_BIN)"
echo "# cores $(nproc), shared by PostgreSQL, edgealloc, the load generator and pgbench"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) before the run"

StartPg
echo "# settings: $(Sql "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
  WHERE name IN ('fsync', 'synchronous_commit', 'wal_sync_method', 'full_page_writes',
                 'shared_buffers', 'commit_delay', 'max_connections')")"
echo "# disk of the data dir: $(findmnt -no SOURCE,FSTYPE -T "$PGDATA" 2>/dev/null | tr -s ' ')"

# NewDb NAME FLEET: a fresh database with the schema and the fleet in FLEET,
# registered by edgealloc itself; prints its URI.
NewDb() {
  Sql "CREATE DATABASE $1" >/dev/null
  "$BIN" register --db "$PG_URI_BASE/$1" "$2" >/dev/null
  echo "$PG_URI_BASE/$1"
}

# WAL fsyncs so far and their total ms (pg_stat_wal, the whole server).
WalSyncs() { Sql "SELECT wal_sync || ' ' || wal_sync_time FROM pg_stat_wal"; }
# WalFigures PREFIX "SYNCS0 MS0" "SYNCS1 MS1" SECONDS: fsyncs a second, ms each.
WalFigures() {
  awk -v p="$1" -v a="$2" -v b="$3" -v s="$4" 'BEGIN {
    split(a, x, " "); split(b, y, " "); n = y[1] - x[1]
    printf "%swal_fsyncs_per_s %.0f 1/s\n", p, n / s
    printf "%swal_fsync_ms %.2f ms\n", p, (n > 0) ? (y[2] - x[2]) / n : 0
  }'
}
Fleet "$WORK/fleet.json" "bench:default:1000:c-"

# CommitTotals PORT...: the commit microseconds, transactions and jobs of the
# store, summed over the servers on PORTs, on one line.
CommitTotals() {
  local port us=0 tx=0 jobs=0
  for port in "$@"; do
    us=$((us + $(MetricSum "$port" edgealloc_store_commit_seconds_total 1000000)))
    tx=$((tx + $(MetricSum "$port" edgealloc_store_transactions_total)))
    jobs=$((jobs + $(MetricSum "$port" edgealloc_store_jobs_total)))
  done
  echo "$us $tx $jobs"
}

# HttpCycles PREFIX PORT...: one closed-loop cycle run against the servers on
# PORTs (connections split over them), with the group commits and
# PostgreSQL's CPU over the measured window.
HttpCycles() {
  local prefix=$1 ports t0 t1 cpu0 cpu1 tx0 tx1 jobs0 jobs1 load wal0 wal1 us0 us1
  shift
  ports=$(IFS=,; echo "$*")
  "$LOAD" --ports "$ports" -c "$CONNS" --duration "$DURATION" --warmup "$WARMUP" --region bench \
    --prefix "$prefix" >"$WORK/$prefix.txt" 2>"$WORK/$prefix.err" &
  load=$!
  sleep "$WARMUP"
  t0=$(Now); cpu0=$(PgCpu); wal0=$(WalSyncs)
  read -r us0 tx0 jobs0 < <(CommitTotals "$@")
  local rc=0
  wait "$load" || rc=$?
  t1=$(Now); cpu1=$(PgCpu); wal1=$(WalSyncs)
  read -r us1 tx1 jobs1 < <(CommitTotals "$@")
  cat "$WORK/$prefix.txt"
  if ((rc)); then
    echo "# http_load ($prefix) exited $rc: $(head -3 "$WORK/$prefix.err")" >&2
    HTTP_FAILED=1
  fi
  awk -v t0="$t0" -v t1="$t1" -v a="$tx0" -v b="$tx1" -v ja="$jobs0" -v jb="$jobs1" \
    -v c0="$cpu0" -v c1="$cpu1" -v p="$prefix" -v u0="$us0" -v u1="$us1" 'BEGIN {
      s = t1 - t0
      printf "%scommits_per_s %.0f 1/s\n", p, (b - a) / s
      # BEGIN to the answer to COMMIT, a group: the writer round trips and the fsync.
      printf "%sgroup_ms %.2f ms\n", p, (b > a) ? (u1 - u0) / 1000 / (b - a) : 0
      printf "%sjobs_per_commit %.2f count\n", p, (b > a) ? (jb - ja) / (b - a) : 0
      printf "%spostgres_cores %.2f cores\n", p, (c1 - c0) / s
    }'
  WalFigures "$prefix" "$wal0" "$wal1" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}

HTTP_FAILED=0
SERVE_ARGS=(--dead-after-ms 3600000)

# 1. One node. ---------------------------------------------------------------
uri=$(NewDb http1 "$WORK/fleet.json")
StartServer "$uri" pg-node1 "${SERVE_ARGS[@]}"
HttpCycles pg1_ "$PORT"
StopServer "$PID"

# 2. Two nodes, one database. --------------------------------------------------
uri=$(NewDb http2 "$WORK/fleet.json")
StartServer "$uri" pg-node2a "${SERVE_ARGS[@]}"
PORT_A=$PORT PID_A=$PID
StartServer "$uri" pg-node2b "${SERVE_ARGS[@]}"
PORT_B=$PORT PID_B=$PID
HttpCycles pg2_ "$PORT_A" "$PORT_B"
StopServer "$PID_A"
StopServer "$PID_B"

# 3. pgbench: the claim statement alone. --------------------------------------
# kClaim and kRelease of store/postgres/session_sql.h as the server sends them:
# the build writes them beside http_load (bench/pg_statements.cc, target
# pg_bench_sql), so that this ceiling never runs a copy that drifted. Bound
# as the server binds an HTTP claim of region bench, pool default (--dead-after-ms
# 3600000, candidates 5, a fresh session id, tenant `default`, no idempotency
# key, a 60 s lease, no quota: -1, no labels) and, for the release, an admin
# (loopback without a keys file), not abandoning. Values go as pgbench
# variables (-M prepared: bound parameters, as the server's); the NULLs as
# literals. Each claim takes a random session id, as the server's are fresh:
# session_history.session_id is unique, and an id used again would skip the
# history's insert.
SQL_DIR=$(dirname "$LOAD")
for f in pg_claim.sql pg_release.sql; do
  [[ -f $SQL_DIR/$f ]] || { echo "postgres.sh: no $SQL_DIR/$f (build the http_load target)" >&2; exit 1; }
done
# Bind FILE VALUE...: FILE's statement with each $N replaced by the Nth VALUE.
Bind() {
  local file=$1 i
  shift
  local edits=()
  for ((i = $#; i >= 1; i--)); do edits+=(-e "s/\\\$$i([^0-9]|\$)/${!i}\\1/g"); done
  sed -E "${edits[@]}" "$file"
}
uri=$(NewDb pgb "$WORK/fleet.json")
PGBENCH_VARS=(-D region=bench -D pool=default -D dead_after_ms=3600000 -D k=5 -D tenant=default
              -D lease_ms=60000 -D quota=-1)
{
  echo '\set sid random(1, 9000000000000000000)'
  # kClaim's $1 region $2 pool $3 dead_after_ms $4 K $5 session_id $6 tenant
  # $7 idempotency_key $8 lease_ms $9 quota $10 labels
  Bind "$SQL_DIR/pg_claim.sql" :region :pool :dead_after_ms :k :sid :tenant NULL :lease_ms :quota NULL
  echo '\gset c_'
  # kRelease's $1 session_id $2 token $3 tenant (NULL: an admin) $4 abandoning
  # $5 the caller's tenant
  Bind "$SQL_DIR/pg_release.sql" :sid :c_generation NULL false :tenant
  echo ";"
} >"$WORK/claim.sql"
# The same, as one transaction.
{
  echo "BEGIN;"
  cat "$WORK/claim.sql"
  echo "COMMIT;"
} >"$WORK/cycle_1tx.sql"

# Pgbench PREFIX SCRIPT: tps (script runs a second) of 16 clients, 2 threads.
Pgbench() {
  local prefix=$1 script=$2 out="$WORK/$1.pgbench" cpu0 cpu1 t0 t1 rc=0 wal0 wal1
  t0=$(Now); cpu0=$(PgCpu); wal0=$(WalSyncs)
  "$PGBENCH" -n -M prepared -c "$PGBENCH_CLIENTS" -j 2 -T "$DURATION" "${PGBENCH_VARS[@]}" \
    -f "$script" "$uri" \
    >"$out" 2>&1 || rc=$?
  t1=$(Now); cpu1=$(PgCpu); wal1=$(WalSyncs)
  if ((rc)); then
    echo "# pgbench ($prefix) exited $rc:" >&2
    tail -5 "$out" >&2
    PGBENCH_FAILED=1
  fi
  sed 's/^/# pgbench: /' "$out" | grep -E 'tps|latency|failed|processed|aborted' || true
  awk -v p="$prefix" '/^tps = / { printf "%sper_s %.0f 1/s\n", p, $3; exit }' "$out"
  awk -v p="$prefix" '/^latency average/ { printf "%slatency_ms %s ms\n", p, $4; exit }' "$out"
  awk -v a="$cpu0" -v b="$cpu1" -v t0="$t0" -v t1="$t1" -v p="$prefix" \
    'BEGIN { printf "%spostgres_cores %.2f cores\n", p, (b - a) / (t1 - t0) }'
  WalFigures "$prefix" "$wal0" "$wal1" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')"
}
PGBENCH_FAILED=0
Pgbench pgbench_claim_ "$WORK/claim.sql" | tee "$WORK/pgbench.txt"
CEILING=$(Get "$WORK/pgbench.txt" pgbench_claim_per_s)
echo "pgbench_claim_per_s_16c ${CEILING:-0} 1/s"
if ((!QUICK)); then
  Pgbench pgbench_cycle_1tx_ "$WORK/cycle_1tx.sql" | tee "$WORK/pgbench1tx.txt"
  echo "pgbench_cycle_1tx_per_s_16c $(Get "$WORK/pgbench1tx.txt" pgbench_cycle_1tx_per_s) 1/s"
fi
# The claims pgbench made: every one a fresh token, none left held.
echo "pgbench_sessions_left $(Sql "SELECT count(*) FROM sessions" pgb) count"

ONE=$(Get "$WORK/pg1_.txt" pg1_cycles_per_s)
TWO=$(Get "$WORK/pg2_.txt" pg2_cycles_per_s)
echo "pg_http_cycles_per_s_1node ${ONE:-0} 1/s"
echo "pg_http_cycles_per_s_2nodes ${TWO:-0} 1/s"
echo "pg_vs_pgbench_ratio_1node $(Ratio "${ONE:-0}" "${CEILING:-0}") x"
echo "pg_vs_pgbench_ratio_2nodes $(Ratio "${TWO:-0}" "${CEILING:-0}") x"

# 5. Heartbeats, through one writer connection and through the default
# (--pg-writers, 4): each writer a partition of the containers, with a
# batch of its own in flight. ---------------------------------------------------
Fleet "$WORK/hb-fleet.json" "hb:default:$HB_CONTAINERS:hb-"
HeartbeatRun() {  # prefix, serve flags...
  local prefix=$1
  shift
  local uri
  uri=$(NewDb "${prefix%_}" "$WORK/hb-fleet.json")
  # No per-key budget: the flood is one key, and this measures the writes.
  StartServer "$uri" "pg-${prefix%_}" "${SERVE_ARGS[@]}" --queue-capacity 1000000 --batch-max 100 \
    --heartbeat-items-per-key-per-s 0 "$@"
  "$LOAD" --port "$PORT" -c 16 --duration "$HB_DURATION" --warmup "$WARMUP" --mode heartbeats \
    --items 100 --containers "$HB_CONTAINERS" --id-prefix hb- --prefix "$prefix" >"$WORK/$prefix.txt" &
  local load=$!
  sleep "$WARMUP"
  local t0 w0 c0 tx0 t1 w1 c1 tx1
  t0=$(Now); w0=$(Metric "$PORT" edgealloc_heartbeats_written_total); c0=$(PgCpu)
  tx0=$(MetricSum "$PORT" edgealloc_store_transactions_total)
  wait "$load" || echo "# http_load (heartbeats) exited $?" >&2
  t1=$(Now); w1=$(Metric "$PORT" edgealloc_heartbeats_written_total); c1=$(PgCpu)
  tx1=$(MetricSum "$PORT" edgealloc_store_transactions_total)
  cat "$WORK/$prefix.txt"
  awk -v t0="$t0" -v t1="$t1" -v a="$w0" -v b="$w1" -v c0="$c0" -v c1="$c1" -v x0="$tx0" \
      -v x1="$tx1" -v p="$prefix" 'BEGIN {
    s = t1 - t0
    printf "%srows_per_s %.0f 1/s\n", p, (b - a) / s
    printf "%scommits_per_s %.0f 1/s\n", p, (x1 - x0) / s
    printf "%srows_per_commit %.1f count\n", p, (x1 > x0) ? (b - a) / (x1 - x0) : 0
    printf "%spostgres_cores %.2f cores\n", p, (c1 - c0) / s
    printf "%smetrics_window %.3f s\n", p, s
  }' | tee "$WORK/$prefix.fig"
  echo "${prefix}queue_depth_after $(Metric "$PORT" edgealloc_heartbeat_queue_depth) count"
  StopServer "$PID"
}
# The heartbeat run with one writer, then with the default writers, and the
# rows a second of both and their ratio under <figure>_.
HeartbeatWriters() {  # run prefix, figure
  local run=$1 figure=$2 one all
  HeartbeatRun "${run}1w_" --pg-writers 1
  HeartbeatRun "${run}_"
  one=$(Get "$WORK/${run}1w_.fig" "${run}1w_rows_per_s")
  all=$(Get "$WORK/${run}_.fig" "${run}_rows_per_s")
  echo "${figure}_rows_per_s ${all:-0} 1/s"
  echo "${figure}_rows_per_s_1writer ${one:-0} 1/s"
  echo "${figure}_writers_ratio $(Ratio "${all:-0}" "${one:-0}") x"
}
HeartbeatWriters pghb pg_heartbeat

# 6. The same two heartbeat runs with a synchronous standby (full run only):
# each commit then waits for the standby's flush too, as in the failover
# set-up of README, so a commit costs more than the CPU it uses, and writers
# committing side by side are what the rate is made of. ------------------------
if ((!QUICK)); then
  STANDBY="$PGDIR/standby"
  STANDBY_PORT=$(FreePort)
  # --checkpoint=fast: the default spread checkpoint made the base backup wait
  # minutes, past the step's time.
  if PgAs "$PG_BIN/pg_basebackup" -h 127.0.0.1 -p "$PG_PORT" -U edgealloc -D "$STANDBY" -R -X stream \
      --checkpoint=fast \
      >"$PGDIR/basebackup.log" 2>&1; then
    PgAs "$PG_BIN/pg_ctl" -D "$STANDBY" -l "$PGDIR/standby.log" -w -t 30 \
      -o "-p $STANDBY_PORT -k $PGDIR" start >/dev/null 2>&1 &&
      STANDBY_PIDFILE="$STANDBY/postmaster.pid"
  fi
  if [[ -n ${STANDBY_PIDFILE:-} ]]; then
    Sql "ALTER SYSTEM SET synchronous_standby_names = '*'" >/dev/null
    Sql "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
      [[ $(Sql "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1 ]] && break
      sleep 0.1
    done
    echo "# standby: $(Sql "SELECT application_name || ' ' || sync_state FROM pg_stat_replication")"
    HeartbeatWriters pghbsync pg_sync_standby_heartbeat
    Sql "ALTER SYSTEM RESET synchronous_standby_names" >/dev/null
    Sql "SELECT pg_reload_conf()" >/dev/null
    PgAs "$PG_BIN/pg_ctl" -D "$STANDBY" -m immediate -w -t 30 stop >/dev/null 2>&1 || true
  else
    echo "# no synchronous standby (pg_basebackup or its start failed); see $PGDIR" >&2
  fi
fi

echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after the run"
((HTTP_FAILED == 0 && PGBENCH_FAILED == 0)) || exit 1
