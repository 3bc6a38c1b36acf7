#!/usr/bin/env python3
"""Lists and waiting claims, measured over HTTP in one run.

    bench/lists_and_waits.py --bin build/edgealloc [--sessions 5000] [--rounds 200] [--sync full]

1. Lists: a fleet of 10,000 containers, --sessions of them claimed (labels
   alternating). Then every session is read, one run each way on the same
   server: paging GET /v1/sessions?limit=100 to the end (pages/s, sessions/s)
   and one GET /v1/sessions/{id} per session (sessions/s), each by 4 client
   threads (the list as 4 listings, one region each). list_vs_single_reads_ratio = sessions/s listed over read singly.
   Also GET /v1/containers?limit=1000 pages/s.
2. wait_ms wake-up: a pool of one container, held. A client claims with
   wait_ms=10000 and waits; the holder releases; the time from sending the
   DELETE to the waiter's 201 is the wake-up latency (--rounds times; p50,
   p99). Beside it, the same time for a client that, instead of waiting,
   claims the moment its DELETE returned (what a client polling without
   wait_ms could at best do): wait_wakeup_vs_claim_after_release_ratio.

Standard library only. Prints `name value unit` lines.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import threading
import time

from bench_http import Client, free_port, serve, stop, wait_answers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/edgealloc")
    ap.add_argument("--sessions", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--sync", default="full", choices=["full", "normal"])
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="edgealloc-lists-")
    port = free_port()
    server = serve(args.bin, os.path.join(work, "a.db"), port,
                   ["--sync", args.sync, "--lease-ms", "3600000", "--log-level", "warn"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_answers(port, "/healthz", server)
        c = Client(port)
        regions = ["r%d" % i for i in range(4)]
        for r in regions:
            for start in range(0, 2500, 500):
                cs = [{"id": "%s-%05d" % (r, i), "region": r, "pool": "p"} for i in range(start, start + 500)]
                assert c.call("POST", "/v1/containers", {"containers": cs})[0] == 200
        ids = []
        for i in range(args.sessions):
            st, s = c.call("POST", "/v1/sessions", {"region": regions[i % 4], "pool": "p",
                                                    "labels": {"owner": "ci-%d" % (i % 2)}})
            assert st == 201, s
            ids.append(s["session_id"])

        def timed(threads_work):
            ts = [threading.Thread(target=w) for w in threads_work]
            t0 = time.perf_counter()
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return time.perf_counter() - t0

        pages = [0] * 4
        listed = [0] * 4

        def lister(k):
            def run():
                cl = Client(port)
                cursor = None
                while True:
                    path = "/v1/sessions?limit=100&region=" + regions[k]
                    if cursor:
                        path += "&cursor=" + cursor
                    st, body = cl.call("GET", path)
                    assert st == 200, body
                    pages[k] += 1
                    listed[k] += len(body["sessions"])
                    cursor = body["next_cursor"]
                    if not cursor:
                        return
            return run

        t_list = timed([lister(k) for k in range(4)])
        assert sum(listed) == args.sessions, listed

        def reader(k):
            def run():
                cl = Client(port)
                for sid in ids[k::4]:
                    assert cl.call("GET", "/v1/sessions/" + sid)[0] == 200
            return run

        t_single = timed([reader(k) for k in range(4)])
        cpages = [0]

        def clister():
            cl = Client(port)
            cursor = None
            while True:
                st, body = cl.call("GET", "/v1/containers?limit=1000" + ("&cursor=" + cursor if cursor else ""))
                assert st == 200
                cpages[0] += 1
                cursor = body["next_cursor"]
                if not cursor:
                    return

        t_cont = timed([clister])
        print("session_list_pages_per_s %.0f pages/s" % (sum(pages) / t_list))
        print("session_list_sessions_per_s %.0f sessions/s" % (args.sessions / t_list))
        print("session_single_reads_per_s %.0f sessions/s" % (args.sessions / t_single))
        print("list_vs_single_reads_ratio %.2f x" % (t_single / t_list))
        print("container_list_pages_per_s %.1f pages/s (1000 a page, 10000 containers)" % (cpages[0] / t_cont))

        # 2. wait_ms wake-up.
        assert c.call("POST", "/v1/containers", {"containers": [{"id": "solo", "region": "w", "pool": "one"}]})[0] == 200
        st, held = c.call("POST", "/v1/sessions", {"region": "w", "pool": "one"})
        assert st == 201
        waits, polls = [], []
        holder = Client(port)
        for i in range(args.rounds):
            result = {}

            def waiter():
                cl = Client(port)
                st, s = cl.call("POST", "/v1/sessions", {"region": "w", "pool": "one", "wait_ms": 10000})
                result["t"] = time.perf_counter()
                result["st"], result["s"] = st, s

            th = threading.Thread(target=waiter)
            th.start()
            # Until the server holds the waiter.
            while "\nedgealloc_claim_waiters 1\n" not in holder.text("/metrics"):
                time.sleep(0.001)
            t0 = time.perf_counter()
            st, _ = holder.call("DELETE", "/v1/sessions/%s?token=%d" % (held["session_id"], held["token"]))
            assert st == 204
            th.join()
            assert result["st"] == 201, result
            waits.append(result["t"] - t0)
            held = result["s"]
            # The same, claiming right after the release returns.
            t0 = time.perf_counter()
            st, _ = holder.call("DELETE", "/v1/sessions/%s?token=%d" % (held["session_id"], held["token"]))
            assert st == 204
            st, s = holder.call("POST", "/v1/sessions", {"region": "w", "pool": "one"})
            polls.append(time.perf_counter() - t0)
            assert st == 201, s
            held = s

        def pct(v, p):
            v = sorted(v)
            return v[min(len(v) - 1, int(p * len(v)))] * 1000

        print("wait_wakeup_p50 %.2f ms (release sent to the waiter's 201)" % pct(waits, 0.5))
        print("wait_wakeup_p99 %.2f ms" % pct(waits, 0.99))
        print("claim_after_release_p50 %.2f ms (release sent to a claim's 201, claimed when the release returned)" % pct(polls, 0.5))
        print("claim_after_release_p99 %.2f ms" % pct(polls, 0.99))
        print("wait_wakeup_vs_claim_after_release_ratio %.2f x (p50)" % (statistics.median(waits) / statistics.median(polls)))
    finally:
        stop(server, kill_late=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
