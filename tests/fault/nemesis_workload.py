"""The nemesis test's clients: tenants, container agents, an admin, the
waiting tenant and the poller of its limits, each request recorded."""

import random
import threading
import time

from fleet_names import churn_id, region_of
import nemesis_limits
from nemesis_common import (ADMIN_KEY, AGENT_KEY, BOUND_S, CHURN_PER_REGION, DEAD_AFTER_MS,
                            HEARTBEAT_EVERY_S, REGIONS, container_body, fleet_bodies, fleet_ids,
                            now, request, with_retries)
from nemesis_limits import TENANTS, WAIT_POOL

# ---------------------------------------------------------------- clients

class Workload:
    def __init__(self, hist, nodes, seed, long_leases):
        self.hist, self.nodes = hist, nodes
        self.seed = seed
        self.long_leases = long_leases
        self.stop = threading.Event()
        self.threads = []
        self.silent = {}           # container -> monotonic time its agent speaks again
        self.silences = []         # (container, start, end)
        self.lock = threading.Lock()

    def lease(self, rng):
        return rng.randint(60000, 80000) if self.long_leases else rng.randint(6000, 20000)

    def tenant_worker(self, t, tenant):
        rng = random.Random(self.seed * 1009 + t)
        key = TENANTS[tenant]
        held = []
        n = 0
        name = "w%d" % t
        while not self.stop.is_set():
            dice = rng.randrange(100)
            if len(held) < 2 and dice < 40:
                body = {"region": rng.choice(REGIONS), "pool": "p"}
                expire = rng.random() < 0.2   # left to expire: short lease, never released
                body["lease_ms"] = rng.randint(1500, 3500) if expire else self.lease(rng)
                if rng.random() < 0.3:
                    body["wait_ms"] = rng.randint(200, 2000)
                if rng.random() < 0.3:
                    body["fallback_regions"] = [r for r in REGIONS if r != body["region"]]
                if rng.random() < 0.6:
                    body["idempotency_key"] = "%s-%d-%d" % (name, self.seed % 1000, n)
                    n += 1
                twin = None
                if "idempotency_key" in body and rng.random() < 0.25:
                    # The same key from a second thread, at the same time.
                    twin = threading.Thread(target=request, args=(
                        self.hist, self.nodes, random.Random(rng.random()), name + "b", "claim",
                        "POST", "/v1/sessions", key, body), kwargs={"tenant": tenant},
                        daemon=True)
                    twin.start()
                op = with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, name, "claim", "POST", "/v1/sessions", key, body,
                    node=nd, tenant=tenant), rng, self.nodes)
                if twin:
                    twin.join()
                if op["status"] == 429:
                    time.sleep(rng.uniform(0.2, 0.5))  # at its quota: let others end
                if op["status"] == 201:
                    s = op["resp"]
                    if not expire and all(h["sid"] != s["session_id"] for h in held):
                        held.append({"sid": s["session_id"], "token": s["token"]})
            elif held and dice < 60:
                h = rng.choice(held)
                op = with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, name, "renew", "POST",
                    "/v1/sessions/%s/renew" % h["sid"], key,
                    {"token": h["token"], "lease_ms": self.lease(rng)}, node=nd, sid=h["sid"],
                    tenant=tenant), rng, self.nodes)
                if op["status"] in (404, 409, 410):
                    held.remove(h)
            elif held and dice < 70:
                h = rng.choice(held)
                op = request(self.hist, self.nodes, rng, name, "get", "GET",
                             "/v1/sessions/" + h["sid"], key, sid=h["sid"], tenant=tenant)
                if op["status"] in (404, 410):
                    held.remove(h)
            elif held and dice < 85:
                h = rng.choice(held)
                op = with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, name, "release", "DELETE",
                    "/v1/sessions/%s?token=%d" % (h["sid"], h["token"]), key, node=nd,
                    sid=h["sid"], tenant=tenant), rng, self.nodes)
                if op["status"] in (204, 404, 409, 410) or op["status"] is None:
                    held.remove(h)
            elif held and dice < 88:
                held.pop(rng.randrange(len(held)))  # forgotten: its lease will end it
            elif held and dice < 93:
                self.stale_or_foreign(rng, name, tenant, rng.choice(held))
            time.sleep(rng.uniform(0.02, 0.08))

    def stale_or_foreign(self, rng, name, tenant, h):
        """A held session touched with its token less one, or with another
        tenant's key: refused, and nothing changes (the checker holds both)."""
        other = rng.choice([t for t in TENANTS if t != tenant])
        kind = rng.choice(nemesis_limits.STALE_KINDS)
        if kind.startswith("stale") and h["token"] <= 1:
            kind = kind.replace("stale", "foreign")  # no token below the first
        key = TENANTS[other] if kind.startswith("foreign") else TENANTS[tenant]
        token = h["token"] - 1 if kind.startswith("stale") else h["token"]
        path = "/v1/sessions/" + h["sid"]
        if kind.endswith("renew"):
            request(self.hist, self.nodes, rng, name, kind, "POST", path + "/renew", key,
                    {"token": token, "lease_ms": nemesis_limits.STALE_LEASE_MS}, sid=h["sid"])
        elif kind.endswith("release"):
            request(self.hist, self.nodes, rng, name, kind, "DELETE",
                    "%s?token=%d" % (path, token), key, sid=h["sid"])
        else:
            request(self.hist, self.nodes, rng, name, kind, "GET", path, key, sid=h["sid"])

    def waiter(self, t):
        """delta's claims in the one-container pool, each waiting (wait_ms):
        its max_waiters is 1, so a node with one waiting refuses the next."""
        rng = random.Random(self.seed * 31 + t)
        key = TENANTS["delta"]
        name = "d%d" % t
        while not self.stop.is_set():
            body = {"region": REGIONS[0], "pool": WAIT_POOL, "wait_ms": rng.randint(500, 2000),
                    "lease_ms": rng.randint(3000, 6000)}
            op = request(self.hist, self.nodes, rng, name, "claim", "POST", "/v1/sessions", key,
                         body, tenant="delta")
            if op["status"] == 201:
                sid, token = op["resp"]["session_id"], op["resp"]["token"]
                time.sleep(rng.uniform(0.3, 1.0))
                with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, name, "release", "DELETE",
                    "/v1/sessions/%s?token=%d" % (sid, token), key, node=nd, sid=sid,
                    tenant="delta"), rng, self.nodes)
            else:
                time.sleep(rng.uniform(0.05, 0.3))

    def limits_poller(self):
        """What each node says delta has waiting (GET /v1/limits)."""
        rng = random.Random(self.seed * 37)
        while not self.stop.is_set():
            for i in range(len(self.nodes)):
                request(self.hist, self.nodes, rng, "limits", "limits", "GET",
                        "/v1/limits?tenant=delta", ADMIN_KEY, node=i)
            time.sleep(0.3)

    def agent(self, t, ids, churn):
        """Heartbeats for a region's containers, every HEARTBEAT_EVERY_S; now
        and then one container goes silent long enough to be swept dead.
        Each request is recorded with the ids it names (`ids`), so that the
        checker knows which containers were heard, and when."""
        rng = random.Random(self.seed * 7 + t)
        next_silence = now() + rng.uniform(3, 8)
        while not self.stop.is_set():
            tnow = now()
            if tnow > next_silence:
                cid = rng.choice(ids)
                until = tnow + DEAD_AFTER_MS / 1000.0 + rng.uniform(2, 5)
                with self.lock:
                    self.silent[cid] = until
                    self.silences.append((cid, tnow, until))
                next_silence = until + rng.uniform(3, 10)
            with self.lock:
                quiet = {c for c, u in self.silent.items() if u > tnow}
            items = [{"container_id": c, "ts_ms": int(time.time() * 1000), "state": "ready"}
                     for c in ids if c not in quiet]
            # Churn containers report plainly, so a drain stays a drain.
            items += [{"container_id": c, "ts_ms": int(time.time() * 1000)} for c in churn]
            # A node that cannot reach its database says so (503): another.
            with_retries(lambda nd: request(
                self.hist, self.nodes, rng, "a%d" % t, "heartbeat", "POST", "/v1/heartbeats",
                AGENT_KEY, {"heartbeats": items}, node=nd, timeout=3.0,
                ids=[i["container_id"] for i in items]), rng, self.nodes)
            time.sleep(HEARTBEAT_EVERY_S)

    def admin(self):
        rng = random.Random(self.seed * 13 + 1)
        churn = [churn_id(r, j) for r in REGIONS for j in range(CHURN_PER_REGION)]
        present = set(churn)
        while not self.stop.is_set():
            cid = rng.choice(churn)
            dice = rng.randrange(100)
            if dice < 10:
                # The whole fleet again: an update, never a change of holder.
                with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, "admin", "register", "POST", "/v1/containers",
                    ADMIN_KEY, {"containers": fleet_bodies()}, node=nd, ids=fleet_ids()),
                    rng, self.nodes)
            elif cid not in present or dice < 30:
                op = with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, "admin", "register", "POST", "/v1/containers",
                    ADMIN_KEY, {"containers": [container_body(cid)]}, node=nd, ids=[cid]),
                    rng, self.nodes)
                if op["status"] == 200:
                    present.add(cid)
            elif dice < 55:
                with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, "admin", "drain", "POST",
                    "/v1/containers/%s/drain" % cid, ADMIN_KEY, node=nd, ids=[cid]),
                    rng, self.nodes)
            elif dice < 70:
                with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, "admin", "undrain", "POST",
                    "/v1/containers/%s/undrain" % cid, ADMIN_KEY, node=nd, ids=[cid]),
                    rng, self.nodes)
            else:
                op = with_retries(lambda nd: request(
                    self.hist, self.nodes, rng, "admin", "delete", "DELETE",
                    "/v1/containers/" + cid, ADMIN_KEY, node=nd, ids=[cid]), rng, self.nodes)
                if op["status"] in (204, 404):
                    present.discard(cid)
            time.sleep(rng.uniform(0.2, 0.6))

    def start(self):
        # acme's three workers run into the quota, corvus's one never does.
        for t, tenant in enumerate(["acme", "acme", "acme", "bravo", "bravo", "corvus"]):
            self.threads.append(threading.Thread(target=self.tenant_worker, args=(t, tenant)))
        for t in range(3):
            self.threads.append(threading.Thread(target=self.waiter, args=(t,)))
        churn = [churn_id(r, j) for r in REGIONS for j in range(CHURN_PER_REGION)]
        for i, r in enumerate(REGIONS):
            self.threads.append(threading.Thread(target=self.agent, args=(
                i, [c for c in fleet_ids() if region_of(c) == r],
                [c for c in churn if region_of(c) == r])))
        self.threads.append(threading.Thread(target=self.admin))
        self.threads.append(threading.Thread(target=self.limits_poller))
        for th in self.threads:
            th.daemon = True
            th.start()

    def join(self):
        self.stop.set()
        for th in self.threads:
            th.join(BOUND_S * 4 + 10)


