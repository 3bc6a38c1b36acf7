#!/usr/bin/env python3
"""Webhook delivery lag under the HTTP cycle load.

    bench/webhook_lag.py --bin build-bench/edgealloc --load build-bench/bench/http_load
                         [--seconds 5] [--connections 64]

One server (SQLite, sync full, 1,000 containers) whose keys file gives the
tenant `acme` a webhook to a receiver in this process. http_load runs
claim+release cycles as acme (closed loop, --connections) for --seconds;
every event of those sessions is delivered to the receiver, in signed
batches. The lag of an event is the receiver's clock when the batch arrived
minus the event's at_ms (the commit's time, by the server's clock: one
machine, one clock). Once the load stops the receiver waits until every
event GET /v1/events gives acme has arrived (60 s at most).

The receiver checks no signature (the tests do: tests/server/webhooks_test.py)
and answers 200 at once: the lag is the server's, from commit to POST.

Prints `name value unit`: webhook_cycles_per_s (the load's rate, the
webhook on), webhook_events_delivered, webhook_events_missing (events of
acme never delivered: 0), webhook_lag_p50_ms, webhook_lag_p99_ms,
webhook_lag_max_ms, webhook_batches.
"""

import argparse
import base64
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_http import Client, free_port, serve, stop, wait_answers  # noqa: E402

ADMIN = "bench-admin"
ACME = "bench-acme"


class Receiver:
    """Records, for each event delivered, when its batch arrived (ms)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.arrived = {}  # (region, seq) -> (at_ms, arrival ms)
        self.batches = 0
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now_ms = time.time() * 1000.0
                events = json.loads(body)["events"]
                with receiver.lock:
                    receiver.batches += 1
                    for e in events:
                        receiver.arrived.setdefault((e["region"], e["seq"]), (e["at_ms"], now_ms))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seqs(self):
        with self.lock:
            return set(self.arrived)


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(p * (len(values) - 1)))] if values else 0.0


def acme_seqs(client):
    seqs, after = set(), 0
    while True:
        status, page = client.call("GET", "/v1/events?limit=1000&after=%s" % after)
        if status != 200:
            sys.exit("GET /v1/events: %d %r" % (status, page))
        seqs.update((e["region"], e["seq"]) for e in page["events"])
        if not page["events"]:
            return seqs
        after = page["next"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--load", required=True, help="bench/http_load")
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--connections", type=int, default=64)
    args = ap.parse_args()

    receiver = Receiver()
    with tempfile.TemporaryDirectory() as tmp:
        secret = os.path.join(tmp, "acme.whsec")
        with open(secret, "w") as f:
            f.write("whsec_" + base64.b64encode(os.urandom(32)).decode() + "\n")
        os.chmod(secret, 0o600)
        keys = os.path.join(tmp, "keys")
        with open(keys, "w") as f:
            f.write("%s admin\n%s tenant acme webhook=http://127.0.0.1:%d/hook "
                    "webhook_secret_file=%s\n" % (ADMIN, ACME, receiver.port, secret))
        os.chmod(keys, 0o600)
        port = free_port()
        log = open(os.path.join(tmp, "server.log"), "wb")
        proc = serve(args.bin, os.path.join(tmp, "lag.db"), port,
                     ["--keys", keys, "--sync", "full", "--dead-after-ms", "3600000"],
                     stdout=log, stderr=log)
        try:
            if not wait_answers(port, "/readyz", proc, 60):
                sys.exit("the server did not become ready")
            admin = Client(port, ADMIN)
            fleet = {"containers": [{"id": "c-%d" % i, "region": "bench"} for i in range(1000)]}
            status, _ = admin.call("POST", "/v1/containers", fleet)
            if status != 200:
                sys.exit("registering the fleet: %d" % status)
            out = subprocess.run([args.load, "--port", str(port), "-c", str(args.connections),
                                  "--duration", str(args.seconds), "--warmup", "0",
                                  "--region", "bench", "--key", ACME, "--prefix", "webhook_"],
                                 capture_output=True, text=True, timeout=args.seconds + 120)
            if out.returncode != 0:
                sys.exit("http_load exited %d: %s" % (out.returncode, out.stderr[-500:]))
            for line in out.stdout.splitlines():
                if line.startswith(("webhook_cycles_per_s ", "webhook_double_allocations ")):
                    print(line)
            want = acme_seqs(Client(port, ACME))
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not want <= receiver.seqs():
                time.sleep(0.05)
            with receiver.lock:
                lags = [arrival - at for at, arrival in receiver.arrived.values()]
                batches = receiver.batches
            print("webhook_events_delivered %d count" % len(lags))
            print("webhook_events_missing %d count" % len(want - receiver.seqs()))
            print("webhook_batches %d count" % batches)
            for name, p in (("p50", 0.5), ("p99", 0.99), ("max", 1.0)):
                print("webhook_lag_%s_ms %.1f ms" % (name, percentile(lags, p)))
        finally:
            stop(proc)
            log.close()


if __name__ == "__main__":
    main()
