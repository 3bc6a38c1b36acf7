#!/usr/bin/env bash
# Keeps containers alive without `edgealloc agent`: a `ready` heartbeat for
# each id every few seconds, well inside the server's --dead-after-ms (30 s
# by default). Use the agent where you can (docs/agent.md): it also reports
# a failing health check, drains at SIGTERM and backs off when the server
# asks; this loop is the least a container must do.
#
#   examples/heartbeat-loop.sh weur-chrome-0 weur-chrome-1
#   EDGEALLOC_SERVER=http://10.0.0.2:8080 EDGEALLOC_KEY=k-container examples/heartbeat-loop.sh ID...
#   EVERY_S=2 examples/heartbeat-loop.sh ID...
set -u
server=${EDGEALLOC_SERVER:-http://127.0.0.1:8080}
every=${EVERY_S:-5}
(($#)) || { echo "usage: $0 CONTAINER_ID..." >&2; exit 2; }
items=""
for id in "$@"; do items+="${items:+,}{\"container_id\":\"$id\",\"state\":\"ready\"}"; done
auth=()
[ -n "${EDGEALLOC_KEY:-}" ] && auth=(-H "Authorization: Bearer $EDGEALLOC_KEY")
while :; do
  # 202 is taken; a 503 or 429 asks to retry after its Retry-After (1 s):
  # the next round comes soon enough either way.
  code=$(curl -s -o /dev/null -w '%{http_code}' -m 5 "${auth[@]}" \
    -XPOST "$server/v1/heartbeats" -H 'Content-Type: application/json' -d "{\"heartbeats\":[$items]}")
  [ "$code" = 202 ] || echo "heartbeat-loop: $server answered $code" >&2
  sleep "$every"
done
