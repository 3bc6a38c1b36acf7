"""The noisy-neighbour server: its keys file, its fleet, the sessions the
abusers hold before anything is measured, and starting and stopping it."""

import asyncio
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench_http import Client, free_port, serve, stop, wait_answers  # noqa: E402
from noisy.aconn import AConn, claim_body  # noqa: E402

KEYS = {
    "admin": "nn-admin",
    "a": "nn-tenant-a",             # tenant acme: the abuser
    "b": "nn-tenant-b",             # tenant beta: the victim
    "capped": "nn-tenant-capped",   # tenant capped: A's rate-limited twin (claims_per_s=10)
    "heavy": "nn-tenant-heavy",     # tenant heavy: 1,000 sessions of byte-heavy labels
    "hb": "nn-container-a",         # container bulk-*: every one of A's bulk containers
    "hb_one": "nn-container-one",   # container bulk-00000: a key scoped to a single id
}
NO_SUCH_KEY = "nn-no-such-key"
REGION = "r1"
B_POOL_SIZE = 200      # pool b, B's
A_POOL_SIZE = 200      # pool a, which A holds whole
W_POOL_SIZE = 20       # pool w, free: fallback waiters churn it
HEAVY_SESSIONS = 1000  # pool heavy, held by tenant heavy
SCOPED_ID = "bulk-00000"


def heavy_labels(n):
    """16 labels at their limits in characters (64 a key, 256 a value), every
    character an emoji (4 bytes of UTF-8): about 20 KB a session."""
    return {"%s%s" % (chr(0x1F600 + k), chr(0x1F400 + n % 200) * 63): chr(0x1F300 + k) * 256
            for k in range(16)}


def write_keys(path, limits):
    def lim(who):
        return (" " + limits[who]) if limits and limits.get(who) else ""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("%s admin\n" % KEYS["admin"])
        f.write("%s tenant acme%s\n" % (KEYS["a"], lim("a")))
        f.write("%s tenant beta%s\n" % (KEYS["b"], lim("b")))
        f.write("%s tenant capped%s\n" % (KEYS["capped"], lim("capped")))
        f.write("%s tenant heavy\n" % KEYS["heavy"])
        f.write("%s container bulk-*\n" % KEYS["hb"])
        f.write("%s container %s\n" % (KEYS["hb_one"], SCOPED_ID))


class Server:
    def __init__(self, binary, work, keys, preexec_fn=None):
        self.port = free_port()
        self.log = open(os.path.join(work, "server.log"), "ab")
        self.proc = serve(binary, os.path.join(work, "nn.db"), self.port,
                          ["--keys", keys, "--sync", "full", "--dead-after-ms", "3600000", "--log-level", "warn"],
                          stdout=self.log, stderr=self.log, preexec_fn=preexec_fn)
        if not wait_answers(self.port, "/readyz", self.proc, timeout=15) and self.proc.poll() is None:
            raise RuntimeError("server did not become ready")

    def alive(self):
        return self.proc.poll() is None

    def metrics(self):
        return Client(self.port, KEYS["admin"], timeout=10).text("/metrics")

    def stop(self):
        stop(self.proc, timeout=10, kill_late=True)
        self.log.close()


def metric(text, name):
    """The sum of every series of a metric; None when the server has none."""
    vals = re.findall(r"^%s(?:\{[^}]*\})? ([0-9.e+-]+)$" % re.escape(name), text, re.M)
    return sum(float(v) for v in vals) if vals else None


def setup(binary, work, a_sessions):
    """The fleet, A's sessions and heavy's, on a server without tenant limits
    (so that A's claims_per_s does not make the setup last minutes)."""
    keys = os.path.join(work, "keys.setup")
    write_keys(keys, None)
    s = Server(binary, work, keys)
    if not s.alive():
        raise RuntimeError("setup server exited %s (see %s/server.log)" % (s.proc.returncode, work))
    admin = Client(s.port, KEYS["admin"])
    fleet = ([("b-%03d" % i, "b") for i in range(B_POOL_SIZE)] + [("a-%03d" % i, "a") for i in range(A_POOL_SIZE)]
             + [("w-%03d" % i, "w") for i in range(W_POOL_SIZE)]
             + [("heavy-%04d" % i, "heavy") for i in range(HEAVY_SESSIONS)]
             + [("bulk-%05d" % i, "bulk") for i in range(a_sessions)])
    for k in range(0, len(fleet), 1000):
        cs = [{"id": cid, "region": REGION, "pool": pool, "latency_ms": i % 50}
              for i, (cid, pool) in enumerate(fleet[k:k + 1000])]
        st, body = admin.call("POST", "/v1/containers", {"containers": cs})
        assert st == 200, body

    async def claims():
        todo = ([("a", "a", None)] * A_POOL_SIZE + [("a", "bulk", None)] * a_sessions
                + [("heavy", "heavy", heavy_labels(n)) for n in range(HEAVY_SESSIONS)])
        bad = []

        async def worker(i):
            conns = {}
            for who, pool, labels in todo[i::32]:
                c = conns.setdefault(who, AConn(s.port, KEYS[who]))
                body = claim_body(REGION, pool, lease_ms=3600000, labels=labels or {"owner": "a-" + pool})
                status, data = await c.req("POST", "/v1/sessions", body)
                if status != 201:
                    bad.append((status, data[:200]))
        await asyncio.gather(*(worker(i) for i in range(32)))
        assert not bad, bad[:3]
    asyncio.run(claims())
    s.stop()
