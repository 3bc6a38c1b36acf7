#!/usr/bin/env python3
"""Noisy neighbour: does one tenant's abuse reach another's claims? Over HTTP, in one run.

    bench/noisy_neighbour.py --bin build/edgealloc [--before-bin OLD/edgealloc]
                             [--seconds 8] [--b-rate 100] [--a-sessions 20000] [--waiters 2000]

One server a binary (`edgealloc serve --sync full --dead-after-ms 3600000`,
SQLite in a temp dir) with a keys file of an admin key, tenant A (`acme`),
tenant B (`beta`) and a container key for A's heartbeats. The fleet, region
`r1`: pool `b` (200 containers, B's), pool `a` (200, which A fills) and pool
`bulk` (--a-sessions containers, which A holds: 20,000 sessions). A's
sessions are claimed on a setup server without tenant limits (so that A's
claims_per_s does not make the setup last minutes), which is then stopped;
the measured server starts on the same database with the tenants' limits
(--a-limits, --b-limits) on their keys file lines. A binary that refuses
limits on a keys file line (older builds: "expected 'key role [tenant or
ids]'") is run without them, and the table says so. Nothing dies: the
server's --dead-after-ms is an hour, as in bench/run's HTTP runs, so no
keep-alive heartbeats run beside the measurements.

B, measured: claim (`POST /v1/sessions`, pool `b`) then release (`DELETE`),
open loop: --b-rate cycles a second (100) over --b-conns keep-alive
connections (8, one thread each, http.client): cycle i is due at
t0 + i / rate and taken by the first free connection, and its latency runs
from when it was due to the release's 204, so a stall shows in the cycles
behind it once every connection is busy (no coordinated omission). Cycles
still unsent 4 s after the last was due are counted "late" at what they had
waited then (the phase's p99 is then a lower bound). A refusal is any claim
that is not 201 or release that is not 204 (429, 503, a 10 s timeout). B
holds at most --b-conns sessions, far within its limits, so the goal is no
refusal at all. For each phase, --seconds of cycles after A's load is up:

    quiet       A does nothing
    waiters     A holds every waiting claim the server lets it (wait_ms
                30000; --waiters at most, the client's cap): half on made-up
                regions (one each) with 16 made-up fallback regions each,
                half on pool `a`, which A holds whole; a claim answered
                within a second (429, 503 overloaded, or 503 no_capacity
                where the server answers a made-up pool at once) is sent
                again a second later (its Retry-After), one that waited
                out its 30 s at once
    lists       4 connections loop GET /v1/sessions?limit=1000 over A's
                20,000 sessions to the last page: two of them plain, two
                with label=owner:nobody (matches none)
    flood       16 connections, closed loop, claims naming a made-up region
                and pool, a new name every request, no wait
    heartbeats  4 connections, closed loop, POST /v1/heartbeats of 1,000 of
                A's containers each: the queue (--queue-capacity, 100,000)
                sits at its bound and the rest is 503 overloaded

A's load runs in a child process (this script with --attack), on asyncio
connections, so that B's measuring threads share no interpreter with it.
Between phases the server is let settle (no waiter, empty heartbeat queue).
Goal, each attack: B's p99 at most 2x its quiet p99, and B never refused.

Prints `name value unit` lines (nn_<label>_<phase>_<figure>, the label
`this`, or `before` and `after` with --before-bin), then the
table in markdown (lines starting `|`) and what A did (lines starting `- `).
With --before-bin both binaries run the same phases in this one run, the
older first, and the table shows them side by side.
"""

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_http import Client, free_port, serve, stop, wait_answers  # noqa: E402

ATTACKS = ["waiters", "lists", "flood", "heartbeats"]
PHASES = ["quiet"] + ATTACKS
KEYS = {"admin": "nn-admin", "a": "nn-tenant-a", "b": "nn-tenant-b", "hb": "nn-container-a"}
REGION = "r1"
B_POOL_SIZE = 200
A_POOL_SIZE = 200
GOAL_RATIO = 2.0


