"""The nemesis test's settings, clock, recorded history and HTTP client, and
its fleet (tests/fault/nemesis_test.py says what the test does)."""

import collections
import http.client
import json
import threading
import time

from fleet_names import churn_id, fleet_id, region_of
import nemesis_faults
import nemesis_limits
from nemesis_limits import WAIT_POOL
from nemesis_slots import slots_of

NODES = 3
REGIONS = ["r0", "r1"]
FLEET_PER_REGION = 10
CHURN_PER_REGION = 2
ADMIN_KEY, AGENT_KEY = "kadmin", "kagent"
DEAD_AFTER_MS = 6000      # --dead-after-ms
BOUND_S = 15.0            # every request answered within this (client timeout)
HEARTBEAT_EVERY_S = 0.3
TOL_MS = 500              # slack when converting between the database's clock and the test's
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
KINDS = ["kill9", "pause", "skew", "stall", "drop", "longtxn", "commitcut", "outage",
         "pause_db_restart"] + nemesis_faults.NEW_KINDS + ["failover"]
SHORT_KINDS = 8           # kinds a short run (up to 300 s) must fire, drawn by the seed

MONO0 = time.monotonic()
WALL0 = time.time()


def now():
    return time.monotonic()


def log(msg):
    print("nemesis: [%7.2f] %s" % (now() - MONO0, msg), flush=True)


# ---------------------------------------------------------------- history

class History:
    """Every client operation, every nemesis action, every database sample."""

    def __init__(self):
        self.lock = threading.Lock()
        self.ops = []
        self.actions = []
        self.samples = []
        self.audit = []
        self.db_offset_ms = 0.0  # database wall clock minus the test's
        self.mono0, self.wall0 = MONO0, WALL0

    def add_op(self, op):
        with self.lock:
            op["n"] = len(self.ops)
            self.ops.append(op)

    def db_to_mono(self, ms):
        """A time on the database's wall clock, on the test's monotonic one."""
        return (ms - self.db_offset_ms) / 1000.0 - self.wall0 + self.mono0


def request(hist, nodes, rng, thread, kind, method, path, key, body=None, node=None, timeout=None,
            **extra):
    """One HTTP request to a node picked at random (or `node`), recorded.
    A new connection each time: a kept-alive one could carry a node's
    restart into the next request's error."""
    node = node if node is not None else rng.randrange(len(nodes))
    op = {"kind": kind, "thread": thread, "node": node, "method": method, "path": path,
          "req": body, "status": None, "resp": None, "err": None, "replayed": False,
          "timeout": timeout or BOUND_S}
    op.update(extra)
    data = json.dumps(body) if body is not None else None
    headers = {"Authorization": "Bearer " + key}
    if data:
        headers["Content-Type"] = "application/json"
    op["t0"] = now()
    try:
        c = http.client.HTTPConnection("127.0.0.1", nodes[node].port, timeout=op["timeout"])
        try:
            c.request(method, path, body=data, headers=headers)
            r = c.getresponse()
            raw = r.read()
            op["status"] = r.status
            op["replayed"] = r.getheader("Idempotent-Replayed") == "true"
            try:
                op["resp"] = json.loads(raw) if raw else None
            except ValueError:
                op["resp"] = raw[:200].decode("utf-8", "replace")
        finally:
            c.close()
    except (OSError, http.client.HTTPException) as e:
        op["err"] = "%s: %s" % (type(e).__name__, e)
    op["t1"] = now()
    hist.add_op(op)
    return op


def with_retries(fn, rng, nodes, tries=3):
    """A client's retry: on 503 or no answer, again on another node."""
    first = rng.randrange(len(nodes))
    op = None
    for i in range(tries):
        op = fn((first + i) % len(nodes))
        if op["status"] is not None and op["status"] != 503:
            return op
        time.sleep(0.05 + 0.1 * i)
    return op


def container_body(cid):
    return {"id": cid, "region": region_of(cid), "pool": WAIT_POOL if cid == WAIT_ID else "p",
            "latency_ms": int(cid.split("-")[2]) + 1, "slots": slots_of(cid),
            "data": {"n": cid}}


WAIT_ID = "w-%s-0" % REGIONS[0]  # delta's pool's one container


def fleet_ids():
    return [fleet_id(r, j) for r in REGIONS for j in range(FLEET_PER_REGION)] + [WAIT_ID]


def fleet_bodies():
    return [container_body(c) for c in fleet_ids()]


def register_fleet(hist, nodes, rng):
    """Registers the fleet and every region's churn containers; raises unless
    the server answers 200."""
    op = request(hist, nodes, rng, "setup", "register", "POST", "/v1/containers", ADMIN_KEY,
                 {"containers": fleet_bodies() + [container_body(churn_id(r, j))
                                                  for r in REGIONS
                                                  for j in range(CHURN_PER_REGION)]},
                 ids=fleet_ids())
    if op["status"] != 200:
        raise RuntimeError("fleet registration: %s %s" % (op["status"], op["resp"]))


def print_counts(hist, prefix, kinds, width):
    """Prints the operations by kind and outcome (a refusal with its code) and
    the nemesis's actions by kind (each of kinds), lines led by prefix."""
    by = collections.Counter()
    for op in hist.ops:
        code = nemesis_limits.code_of(op) if op["status"] in (409, 429, 503) else None
        by[(op["kind"], "no answer" if op["status"] is None else
            "%s %s" % (op["status"], code) if code else str(op["status"]))] += 1
    print(prefix + ": operations by kind and outcome:")
    for k in sorted({k for k, _ in by}):
        print("  %-*s %s" % (width, k, ", ".join("%s: %d" % (st, n) for (kk, st), n
                                                in sorted(by.items()) if kk == k)))
    acts = collections.Counter(a["kind"] for a in hist.actions)
    print(prefix + ": actions by kind: " + ", ".join("%s %d" % (k, acts[k]) for k in kinds))
