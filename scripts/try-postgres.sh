#!/usr/bin/env bash
# Tries edgealloc on PostgreSQL in one command: a throwaway PostgreSQL 15
# (its own data folder and port, as the user who runs this; nothing of the
# system's PostgreSQL is touched), a role and a database made as README.md's
# PostgreSQL section says, and two `edgealloc serve` nodes on it with the
# demo fleet. Ctrl-C (or the end of --seconds) stops the nodes and deletes
# the database folder.
#
#   scripts/try-postgres.sh                 build/edgealloc, ports 8081 and 8082
#   scripts/try-postgres.sh --seconds 20    stop by itself after 20 s (tests)
#   EDGEALLOC_BIN=path scripts/try-postgres.sh
#   TRY_POSTGRES_PORTS="9081 9082" scripts/try-postgres.sh   other HTTP ports
#
# Needs the postgresql package (scripts/setup.sh installs it). As root, the
# database runs as the `postgres` user, which PostgreSQL requires.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=0
if [[ ${1:-} == --seconds ]]; then seconds=${2:?--seconds N}; fi
bin=${EDGEALLOC_BIN:-build/edgealloc}
[ -x "$bin" ] || { echo "try-postgres: $bin is not built (scripts/setup.sh builds it)" >&2; exit 1; }
pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -n "$pgbin" ] || { echo "try-postgres: no PostgreSQL (apt-get install postgresql)" >&2; exit 1; }

dir=$(mktemp -d /tmp/edgealloc-try-postgres.XXXXXX)
as_db_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$dir"
  as_db_user=(runuser -u postgres --)
fi
port=$((20000 + RANDOM % 20000))
nodes=()
cleanup() {
  for pid in "${nodes[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait "${nodes[@]}" 2>/dev/null || true
  "${as_db_user[@]}" "$pgbin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "try-postgres: stopping the nodes and the database" >&2; exit 0' INT TERM

echo "try-postgres: PostgreSQL $("$pgbin/postgres" --version | awk '{print $3}') in $dir, port $port"
"${as_db_user[@]}" "$pgbin/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
"${as_db_user[@]}" "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1" start >/dev/null

# The steps README.md gives: a role that logs in, and a database it owns (on
# PostgreSQL 15 only the owner may create tables in its public schema).
psql=("${as_db_user[@]}" "$pgbin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1)
"${psql[@]}" -c "CREATE ROLE edgealloc LOGIN" -c "CREATE DATABASE fleet OWNER edgealloc"
uri="postgresql://edgealloc@127.0.0.1:$port/fleet"

read -r -a http_ports <<<"${TRY_POSTGRES_PORTS:-8081 8082}"
for http in "${http_ports[@]}"; do
  # A session of their own: Ctrl-C reaches this script alone, whose trap
  # stops the nodes, so a node that stops by itself is told apart.
  setsid "$bin" serve --db "$uri" --listen "127.0.0.1:$http" --demo &
  nodes+=($!)
done
echo "try-postgres: two nodes on $uri:"
echo "  http://127.0.0.1:${http_ports[0]}/dashboard and http://127.0.0.1:${http_ports[1]}/dashboard"
echo "  curl -s -XPOST localhost:${http_ports[0]}/v1/sessions -H 'Content-Type: application/json' -d '{\"region\":\"weur\",\"pool\":\"chrome\"}'"
echo "  (a session claimed on one node is the same session on the other; Ctrl-C stops all)"
if ((seconds > 0)); then
  sleep "$seconds"
else
  status=0
  wait -n "${nodes[@]}" || status=$?
  echo "try-postgres: a node stopped by itself (exit code $status); stopping the rest" >&2
  exit 1
fi