# A's side: asyncio keep-alive connections, one request in flight each. ------

class AConn:
    """A minimal HTTP/1.1 client connection (Content-Length bodies, as the
    server answers), reconnecting when the server closes."""

    def __init__(self, port, key):
        self.port, self.key = port, key
        self.r = self.w = None

    async def req(self, method, path, body=b""):
        if self.w is None:
            self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)
        head = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % (method, path, self.key, len(body))).encode()
        try:
            self.w.write(head + body)
            hdr = await self.r.readuntil(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", hdr, re.I)
            data = await self.r.readexactly(int(m.group(1))) if m else b""
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            self.close()
            return 0, b""
        if re.search(rb"\r\nconnection: *close", hdr, re.I):
            self.close()
        return int(hdr[9:12]), data

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


def claim_body(region, pool, **extra):
    return json.dumps(dict(region=region, pool=pool, **extra)).encode()


async def attack(kind, port, args):
    """Runs one attack until stdin closes; prints `ready` once A's load is up,
    then one line of JSON with what it did."""
    stats = {"status": {}}
    stop = asyncio.Event()
    ready = asyncio.Event()
    loop = asyncio.get_running_loop()
    tasks = []
    started = time.monotonic()

    def count(status, body=b""):
        # A refusal by its code too: 503 no_capacity and 503 overloaded are
        # different defences.
        m = re.search(rb'"code":"([a-z_]+)"', body[:200]) if status >= 400 else None
        k = "%d %s" % (status, m.group(1).decode()) if m else str(status)
        stats["status"][k] = stats["status"].get(k, 0) + 1

    async def waiter(i):
        c = AConn(port, KEYS["a"])
        if i % 2 == 0:
            body = claim_body("ghost-%d" % i, "nopool", wait_ms=30000,
                              fallback_regions=["ghost-%d-%d" % (i, k) for k in range(16)])
        else:
            body = claim_body(REGION, "a", wait_ms=30000, lease_ms=3600000)
        while not stop.is_set():
            t = time.monotonic()
            status, data = await c.req("POST", "/v1/sessions", body)
            count(status, data)
            if status == 201:  # served (nothing is released in pool a): hold it
                await stop.wait()
            elif time.monotonic() - t < 1:  # refused at once: its Retry-After
                await asyncio.sleep(1)

    async def lister(i):
        c = AConn(port, KEYS["a"])
        base = "/v1/sessions?limit=1000" + ("&label=owner:nobody" if i >= 2 else "")
        stats.setdefault("pages", 0)
        stats.setdefault("sessions", 0)
        while not stop.is_set():
            cursor = None
            while not stop.is_set():
                path = base + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
                status, body = await c.req("GET", path)
                count(status, body)
                if status != 200:
                    await asyncio.sleep(0.1)
                    break
                stats["pages"] += 1
                stats["sessions"] += body.count(b'"session_id"')
                ready.set()
                m = re.search(rb'"next_cursor":(?:null|"([^"]*)")', body[body.rfind(b'"next_cursor"'):])
                cursor = m.group(1).decode() if m and m.group(1) else None
                if not cursor:
                    break

    async def flooder(i):
        c = AConn(port, KEYS["a"])
        n = 0
        while not stop.is_set():
            n += 1
            status, data = await c.req("POST", "/v1/sessions", claim_body("nx-%d-%d" % (i, n), "np-%d" % n))
            count(status, data)
            if n == 50:
                ready.set()

    hb_bodies = []
    for start in range(0, args.a_sessions, 1000):
        hb_bodies.append(json.dumps({"heartbeats": [
            {"container_id": "bulk-%05d" % j} for j in range(start, min(start + 1000, args.a_sessions))]}).encode())

    async def heartbeater(i):
        c = AConn(port, KEYS["hb"])
        n = i
        while not stop.is_set():
            body = hb_bodies[n % len(hb_bodies)]
            n += 1
            status, data = await c.req("POST", "/v1/heartbeats", body)
            count(status, data)
            if status == 202:
                stats["heartbeats_accepted"] = stats.get("heartbeats_accepted", 0) + body.count(b"container_id")
            elif status == 503:
                ready.set()  # the queue is at its bound

    if kind == "waiters":
        for i in range(args.waiters):
            tasks.append(asyncio.create_task(waiter(i)))
            if i % 100 == 99:
                await asyncio.sleep(0.02)  # a ramp, not a SYN storm
        # Up once the server's waiter count stops growing.
        mc, last, same = AConn(port, KEYS["admin"]), -1, 0
        while same < 3 and time.monotonic() - started < 15:
            await asyncio.sleep(0.3)
            _, m = await mc.req("GET", "/metrics")
            v = metric(m.decode(), "edgealloc_claim_waiters")
            same = same + 1 if v == last else 0
            last = v
        stats["waiters_at_ready"] = last
        ready.set()
    elif kind == "lists":
        tasks = [asyncio.create_task(lister(i)) for i in range(4)]
    elif kind == "flood":
        tasks = [asyncio.create_task(flooder(i)) for i in range(16)]
    elif kind == "heartbeats":
        tasks = [asyncio.create_task(heartbeater(i)) for i in range(4)]
    try:
        await asyncio.wait_for(ready.wait(), 20)
    except asyncio.TimeoutError:
        stats["not_ready"] = True
    stats["ready_s"] = round(time.monotonic() - started, 2)
    for k in list(stats["status"]):
        stats["status"][k] = 0  # count what A does while B is measured
    stats["pages"] = stats["sessions"] = stats["heartbeats_accepted"] = 0
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    t0 = time.monotonic()
    await loop.run_in_executor(None, sys.stdin.read)  # until the parent closes it
    stats["seconds"] = round(time.monotonic() - t0, 2)
    stats["status"] = {k: v for k, v in stats["status"].items() if v}
    if kind == "waiters":
        _, m = await AConn(port, KEYS["admin"]).req("GET", "/metrics")
        stats["waiters_at_end"] = metric(m.decode(), "edgealloc_claim_waiters")
    stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(stats), flush=True)


