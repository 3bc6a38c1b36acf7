#!/usr/bin/env bash
# The peers of edgealloc's cycle rate: what other ways of handing out work
# do a second on this machine, measured by bench/run beside edgealloc's own
# claim+release cycles (http_durable_cycles_per_s) in the same run.
#
#   bench/peers/run.sh            (about 45 s, more the first time: npm ci
#   bench/peers/run.sh --quick     builds better-sqlite3; --quick: about 20 s)
#
# Each peer is 16 clients, a closed loop, and does nothing with the job it
# gets: what is measured is the queue's own cost of a "cycle".
#
# 1. peer_bullmq_jobs_per_s: BullMQ (bench/peers/bullmq.mjs) on Redis, a
#    throwaway redis-server from Debian on a free port, persistence off
#    (no RDB snapshots, no append-only file: a job is in memory only). 16
#    producers add one job at a time, one Worker of concurrency 16 in its own
#    process takes and completes them; jobs completed a second with the
#    backlog kept under 1,000 (so jobs added a second are the same).
# 2. peer_plainjob_jobs_per_s: plainjob on better-sqlite3
#    (bench/peers/plainjob.mjs), one SQLite file in the run's temp dir, WAL
#    and synchronous NORMAL (plainjob's own settings: a commit is not fsynced,
#    so it survives the process but not the machine). One producer, 16
#    worker processes (a plainjob worker takes one job at a time, so its
#    README scales it out by processes).
# 3. peer_pg_skip_locked_cycles_per_s_16c: PostgreSQL's own claim, through
#    pgbench (16 clients, 2 threads): `UPDATE ... WHERE id = (SELECT ...
#    FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING` over 1,000 rows, then the
#    release of what it claimed, each its own autocommit transaction, on a
#    throwaway PostgreSQL 15 (bench/pg_lib.sh: fsync and synchronous_commit
#    on, every commit flushed as edgealloc's --sync full). A cycle a script.
#
# Pinned as bench/run pins edgealloc and http_load (PinApart in bench/lib.sh,
# with two cores or more): redis-server and PostgreSQL on the servers'
# cores, BullMQ's node process (its producers and Worker) and pgbench on the
# load generators' core. plainjob has no server: its producer and workers
# are the queue, and run on every core, as edgealloc's server and its load
# generator do together.
#
# The Node packages are pinned in bench/peers/package-lock.json; `npm ci`
# installs them into bench/peers/node_modules when that is missing or older
# than the lock (the first time it builds better-sqlite3: about a minute).
# redis-server and PostgreSQL come from Debian through scripts/setup.sh.
#
# Prints `name value unit` lines; `#` lines are notes (versions, durability).

source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"

QUICK=0
[[ ${1:-} == --quick ]] && QUICK=1
if ((QUICK)); then
  SECONDS_MEASURED=2; WARMUP=0.5
else
  SECONDS_MEASURED=10; WARMUP=1
fi
CLIENTS=16
PEERS="$ROOT/bench/peers"

"$ROOT/scripts/setup.sh" --deps-only redis-server
if [[ ! -f $PEERS/node_modules/.package-lock.json ||
      $PEERS/package-lock.json -nt $PEERS/node_modules/.package-lock.json ]]; then
  echo "# bench/peers: npm ci (pinned by bench/peers/package-lock.json)" >&2
  # better-sqlite3 builds from source when no prebuilt binary can be fetched:
  # against the installed Node's headers, not downloaded ones.
  nodedir=()
  [[ -f /usr/include/node/node.h ]] && nodedir=(--nodedir=/usr)
  (cd "$PEERS" && npm ci "${nodedir[@]}" --no-audit --no-fund --loglevel=error >"$WORK/npm.log" 2>&1) ||
    { tail -20 "$WORK/npm.log" >&2; exit 1; }
fi

source "$(dirname "${BASH_SOURCE[0]}")/../pg_lib.sh"

REDIS_PID=
StopRedis() {
  [[ -n $REDIS_PID ]] || return 0
  kill -TERM "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  REDIS_PID=
}
PeersCleanup() {
  StopRedis
  StopPg
  Cleanup
}
trap PeersCleanup EXIT

