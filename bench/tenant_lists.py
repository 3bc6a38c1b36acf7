#!/usr/bin/env python3
"""What a list page costs a tenant with no sessions, beside one with many.

    bench/tenant_lists.py --bin build/edgealloc [--sessions 10000] [--before-bin OLD]

A server (SQLite, --sync normal) with a keys file of tenants a and b;
--sessions containers of one region and pool, every one claimed by tenant a.
Then, each as p50 and p99 of --rounds requests on one keep-alive connection:

- b_page_ms: GET /v1/sessions?limit=100 as tenant b, who holds no session;
- a_nomatch_page_ms: GET /v1/sessions?label=kind:none&limit=100 as tenant
  a (a label none of its sessions has), the first page;
- a_nomatch_pages: how many pages following next_cursor to the end takes;
- healthz_idle_ms and healthz_under_lists_ms: GET /healthz alone, and while
  two connections loop tenant b's list as fast as they can.

With --before-bin, the same again on that binary, and each figure's
before/after ratio. Standard library only; prints `name value unit` lines.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from bench_http import Client, free_port, serve, stop as stop_server, wait_answers

KEYS = "adm admin\nka tenant a\nkb tenant b\n"


def quantiles(samples):
    s = sorted(samples)
    return statistics.median(s), s[min(len(s) - 1, int(len(s) * 0.99))]


def timed(client, path, rounds):
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        status, _ = client.raw("GET", path)
        out.append((time.perf_counter() - t) * 1000)
        assert status == 200, status
    return out


def run(binary, sessions, rounds):
    work = tempfile.mkdtemp(prefix="edgealloc-tenant-lists-")
    keys = os.path.join(work, "keys")
    with open(keys, "w") as f:
        f.write(KEYS)
    os.chmod(keys, 0o600)
    port = free_port()
    server = serve(binary, os.path.join(work, "a.db"), port,
                   ["--sync", "normal", "--keys", keys, "--lease-ms", "3600000", "--log-level", "warn"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    figures = {}
    try:
        wait_answers(port, "/healthz", server)
        admin = Client(port, "adm")
        for start in range(0, sessions, 500):
            cs = [{"id": "c-%06d" % i, "region": "r", "pool": "p"}
                  for i in range(start, min(sessions, start + 500))]
            assert admin.call("POST", "/v1/containers", {"containers": cs})[0] == 200

        def claim(n):
            c = Client(port, "ka")
            for _ in range(n):
                st, _ = c.call("POST", "/v1/sessions", {"region": "r", "pool": "p"})
                assert st == 201, st
        threads = [threading.Thread(target=claim, args=(sessions // 4 + (i < sessions % 4),))
                   for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        b, a = Client(port, "kb"), Client(port, "ka")
        figures["b_page_ms"] = quantiles(timed(b, "/v1/sessions?limit=100", rounds))
        figures["a_nomatch_page_ms"] = quantiles(
            timed(a, "/v1/sessions?label=kind:none&limit=100", rounds))
        pages, cursor = 0, None
        while True:
            st, body = a.call("GET", "/v1/sessions?label=kind:none&limit=100" +
                              ("&cursor=" + cursor if cursor else ""))
            assert st == 200
            pages += 1
            cursor = body["next_cursor"]
            if not cursor:
                break
        figures["a_nomatch_pages"] = (pages, pages)

        health = Client(port)
        figures["healthz_idle_ms"] = quantiles(timed(health, "/healthz", rounds * 5))
        stop = threading.Event()

        def loop():
            c = Client(port, "kb")
            while not stop.is_set():
                c.raw("GET", "/v1/sessions?limit=100")
        loopers = [threading.Thread(target=loop) for _ in range(2)]
        for t in loopers:
            t.start()
        time.sleep(0.5)
        figures["healthz_under_lists_ms"] = quantiles(timed(health, "/healthz", rounds * 5))
        stop.set()
        for t in loopers:
            t.join()
    finally:
        stop_server(server, kill_late=True)
        shutil.rmtree(work, ignore_errors=True)
    return figures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/edgealloc")
    ap.add_argument("--before-bin")
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--rounds", type=int, default=100)
    args = ap.parse_args()
    print("cores %d sessions %d" % (os.cpu_count(), args.sessions))
    after = run(args.bin, args.sessions, args.rounds)
    before = run(args.before_bin, args.sessions, args.rounds) if args.before_bin else None
    for name, (p50, p99) in after.items():
        unit = "" if name.endswith("pages") else " ms"
        line = "%s p50 %.3f%s p99 %.3f%s" % (name, p50, unit, p99, unit)
        if before:
            b50, b99 = before[name]
            line += " | before p50 %.3f p99 %.3f | before/after p50 %.1f" % (
                b50, b99, b50 / p50 if p50 else float("nan"))
        print(line)


if __name__ == "__main__":
    main()