def metric(text, name):
    m = re.search(r"^%s ([0-9.e+]+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


# The server. ----------------------------------------------------------------

def write_keys(path, limits):
    a = (" " + limits["a"]) if limits else ""
    b = (" " + limits["b"]) if limits else ""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("%s admin\n%s tenant acme%s\n%s tenant beta%s\n%s container bulk-*\n"
                % (KEYS["admin"], KEYS["a"], a, KEYS["b"], b, KEYS["hb"]))


class Server:
    def __init__(self, binary, work, keys):
        self.port = free_port()
        self.log = open(os.path.join(work, "server.log"), "ab")
        self.proc = serve(binary, os.path.join(work, "nn.db"), self.port,
                          ["--keys", keys, "--sync", "full", "--dead-after-ms", "3600000", "--log-level", "warn"],
                          stdout=self.log, stderr=self.log)
        if not wait_answers(self.port, "/readyz", self.proc, timeout=15) and self.proc.poll() is None:
            raise RuntimeError("server did not become ready")

    def alive(self):
        return self.proc.poll() is None

    def metrics(self):
        return Client(self.port, KEYS["admin"], timeout=10).text("/metrics")

    def stop(self):
        stop(self.proc, timeout=10, kill_late=True)
        self.log.close()


def setup(binary, work, args):
    """The fleet and A's sessions, on a server without tenant limits."""
    keys = os.path.join(work, "keys.setup")
    write_keys(keys, None)
    s = Server(binary, work, keys)
    if not s.alive():
        raise RuntimeError("setup server exited %s (see %s/server.log)" % (s.proc.returncode, work))
    admin = Client(s.port, KEYS["admin"])
    fleet = ([("b-%03d" % i, "b") for i in range(B_POOL_SIZE)] + [("a-%03d" % i, "a") for i in range(A_POOL_SIZE)]
             + [("bulk-%05d" % i, "bulk") for i in range(args.a_sessions)])
    for k in range(0, len(fleet), 1000):
        cs = [{"id": cid, "region": REGION, "pool": pool, "latency_ms": i % 50}
              for i, (cid, pool) in enumerate(fleet[k:k + 1000])]
        st, body = admin.call("POST", "/v1/containers", {"containers": cs})
        assert st == 200, body

    async def claims():
        todo = [("a", None)] * A_POOL_SIZE + [("bulk", None)] * args.a_sessions
        bad = []

        async def worker(i):
            c = AConn(s.port, KEYS["a"])
            for pool, _ in todo[i::32]:
                body = claim_body(REGION, pool, lease_ms=3600000, labels={"owner": "a-" + pool})
                status, data = await c.req("POST", "/v1/sessions", body)
                if status != 201:
                    bad.append((status, data[:200]))
        await asyncio.gather(*(worker(i) for i in range(32)))
        assert not bad, bad[:3]
    t = time.monotonic()
    asyncio.run(claims())
    setup_s = time.monotonic() - t
    s.stop()
    return setup_s


# B's side. --------------------------------------------------------------------

class B:
    """Tenant B: claim+release cycles, open loop at `rate` a second over
    `conns` keep-alive connections (threads with http.client): cycle i is due
    at t0 + i / rate and taken by the first connection free, so a slow answer
    delays the cycles behind it only when every connection is busy, and each
    cycle's latency runs from when it was due (no coordinated omission)."""

    def __init__(self, port, rate, conns):
        self.port, self.rate = port, rate
        self.clients = [Client(port, KEYS["b"], timeout=10) for _ in range(conns)]

    def cycles(self, seconds, grace=4.0):
        """{"lat": ms a cycle, "refused": n, "why": {...}, "late": n}. Cycles
        still unsent `grace` seconds after the last was due are counted as
        late, at the time they had waited then (so p99 is at least that)."""
        n = int(seconds * self.rate)
        t0 = time.perf_counter() + 0.01
        cutoff = t0 + seconds + grace
        lock = threading.Lock()
        res = {"lat": [], "refused": 0, "why": {}, "late": 0}
        nxt = [0]

        def refuse(why):
            with lock:
                res["refused"] += 1
                res["why"][why] = res["why"].get(why, 0) + 1

        def worker(k):
            while True:
                with lock:
                    i = nxt[0]
                    nxt[0] += 1
                if i >= n:
                    return
                due = t0 + i / self.rate
                now = time.perf_counter()
                if now > cutoff:
                    with lock:
                        res["late"] += 1
                        res["lat"].append((now - due) * 1000)
                    continue
                if due > now:
                    time.sleep(due - now)
                c = self.clients[k]
                try:
                    st, s = c.call("POST", "/v1/sessions", {"region": REGION, "pool": "b"})
                    if st == 201:
                        st2, _ = c.call("DELETE", "/v1/sessions/%s?token=%d" % (s["session_id"], s["token"]))
                        if st2 != 204:
                            refuse("release %d" % st2)
                    else:
                        refuse("%d %s" % (st, ((s or {}).get("error") or {}).get("code", "")))
                except (OSError, ValueError) as e:
                    refuse(type(e).__name__)
                    self.clients[k] = Client(self.port, KEYS["b"], timeout=10)
                with lock:
                    res["lat"].append((time.perf_counter() - due) * 1000)

        ts = [threading.Thread(target=worker, args=(k,)) for k in range(len(self.clients))]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return res


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(p * len(v)))]


