"""Tenant A's abuses, each run in a child process (noisy_neighbour.py
--attack KIND) on asyncio connections, so that B's measuring threads share no
interpreter with it. Each prints `ready` once its load is up, then, when its
stdin closes, one line of JSON with what it did while B was measured."""

import asyncio
import json
import re
import sys
import time
import urllib.parse

from noisy.aconn import AConn, claim_body, status_key
from noisy.fleet import KEYS, NO_SUCH_KEY, REGION, SCOPED_ID, metric

MIB = 1 << 20
WATCHED = 64 << 10  # what the server takes in behind a waiting claim


class Ctx:
    def __init__(self, port, args):
        self.port, self.args = port, args
        self.stats = {"status": {}}
        self.stop = asyncio.Event()
        self.ready = asyncio.Event()
        self.started = time.monotonic()

    def count(self, status, body=b"", **more):
        k = status_key(status, body)
        self.stats["status"][k] = self.stats["status"].get(k, 0) + 1
        self.tally(**more)

    def tally(self, **more):
        for name, n in more.items():
            self.stats[name] = self.stats.get(name, 0) + n

    def up_after(self, seconds):
        """Ready once the load has run this long (for abuses the server may
        refuse in any of several ways, or not at all)."""
        if time.monotonic() - self.started >= seconds:
            self.ready.set()

    async def waiters_gauge(self):
        _, m = await AConn(self.port, KEYS["admin"]).req("GET", "/metrics")
        return metric(m.decode(), "edgealloc_claim_waiters")

    async def until_waiters_steady(self, limit_s=15):
        """Ready once the server's waiting claims stop growing."""
        last, same, t = -1, 0, time.monotonic()
        while same < 3 and time.monotonic() - t < limit_s:
            await asyncio.sleep(0.3)
            v = await self.waiters_gauge()
            same = same + 1 if v == last else 0
            last = v
        self.stats["waiters_at_ready"] = last
        self.ready.set()


async def waiters(ctx):
    """Every waiting claim the server lets A hold: half on made-up regions with
    16 made-up fallbacks each, half on pool a, which A holds whole."""
    async def one(i):
        c = AConn(ctx.port, KEYS["a"])
        if i % 2 == 0:
            body = claim_body("ghost-%d" % i, "nopool", wait_ms=30000,
                              fallback_regions=["ghost-%d-%d" % (i, k) for k in range(16)])
        else:
            body = claim_body(REGION, "a", wait_ms=30000, lease_ms=3600000)
        while not ctx.stop.is_set():
            t = time.monotonic()
            status, data = await c.req("POST", "/v1/sessions", body)
            ctx.count(status, data)
            if status == 201:  # served (nothing is released in pool a): hold it
                await ctx.stop.wait()
            elif time.monotonic() - t < 1:  # refused at once: its Retry-After
                await asyncio.sleep(1)
    tasks = []
    for i in range(ctx.args.waiters):
        tasks.append(asyncio.create_task(one(i)))
        if i % 100 == 99:
            await asyncio.sleep(0.02)  # a ramp, not a SYN storm
    tasks.append(asyncio.create_task(ctx.until_waiters_steady()))
    return tasks


def pager(ctx, key, query):
    """Pages GET /v1/sessions?QUERY to its last page, again and again."""
    async def run():
        c = AConn(ctx.port, key)
        while not ctx.stop.is_set():
            cursor = None
            while not ctx.stop.is_set():
                path = "/v1/sessions?" + query + ("&cursor=" + urllib.parse.quote(cursor) if cursor else "")
                status, body = await c.req("GET", path)
                if status != 200:
                    ctx.count(status, body)
                    await asyncio.sleep(0.1)
                    break
                ctx.count(status, body, pages=1, sessions=body.count(b'"session_id"'), mb=len(body) / MIB)
                ctx.ready.set()
                m = re.search(rb'"next_cursor":(?:null|"([^"]*)")', body[body.rfind(b'"next_cursor"'):])
                cursor = m.group(1).decode() if m and m.group(1) else None
                if not cursor:
                    break
    return run()


async def lists(ctx):
    """A's 20,000 sessions, 1,000 a page: two plain, two with a label filter
    that matches none."""
    return [asyncio.create_task(pager(ctx, KEYS["a"], "limit=1000" + ("&label=owner:nobody" if i >= 2 else "")))
            for i in range(4)]


async def heavy_lists(ctx):
    """1,000 sessions of 16 labels at their limits in emoji (about 20 KB each)."""
    return [asyncio.create_task(pager(ctx, KEYS["heavy"], "limit=1000")) for _ in range(4)]


async def flood(ctx):
    """Claims naming a made-up region and pool, no wait, a new name each."""
    async def one(i):
        c, n = AConn(ctx.port, KEYS["a"]), 0
        while not ctx.stop.is_set():
            n += 1
            status, data = await c.req("POST", "/v1/sessions", claim_body("nx-%d-%d" % (i, n), "np-%d" % n))
            ctx.count(status, data)
            if n == 50:
                ctx.ready.set()
    return [asyncio.create_task(one(i)) for i in range(16)]


def heartbeat_loop(ctx, key, bodies, items):
    async def run(i):
        c, n = AConn(ctx.port, key), i
        while not ctx.stop.is_set():
            body = bodies[n % len(bodies)]
            n += 1
            status, data = await c.req("POST", "/v1/heartbeats", body)
            ctx.count(status, data, heartbeats_accepted=items if status == 202 else 0)
            if status in (429, 503):
                ctx.ready.set()  # the queue at its bound, or the key's budget spent
            ctx.up_after(2)  # a flood: no backing off, whatever the answer
    return run


def hb_bodies(ids, per):
    return [json.dumps({"heartbeats": [{"container_id": c} for c in ids[k:k + per]]}).encode()
            for k in range(0, len(ids), per)]


