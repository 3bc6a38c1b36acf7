#!/usr/bin/env bash
# Runs `promtool check metrics` (parse errors and lint) on the /metrics of a
# live `edgealloc serve --demo`, after a claim, a release and heartbeats, so
# every family carries samples. Fails on any problem promtool reports, and
# when promtool is missing (scripts/setup.sh installs it): never a silent skip.
#
# With the repository's root as the second argument, it also checks that
# every metric packaging/prometheus/alerts.yml and packaging/grafana/edgealloc.json
# name is one the live server exports, so neither can drift from /metrics.
#
#   tests/server/promtool_check.sh build/edgealloc [REPO_ROOT]
set -euo pipefail

bin=${1:?usage: promtool_check.sh path/to/edgealloc [REPO_ROOT]}
root=${2:-}
if ! command -v promtool >/dev/null; then
  echo "FAIL promtool not found (apt-get install -y prometheus, or scripts/setup.sh)" >&2
  exit 1
fi
if ! command -v python3 >/dev/null; then
  echo "FAIL python3 not found" >&2
  exit 1
fi

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
# A keys file naming a tenant: the per-tenant families (and the alerts on
# them) are exported only for the tenants a keys file names.
# Its webhook (to a port nothing listens on: deliveries go unanswered) has
# the webhook families exported.
python3 -c 'import base64, os; print("whsec_" + base64.b64encode(os.urandom(32)).decode())' \
  >"$tmp/acme.whsec"
chmod 600 "$tmp/acme.whsec"
printf 'promtool-admin admin\npromtool-acme tenant acme max_sessions=5 webhook=http://127.0.0.1:9/h webhook_secret_file=%s\n' \
  "$tmp/acme.whsec" >"$tmp/keys"
chmod 600 "$tmp/keys"
# A region with a backup, so that edgealloc_region_on_backup (an alert's) has a series.
"$bin" serve --demo --db "$tmp/pool.db" --listen "127.0.0.1:$port" --mirror-refresh-ms 100 \
  --keys "$tmp/keys" --backup-region weur=eeur >"$tmp/server.log" 2>&1 &
server_pid=$!

# GET or POST with python3 (curl may be absent); prints the body, fails on a
# status other than `want`.
http() {
  python3 - "$@" <<'PY'
import os, sys, urllib.request, urllib.error
method, url, want = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = sys.argv[4].encode() if len(sys.argv) > 4 else None
headers = {"Content-Type": "application/json"} if data else {}
headers["Authorization"] = "Bearer " + os.environ.get("KEY", "promtool-admin")
req = urllib.request.Request(url, data=data, method=method, headers=headers)
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        status, body = r.status, r.read()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read()
sys.stdout.write(body.decode("utf-8"))
if status != want:
    sys.stderr.write(f"{method} {url} -> {status}, want {want}\n")
    sys.exit(1)
PY
}

for _ in $(seq 1 100); do
  if http GET "$base/readyz" 200 >/dev/null 2>&1; then break; fi
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "FAIL server exited; log:" >&2; cat "$tmp/server.log" >&2; exit 1
  fi
  sleep 0.1
done
http GET "$base/readyz" 200 >/dev/null

session=$(KEY=promtool-acme http POST "$base/v1/sessions" 201 '{"region":"weur","pool":"chrome"}')
sid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["session_id"])' "$session")
token=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["token"])' "$session")
KEY=promtool-acme http DELETE "$base/v1/sessions/$sid?token=$token" 204 >/dev/null
http POST "$base/v1/heartbeats" 202 '{"heartbeats":[{"container_id":"demo-weur-chrome-0","load":0.5}]}' >/dev/null
http GET "$base/v1/nowhere" 404 >/dev/null || true
sleep 0.3

http GET "$base/metrics" 200 >"$tmp/metrics.txt"
lines=$(wc -l <"$tmp/metrics.txt")
set +e
promtool check metrics <"$tmp/metrics.txt" >"$tmp/promtool.out" 2>&1
rc=$?
set -e
if [ "$rc" -ne 0 ] || [ -s "$tmp/promtool.out" ]; then
  echo "FAIL promtool check metrics (exit $rc):" >&2
  cat "$tmp/promtool.out" >&2
  exit 1
fi
for family in edgealloc_claims_total edgealloc_claim_duration_seconds edgealloc_heartbeat_batch_size \
              edgealloc_containers edgealloc_http_requests_total edgealloc_store_transactions_total \
              edgealloc_sessions_ended_total edgealloc_session_history_pruned_total; do
  if ! grep -q "^# TYPE $family " "$tmp/metrics.txt"; then
    echo "FAIL /metrics lacks $family" >&2
    exit 1
  fi
done
# The release above is counted by its end reason.
if ! grep -qE '^edgealloc_sessions_ended_total\{reason="released"\} [1-9]' "$tmp/metrics.txt"; then
  echo "FAIL /metrics does not count the release in edgealloc_sessions_ended_total" >&2
  exit 1
fi
echo "ok promtool check metrics: $lines lines, no errors, no lint warnings"
if [ -n "$root" ]; then
  used=$(grep -oh 'edgealloc_[a-z_]*' "$root/packaging/prometheus/alerts.yml" \
           "$root/packaging/grafana/edgealloc.json" | sort -u)
  [ -n "$used" ] || { echo "FAIL no metric names found in packaging/" >&2; exit 1; }
  for name in $used; do
    if ! grep -qE "^$name(\{| )" "$tmp/metrics.txt"; then
      echo "FAIL packaging/ uses $name, which /metrics does not export" >&2
      exit 1
    fi
  done
  echo "ok every metric of the alerts and the Grafana dashboard is exported: $(echo "$used" | wc -l) names"
fi