def settle(server, limit_s=15):
    """Until no claim waits and the heartbeat queue is empty."""
    t = time.monotonic()
    while time.monotonic() - t < limit_s:
        m = server.metrics()
        if not metric(m, "edgealloc_claim_waiters") and not metric(m, "edgealloc_heartbeat_queue_depth"):
            break
        time.sleep(0.2)
    time.sleep(0.5)
    return round(time.monotonic() - t, 1)


def run_binary(label, binary, args):
    work = tempfile.mkdtemp(prefix="edgealloc-nn-%s-" % label)
    out = {"label": label, "binary": binary,
           "version": subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()}
    try:
        out["setup_s"] = round(setup(binary, work, args), 1)
        keys = os.path.join(work, "keys")
        limits = None if args.no_limits else {"a": args.a_limits, "b": args.b_limits}
        write_keys(keys, limits)
        s = Server(binary, work, keys)
        if not s.alive() and limits:
            # An older build: "keys:2: 6 fields; expected 'key role [tenant or ids]'".
            limits = None
            write_keys(keys, None)
            s = Server(binary, work, keys)
        if not s.alive():
            raise RuntimeError("server exited %s (see %s/server.log)" % (s.proc.returncode, work))
        out["limits"] = limits
        try:
            b = B(s.port, args.b_rate, args.b_conns)
            b.cycles(1)  # warm: connection, statement cache
            for phase in PHASES:
                a_stats = None
                child = None
                if phase != "quiet":
                    child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--attack", phase,
                                              "--port", str(s.port), "--waiters", str(args.waiters),
                                              "--a-sessions", str(args.a_sessions)],
                                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                    line = child.stdout.readline()
                    assert line.strip() == "ready", "attack %s: %r" % (phase, line)
                m = b.cycles(args.seconds)
                if child:
                    child.stdin.close()
                    a_stats = json.loads(child.stdout.readline() or "{}")
                    child.wait(30)
                out[phase] = {"p50": pct(m["lat"], 0.5), "p99": pct(m["lat"], 0.99), "n": len(m["lat"]),
                              "refused": m["refused"], "why": m["why"], "late": m["late"], "a": a_stats,
                              "settle_s": settle(s), "server_alive": s.alive()}
                print("# %s %s: p50 %.2f ms p99 %.2f ms refused %d %s late %d; settled in %.1f s; A %s" % (
                    label, phase, out[phase]["p50"], out[phase]["p99"], m["refused"], m["why"] or "",
                    m["late"], out[phase]["settle_s"], json.dumps(a_stats) if a_stats else "-"),
                      file=sys.stderr, flush=True)
        finally:
            s.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