PinApart
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) $(uname -n); cores $(nproc), shared by the peer, its clients and any other work"
echo "# pinning: $PINNING"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) before the peers"
NodePkg() { node -p "require('$PEERS/node_modules/$1/package.json').version"; }
echo "# node $(node --version), bullmq $(NodePkg bullmq), ioredis $(NodePkg ioredis)," \
  "plainjob $(NodePkg plainjob), better-sqlite3 $(NodePkg better-sqlite3)"

# 1. BullMQ on Redis. ---------------------------------------------------------
mkdir -p "$WORK/redis"
REDIS_PORT=$(FreePort)
"${ON_SERVER[@]}" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" --save '' --appendonly no \
  --daemonize no >"$WORK/redis/server.log" 2>&1 &
REDIS_PID=$!
for _ in $(seq 1 50); do
  [[ $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]] && break
  sleep 0.1
done
[[ $(redis-cli -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]] ||
  { echo "redis-server did not start:" >&2; cat "$WORK/redis/server.log" >&2; exit 1; }
echo "# redis $(redis-server --version | awk '{ print $3 }' | sed 's/^v=//'): save '' and appendonly no:" \
  "no durability, a job lives in Redis's memory only"
"${ON_LOAD[@]}" node "$PEERS/bullmq.mjs" --port "$REDIS_PORT" --clients "$CLIENTS" --seconds "$SECONDS_MEASURED" \
  --warmup "$WARMUP"
StopRedis

# 2. plainjob on better-sqlite3. ---------------------------------------------
mkdir -p "$WORK/plainjob"
node "$PEERS/plainjob.mjs" --db "$WORK/plainjob/queue.db" --clients "$CLIENTS" \
  --seconds "$SECONDS_MEASURED" --warmup "$WARMUP"
echo "# plainjob: journal_mode WAL, synchronous NORMAL (set by plainjob): commits are not" \
  "fsynced, a job survives the process, not the machine; 1 producer, $CLIENTS worker processes"

# 3. PostgreSQL's FOR UPDATE SKIP LOCKED claim. ---------------------------------
StartPg
Sql "CREATE DATABASE peer" >/dev/null
Sql "CREATE TABLE slots (id int PRIMARY KEY, holder int, claimed_at timestamptz);
     INSERT INTO slots (id) SELECT g FROM generate_series(1, 1000) g" peer >/dev/null
# Claim the first free row, then release it (the holder check is the
# release's guard): two autocommit transactions, each durable before the
# next, as edgealloc's claim and release.
cat >"$WORK/skip_locked.sql" <<'EOF'
UPDATE slots SET holder = :client_id, claimed_at = now()
WHERE id = (SELECT id FROM slots WHERE holder IS NULL ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id AS slot
\gset
UPDATE slots SET holder = NULL, claimed_at = NULL WHERE id = :slot AND holder = :client_id;
EOF
echo "# PostgreSQL $("$PG_BIN/postgres" --version | awk '{ print $3 }'): fsync on, synchronous_commit on:" \
  "each claim and each release flushed to disk before it is answered"
cpu0=$(PgCpu); t0=$(Now)
"${ON_LOAD[@]}" "$PGBENCH" -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_MEASURED" -f "$WORK/skip_locked.sql" \
  "$PG_URI_BASE/peer" >"$WORK/pgbench.out" 2>&1 ||
  { echo "pgbench failed:" >&2; tail -5 "$WORK/pgbench.out" >&2; exit 1; }
cpu1=$(PgCpu); t1=$(Now)
sed 's/^/# pgbench: /' "$WORK/pgbench.out" | grep -E 'tps|latency|failed|processed' || true
awk '/^tps = / { printf "peer_pg_skip_locked_cycles_per_s_16c %.0f 1/s\n", $3; exit }' "$WORK/pgbench.out"
awk '/^latency average/ { printf "peer_pg_skip_locked_latency_ms %s ms\n", $4; exit }' "$WORK/pgbench.out"
awk -v a="$cpu0" -v b="$cpu1" -v t0="$t0" -v t1="$t1" \
  'BEGIN { printf "peer_pg_skip_locked_postgres_cores %.2f cores\n", (b - a) / (t1 - t0) }'
echo "peer_pg_skip_locked_held_after $(Sql "SELECT count(*) FROM slots WHERE holder IS NOT NULL" peer) count"
StopPg

echo "# load average $(cut -d' ' -f1-3 /proc/loadavg) after the peers"
