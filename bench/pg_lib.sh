# shellcheck shell=bash
# A throwaway PostgreSQL 15 for a bench script: sourced after bench/lib.sh
# (its WORK, FreePort and Cleanup), by bench/postgres.sh and
# bench/peers/run.sh; not run.
#
# StartPg: initdb into $WORK/pg, a free port, fsync = on and
# synchronous_commit = on (every commit flushed to disk before it is
# answered, as SQLite's synchronous FULL), as the `postgres` user when run as
# root; sets PG_PORT and PG_URI_BASE. StopPg stops it (the caller's EXIT trap
# calls it before lib.sh's Cleanup, which removes the temp dir).

# PostgreSQL 15's programs (pgbench and psql too): PG_BIN, else Debian's
# folder, else where the PATH's initdb is.
PG_BIN=${PG_BIN:-/usr/lib/postgresql/15/bin}
[[ -x $PG_BIN/initdb ]] || PG_BIN=$(dirname "$(command -v initdb || echo /nonexistent/initdb)")
for p in initdb pg_ctl postgres pgbench psql; do
  [[ -x $PG_BIN/$p ]] ||
    { echo "$(basename "$0"): no $p in $PG_BIN (scripts/setup.sh installs PostgreSQL)" >&2; exit 1; }
done
PSQL=$PG_BIN/psql
# shellcheck disable=SC2034 # for the scripts that source this one
PGBENCH=$PG_BIN/pgbench

# As root, initdb and postgres run as the postgres user (they refuse root).
PgAs() {
  if ((EUID == 0)); then
    setpriv --reuid=postgres --regid=postgres --init-groups "$@"
  else
    "$@"
  fi
}

PGDIR="$WORK/pg"
PGDATA="$PGDIR/data"
PG_STARTED=0
mkdir -p "$PGDIR"
if ((EUID == 0)); then
  chmod o+x "$WORK"
  chown postgres:postgres "$PGDIR"
fi

StopPg() {
  ((PG_STARTED)) || return 0
  PG_STARTED=0
  PgAs "$PG_BIN/pg_ctl" -D "$PGDATA" -m fast -w -t 30 stop >/dev/null 2>&1 && return 0
  # Not stopped in 30 s: the postmaster this script started, by its pid.
  local pid
  pid=$(head -1 "$PGDATA/postmaster.pid" 2>/dev/null || true)
  if [[ -n $pid ]]; then kill -KILL "$pid" 2>/dev/null || true; fi
}

StartPg() {
  PgAs "$PG_BIN/initdb" -D "$PGDATA" -A trust -U edgealloc -E UTF8 --locale=C --no-sync \
    >"$PGDIR/initdb.log" 2>&1 || { cat "$PGDIR/initdb.log" >&2; exit 1; }
  PG_PORT=$(FreePort)
  # Durable as SQLite's FULL: every commit's WAL flushed (fdatasync) before it
  # is answered. The rest is PostgreSQL 15's defaults (shared_buffers 128MB,
  # wal_sync_method fdatasync, full_page_writes on, commit_delay 0).
  PgAs tee -a "$PGDATA/postgresql.conf" >/dev/null <<EOF

# bench/pg_lib.sh
port = $PG_PORT
listen_addresses = '127.0.0.1'
unix_socket_directories = '$PGDIR'
max_connections = 100
fsync = on
synchronous_commit = on
# Times the WAL fsyncs in pg_stat_wal, to tell the disk's share (no effect
# on what is written or when).
track_wal_io_timing = on
EOF
  PG_STARTED=1
  PgAs "${ON_SERVER[@]}" "$PG_BIN/pg_ctl" -D "$PGDATA" -l "$PGDIR/server.log" -w -t 30 start \
    >/dev/null 2>&1 ||
    { echo "PostgreSQL did not start:" >&2; tail -20 "$PGDIR/server.log" >&2; exit 1; }
  PG_URI_BASE="postgresql://edgealloc@127.0.0.1:$PG_PORT"
}

# Sql STATEMENT [DATABASE]: runs one statement, prints its rows unaligned.
Sql() { "$PSQL" -X -q -At -v ON_ERROR_STOP=1 "$PG_URI_BASE/${2:-postgres}" -c "$1"; }

# CPU seconds (user + system) of the PostgreSQL server: its live processes,
# and the backends that have exited (the postmaster reaped them, so they are
# in its children's times: pgbench's backends end with pgbench).
PgCpu() {
  local ppid
  ppid=$(head -1 "$PGDATA/postmaster.pid")
  {
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$ppid/stat"
    for pid in $(pgrep -P "$ppid" || true); do
      awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || true
    done
  } | awk -v hz="$(getconf CLK_TCK)" '{ s += $1 } END { printf "%.2f", s / hz }'
}