# The report. ------------------------------------------------------------------

def a_did(phase, r):
    a = r[phase]["a"] or {}
    sec = a.get("seconds") or 1
    st = a.get("status", {})
    total = sum(st.values())
    refused = sum(v for k, v in st.items() if k.startswith(("429", "503", "0")))
    if phase == "waiters":
        return ("held %s waiting claims (server's gauge at start %s, at end %s; --waiters %d tried), "
                "%d answers in %.1f s: %s" % (
                    int(a.get("waiters_at_end") or 0), int(a.get("waiters_at_ready") or 0),
                    int(a.get("waiters_at_end") or 0), ARGS.waiters, total, sec, json.dumps(st)))
    if phase == "lists":
        return "%.0f pages/s, %.0f sessions listed/s (statuses %s)" % (
            a.get("pages", 0) / sec, a.get("sessions", 0) / sec, json.dumps(st))
    if phase == "flood":
        return "%.0f claims/s, %d of them refused (statuses %s)" % (total / sec, refused, json.dumps(st))
    if phase == "heartbeats":
        return "%.0f requests/s, %.0f heartbeats accepted/s, %d requests 503 (statuses %s)" % (
            total / sec, a.get("heartbeats_accepted", 0) / sec,
            sum(v for k, v in st.items() if k.startswith("503")), json.dumps(st))
    return ""