async def heartbeats(ctx):
    """1,000 of A's containers a request on 4 connections."""
    ids = ["bulk-%05d" % j for j in range(ctx.args.a_sessions)]
    run = heartbeat_loop(ctx, KEYS["hb"], hb_bodies(ids, 1000), 1000)
    return [asyncio.create_task(run(i)) for i in range(4)]


async def hb_batches(ctx):
    """10,000-item batches from one container key on 2 connections."""
    ids = ["bulk-%05d" % j for j in range(ctx.args.a_sessions)]
    run = heartbeat_loop(ctx, KEYS["hb"], hb_bodies(ids, 10000), 10000)
    return [asyncio.create_task(run(i)) for i in range(2)]


async def hb_scoped(ctx):
    """10,000 items all naming the one id of a key scoped to it, 2 connections."""
    run = heartbeat_loop(ctx, KEYS["hb_one"], hb_bodies([SCOPED_ID] * 10000, 10000), 10000)
    return [asyncio.create_task(run(i)) for i in range(2)]


def padded_claim(size):
    head = b'{"region":"%s","pool":"nopool","pad":[' % REGION.encode()
    n = (size - len(head) - 3) // 2
    return head + b"1," * n + b"1]}"


async def big_claims(ctx):
    """1 MiB claim bodies from tenant capped (claims_per_s=10) on 4 connections."""
    body = padded_claim(MIB)

    async def one(i):
        c = AConn(ctx.port, KEYS["capped"])
        while not ctx.stop.is_set():
            status, data = await c.req("POST", "/v1/sessions", body)
            ctx.count(status, data, mb_sent=len(body) / MIB)
            ctx.up_after(1)
    return [asyncio.create_task(one(i)) for i in range(4)]


async def unauth_bodies(ctx):
    """Many connections posting 1 MiB claims with a key the server does not know."""
    body = padded_claim(MIB)

    async def one(i):
        c = AConn(ctx.port, NO_SUCH_KEY)
        while not ctx.stop.is_set():
            status, data = await c.req("POST", "/v1/sessions", body)
            ctx.count(status, data, mb_sent=len(body) / MIB)
            ctx.up_after(1)
            if status == 0:
                await asyncio.sleep(0.05)  # refused a connection: not a busy loop
    return [asyncio.create_task(one(i)) for i in range(ctx.args.unauth_conns)]


async def hangups(ctx):
    """A claim waiting on pool a (full), more than the watched 64 KiB of
    pipelined requests behind it, then the connection closed at once: a server
    that stops watching past its bound holds such a claim its whole wait."""
    claim = claim_body(REGION, "a", wait_ms=30000, lease_ms=60000)
    req = ("POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (KEYS["a"], len(claim))).encode() + claim
    pipelined = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    junk = pipelined * (WATCHED // len(pipelined) + 400)  # about 80 KiB

    async def one(i):
        while not ctx.stop.is_set():
            try:
                _, w = await asyncio.open_connection("127.0.0.1", ctx.port)
                w.write(req + junk)
                await w.drain()
                w.close()
                ctx.tally(hangups=1)
            except OSError:
                ctx.count(0)
            ctx.up_after(1)
            await asyncio.sleep(0.05)
    return [asyncio.create_task(one(i)) for i in range(8)]


async def fallback_waits(ctx):
    """Waiting claims each naming its own made-up region and pool w of r1 as a
    fallback; a served one releases at once and waits again, so pool w's
    containers are freed and claimed again and again under the whole queue."""
    async def one(i):
        c = AConn(ctx.port, KEYS["a"])
        body = claim_body("z%04d" % i, "w", wait_ms=30000, lease_ms=60000, fallback_regions=[REGION])
        while not ctx.stop.is_set():
            t = time.monotonic()
            status, data = await c.req("POST", "/v1/sessions", body)
            ctx.count(status, data)
            if status == 201:
                s = json.loads(data)
                st, d = await c.req("DELETE", "/v1/sessions/%s?token=%d" % (s["session_id"], s["token"]))
                ctx.count(st, d, releases=1 if st == 204 else 0)
            elif time.monotonic() - t < 1:
                await asyncio.sleep(1)
    tasks = []
    for i in range(ctx.args.fallback_waiters):
        tasks.append(asyncio.create_task(one(i)))
        if i % 100 == 99:
            await asyncio.sleep(0.02)
    # The gauge moves with the churn: up after a few seconds whatever it reads.
    tasks.append(asyncio.create_task(ctx.until_waiters_steady(limit_s=6)))
    return tasks


ATTACKS = {f.__name__: f for f in (waiters, lists, flood, heartbeats, big_claims, heavy_lists, hb_batches,
                                   hb_scoped, hangups, unauth_bodies, fallback_waits)}
GAUGED = ("waiters", "hangups", "fallback_waits")  # the server's waiting claims, read at the end


async def attack(kind, port, args):
    ctx = Ctx(port, args)
    tasks = await ATTACKS[kind](ctx)
    try:
        await asyncio.wait_for(ctx.ready.wait(), 20)
    except asyncio.TimeoutError:
        ctx.stats["not_ready"] = True
    ctx.stats["ready_s"] = round(time.monotonic() - ctx.started, 2)
    keep = {"waiters_at_ready", "not_ready", "ready_s"}
    ctx.stats = {k: v for k, v in ctx.stats.items() if k in keep}  # what A does while B is measured
    ctx.stats["status"] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    t0 = time.monotonic()
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent closes it
    ctx.stats["seconds"] = round(time.monotonic() - t0, 2)
    if kind in GAUGED:
        ctx.stats["waiters_at_end"] = await ctx.waiters_gauge()
    ctx.stop.set()
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(ctx.stats), flush=True)
