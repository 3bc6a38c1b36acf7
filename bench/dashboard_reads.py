#!/usr/bin/env python3
"""What the dashboard's reads cost at 300 pools, over HTTP in one run.

    bench/dashboard_reads.py --bin build/edgealloc [--seconds 5]

A fleet of 60 regions x 5 pools (2,400 containers, half of them claimed) on
one server whose capacity history is full (60 samples, --history-interval-ms
100). Then, each for --seconds with 4 client threads on keep-alive
connections:

1. GET /v1/capacity, GET /v1/capacity/history and GET /metrics alone:
   requests/s, p50 and p99, body bytes (a dashboard asks for the first two
   every 1.5 s and the history every interval);
2. claim+release cycles on one pool by 4 threads, alone, then with 4 more
   threads reading /v1/capacity/history without pause (far more than any
   number of dashboards asks): claim_cycles_with_history_reads_ratio.

Standard library only (the client threads share one interpreter, so the
absolute rates are the client's as much as the server's: read the ratio).
Prints `name value unit` lines.
"""

import argparse
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

from bench_http import Client, free_port, serve, stop as stop_server, wait_answers

REGIONS = [f"{a}-{i}" for a in ("weur", "eeur", "neur", "seur", "wnam", "enam", "cnam", "sam",
                                 "afr", "mea", "apac", "oce") for i in range(1, 6)]
POOLS = ["chrome", "firefox", "webkit", "gpu", "sandbox"]
PER_POOL = 8
THREADS = 4


def run_threads(n, seconds, work):
    """Runs work(client_index, stop) on n threads; returns their results."""
    stop = threading.Event()
    results = [None] * n

    def one(i):
        results[i] = work(i, stop)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join()
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/edgealloc")
    ap.add_argument("--seconds", type=float, default=5)
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="edgealloc-dashboard-bench-")
    port = free_port()
    server = serve(os.path.abspath(args.bin), os.path.join(tmp, "b.db"), port,
                   ["--dead-after-ms", "3600000", "--mirror-refresh-ms", "100", "--history-interval-ms", "100"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answers(port, "/healthz", server)
        c = Client(port)
        fleet = [{"id": f"{r}.{p}.{i}", "region": r, "pool": p}
                 for r, p in itertools.product(REGIONS, POOLS) for i in range(PER_POOL)]
        assert c.call("POST", "/v1/containers", {"containers": fleet})[0] == 200
        for r, p in itertools.product(REGIONS, POOLS):
            for _ in range(PER_POOL // 2):
                assert c.call("POST", "/v1/sessions", {"region": r, "pool": p, "lease_ms": 3600000})[0] == 201
        time.sleep(6.5)  # 60 samples a history interval apart
        _, raw = c.raw("GET", "/v1/capacity/history")
        samples = len(json.loads(raw)["as_of_ms"])
        print(f"history_samples {samples} samples (300 pools)")

        for path in ("/v1/capacity", "/v1/capacity/history", "/metrics"):
            def reads(i, stop, path=path):
                cl, lat, size = Client(port), [], 0
                while not stop.is_set():
                    t = time.perf_counter()
                    status, body = cl.raw("GET", path)
                    lat.append(time.perf_counter() - t)
                    assert status == 200, status
                    size = len(body)
                return lat, size
            out = run_threads(THREADS, args.seconds, reads)
            lat = sorted(x for l, _ in out for x in l)
            name = path.strip("/").replace("/", "_").replace("v1_", "")
            print(f"{name}_requests_per_s {len(lat) / args.seconds:.0f} 1/s")
            print(f"{name}_p50_ms {1000 * lat[len(lat) // 2]:.2f} ms")
            print(f"{name}_p99_ms {1000 * lat[int(len(lat) * 0.99)]:.2f} ms")
            print(f"{name}_body_bytes {out[0][1]} bytes")

        def cycles(i, stop):
            cl, n = Client(port), 0
            while not stop.is_set():
                status, s = cl.call("POST", "/v1/sessions", {"region": "weur-1", "pool": "chrome"})
                assert status == 201, (status, s)
                assert cl.call("DELETE", f"/v1/sessions/{s['session_id']}?token={s['token']}")[0] == 204
                n += 1
            return n

        alone = sum(run_threads(THREADS, args.seconds, cycles)) / args.seconds
        history_reads = [0]

        def both(i, stop):
            if i < THREADS:
                return cycles(i, stop)
            cl = Client(port)
            while not stop.is_set():
                assert cl.call("GET", "/v1/capacity/history")[0] == 200
                history_reads[0] += 1
            return 0

        with_reads = sum(run_threads(2 * THREADS, args.seconds, both)) / args.seconds
        print(f"claim_cycles_alone_per_s {alone:.0f} 1/s")
        print(f"claim_cycles_with_history_reads_per_s {with_reads:.0f} 1/s "
              f"({history_reads[0] / args.seconds:.0f} history reads/s beside)")
        print(f"claim_cycles_with_history_reads_ratio {with_reads / alone:.2f} x")
    finally:
        stop_server(server, timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