def report(runs):
    for r in runs:
        q = r["quiet"]["p99"] or 1e-9
        for phase in PHASES:
            p = r[phase]
            pre = "nn_%s_%s" % (r["label"], phase)
            print("%s_p50_ms %.2f ms" % (pre, p["p50"]))
            print("%s_p99_ms %.2f ms" % (pre, p["p99"]))
            print("%s_refused %d count" % (pre, p["refused"]))
            if phase != "quiet":
                p["ratio"] = p["p99"] / q
                p["met"] = p["ratio"] <= GOAL_RATIO and p["refused"] == 0
                print("%s_p99_ratio %.2f x" % (pre, p["ratio"]))
        print("nn_%s_goals_met %d count (of %d attacks)" % (
            r["label"], sum(r[ph]["met"] for ph in ATTACKS), len(ATTACKS)))
        print("nn_%s_worst_p99_ratio %.2f x" % (r["label"], max(r[ph]["ratio"] for ph in ATTACKS)))
        print("nn_%s_refused %d count (B's refusals, every attack)" % (
            r["label"], sum(r[ph]["refused"] for ph in ATTACKS)))
    print()
    cols = "| phase |" + "".join(" %s p50 ms | %s p99 ms | %s p99 / quiet | %s refused | %s goal |" % ((r["label"],) * 5)
                                  for r in runs)
    print(cols)
    print("|---|" + "---|---|---|---|---|" * len(runs))
    for phase in PHASES:
        row = "| %s |" % phase
        for r in runs:
            p = r[phase]
            if phase == "quiet":
                row += " %.2f | %.2f | 1 | %d | - |" % (p["p50"], p["p99"], p["refused"])
            else:
                row += " %.2f | %.2f%s | %.2f | %d%s | %s |" % (
                    p["p50"], p["p99"], " (at least: %d cycles late)" % p["late"] if p["late"] else "",
                    p["ratio"], p["refused"],
                    " (%s)" % ", ".join("%s: %d" % kv for kv in sorted(p["why"].items())) if p["why"] else "",
                    "met" if p["met"] else "not met")
        print(row)
    print()
    for r in runs:
        print("- %s (`%s`, %s): tenant limits %s; setup (fleet and A's %d sessions) %.1f s; B %d cycles a phase at %g/s on %d connections." % (
            r["label"], shown_path(r["binary"]), r["version"],
            "on its keys file lines: A `%s`, B `%s`" % (r["limits"]["a"], r["limits"]["b"]) if r["limits"]
            else "none (this binary refuses them on a keys file line, or --no-limits)",
            ARGS.a_sessions, r["setup_s"], r["quiet"]["n"], ARGS.b_rate, ARGS.b_conns))
        for phase in ATTACKS:
            print("  - %s, A %s" % (phase, a_did(phase, r)))


ARGS = None


def shown_path(binary):
    """A binary as RESULTS.md names it: a path in the repo, never a scratch
    path of the machine that ran it."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.abspath(binary)
    if path.startswith(root + os.sep):
        return os.path.relpath(path, root)
    return "an older build, outside the repo"


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/edgealloc")
    ap.add_argument("--before-bin", default="", help="an older build, run first with the same phases")
    ap.add_argument("--seconds", type=float, default=8, help="B's measured cycles, each phase")
    ap.add_argument("--b-rate", type=float, default=100, help="B's claim+release cycles a second (open loop)")
    ap.add_argument("--b-conns", type=int, default=8, help="B's keep-alive connections")
    ap.add_argument("--a-sessions", type=int, default=20000)
    ap.add_argument("--waiters", type=int, default=2000, help="waiting claims A tries to hold at most")
    ap.add_argument("--a-limits", default="max_sessions=25000 claims_per_s=200 max_waiters=1000")
    ap.add_argument("--b-limits", default="max_sessions=50 claims_per_s=500 max_waiters=100")
    ap.add_argument("--no-limits", action="store_true", help="keys file without tenant limits")
    ap.add_argument("--attack", choices=ATTACKS, help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    ARGS = args = ap.parse_args()
    # bench/run's timeout sends SIGTERM: unwind, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.attack:
        asyncio.run(attack(args.attack, args.port, args))
        return
    runs = []
    if args.before_bin:
        runs.append(run_binary("before", os.path.abspath(args.before_bin), args))
    runs.append(run_binary("after" if args.before_bin else "this", os.path.abspath(args.bin), args))
    report(runs)


if __name__ == "__main__":
    main()
