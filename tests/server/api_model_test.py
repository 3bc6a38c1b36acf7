#!/usr/bin/python3
"""Model-checked HTTP test of edgealloc.

A Hypothesis stateful test whose model is the state machine of docs/design.md "Container states": register,
claim (idempotency keys, tenant quota, fallback regions, concurrent claims),
renew, release, lease expiry, heartbeats ready/draining/dead (and the
operator drains the heartbeat reply names), drain, undrain, delete,
re-register, and restarts of the real server (SIGTERM, and kill -9: with
--sync full everything acknowledged must survive). After every step the
server is compared with the model, exactly; Hypothesis shrinks a failure to
a minimal sequence of steps and prints it.

    /usr/bin/python3 tests/server/api_model_test.py --bin build/edgealloc

MODEL_EXAMPLES and MODEL_STEPS run it longer (defaults 200 and 20);
MODEL_SHRINK_SECONDS bounds the shrinking of a failure (default 120).
"""

import argparse
import atexit
import http.client
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

try:
    from hypothesis import HealthCheck, note, settings
    from hypothesis import strategies as st
    from hypothesis.stateful import (RuleBasedStateMachine, initialize, invariant,
                                     precondition, rule, run_state_machine_as_test)
except ImportError:
    print("api_model: FAIL hypothesis is missing (apt-get install -y python3-hypothesis, "
          "and run this with /usr/bin/python3)", file=sys.stderr)
    sys.exit(1)

BIN = None
EXAMPLES = int(os.environ.get("MODEL_EXAMPLES", "200"))
STEPS = int(os.environ.get("MODEL_STEPS", "20"))
# Hypothesis shrinks for up to 5 minutes; here every example runs a server.
SHRINK_SECONDS = float(os.environ.get("MODEL_SHRINK_SECONDS", "120"))

# Keys: one admin, two tenants (isolation, quota), one container reporter.
ADMIN, KEY_A, KEY_B, KEY_C = "k-admin", "k-tenant-a", "k-tenant-b", "k-container"
TENANT_KEY = {"ta": KEY_A, "tb": KEY_B}
KEYS_FILE = f"{ADMIN} admin\n{KEY_A} tenant ta\n{KEY_B} tenant tb\n{KEY_C} container\n"

QUOTA = 2
LEASE_MS = 120000      # default lease: no session of an example ends by itself
MAX_LEASE_MS = 300000
SHORT_LEASE_MS = 5     # what the expiry rules ask for, then sleep past
# A claim picks the fastest available container: checked, and with one
# candidate the server is deterministic, so Hypothesis can replay and shrink.
CANDIDATES = 1
POOL = "chrome"
REGIONS = ["weur", "eeur"]
IDS = ["c0", "c1", "c2"]
GHOST = "ghost"                     # never registered: heartbeats for it are dropped
SENTINEL = "sentinel"               # its heartbeat, sent last, tells when a request is written
SENTINEL_REGION = "zz-sentinel"

SERVE_FLAGS = [
    "--threads", "2",
    "--max-sessions-per-tenant", str(QUOTA),
    "--lease-ms", str(LEASE_MS),
    "--max-lease-ms", str(MAX_LEASE_MS),
    "--dead-after-ms", "600000",  # nobody dies of silence within a run
    "--batch-wait-ms", "2",
    "--mirror-refresh-ms", "50",  # the heartbeat reply's drain list lags one refresh
    "--sync", "full",
    "--candidates", str(CANDIDATES),
]

ERROR_CODES = {
    400: {"invalid_json", "invalid_field", "invalid_request", "bad_request"},
    401: {"unauthorized"}, 403: {"forbidden"}, 404: {"not_found", "unknown_pool"},
    405: {"method_not_allowed"}, 409: {"stale_token", "conflict"}, 410: {"session_ended"},
    413: {"body_too_large"}, 429: {"quota_exceeded"},
    503: {"no_capacity", "overloaded", "unavailable", "not_ready"},
}

STATS = {"examples": 0, "steps": 0, "requests": 0}
LIVE_SERVERS = set()
LIVE_DIRS = set()


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import die_with_parent, serve  # noqa: E402
from openapi_validator import OpenApiValidator  # noqa: E402

OPENAPI = OpenApiValidator()


def now_ms():
    return int(time.time() * 1000)


# --- the server process ------------------------------------------------------

class Server:
    def __init__(self, workdir):
        self.dir = workdir
        self.db = os.path.join(workdir, "pool.db")
        self.keys = os.path.join(workdir, "keys")
        with open(self.keys, "w") as f:
            f.write(KEYS_FILE)
        self.proc = None
        self.port = None
        self.starts = 0
        self.conn = None       # kept alive: a fresh connection per request costs more
        self.conn_used = 0.0

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.dir, f"server.{self.starts}.log")
        logf = open(self.log, "w")
        # Port 0: the server says which port it took (read below). It must not
        # outlive this script, even if it is SIGKILLed.
        self.proc = serve(BIN, self.db, 0, ["--keys", self.keys] + SERVE_FLAGS,
                          stdout=logf, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        logf.close()
        LIVE_SERVERS.add(self.proc)
        deadline = time.time() + 20
        while True:
            m = re.search(r"serving on 127\.0\.0\.1:(\d+)", self.log_text())
            if m:
                self.port = int(m.group(1))
                break
            assert self.proc.poll() is None, f"server exited at start:\n{self.log_text()}"
            assert time.time() < deadline, f"server did not start:\n{self.log_text()}"
            time.sleep(0.005)
        while True:  # /readyz: the batcher runs and the database is open
            try:
                status, _, _ = self.request("GET", "/readyz", None)
                if status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            assert time.time() < deadline, f"server never ready:\n{self.log_text()}"
            time.sleep(0.005)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, how):
        """SIGTERM (must exit 0 in order) or SIGKILL."""
        self.close_conn()
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if how == "term":
            proc.send_signal(signal.SIGTERM)
            try:
                rc = proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                LIVE_SERVERS.discard(proc)
                raise AssertionError("server did not stop within 20 s of SIGTERM")
            LIVE_SERVERS.discard(proc)
            assert rc == 0, f"SIGTERM: exit {rc}, want 0:\n{self.log_text()[-2000:]}"
        else:
            proc.kill()
            proc.wait()
            LIVE_SERVERS.discard(proc)

    def close_conn(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, key, body=None, fresh=False):
        """One request; on the kept-alive connection unless fresh. A failure
        is never retried: a POST may have been applied."""
        if fresh:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        else:
            if self.conn is None or time.time() - self.conn_used > 10:  # server idles out at 30 s
                self.close_conn()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
            conn = self.conn
        ok = False
        try:
            h = {}
            if key is not None:
                h["Authorization"] = "Bearer " + key
            data = None
            if body is not None:
                data = body if isinstance(body, (bytes, str)) else json.dumps(body)
                h["Content-Type"] = "application/json"
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            raw = r.read()
            ok = not r.will_close
            headers = {k.lower(): v for k, v in r.getheaders()}
            # Every answer the model gets must be one docs/openapi.json describes.
            OPENAPI.check(method, path, r.status, headers, raw)
            return r.status, headers, raw
        finally:
            if fresh:
                conn.close()
            elif ok:
                self.conn_used = time.time()
            else:
                self.close_conn()


def _kill_all():
    for p in list(LIVE_SERVERS):
        if p.poll() is None:
            p.kill()
            p.wait()


def _on_signal(signo, _frame):
    # Not sys.exit: Hypothesis would take SystemExit for a failure and shrink on.
    _kill_all()
    for d in list(LIVE_DIRS):
        shutil.rmtree(d, ignore_errors=True)
    os._exit(128 + signo)


atexit.register(_kill_all)


# --- the model ---------------------------------------------------------------

class Container:
    def __init__(self, cid, region, latency, data):
        self.id, self.region, self.latency, self.data = cid, region, latency, data
        self.status = "available"   # available | picked | draining | dead
        self.drain_requested = False  # an operator's drain: until undrain or delete
        self.drain_reported = False   # its own `draining` report: until its `ready`
        self.dead_reported = False  # only while picked, until the reaper ends the session
        self.session = None
        self.reported_ts = 0


class Session:
    def __init__(self, sid, tenant, cid, token, expires, key):
        self.sid, self.tenant, self.cid, self.token = sid, tenant, cid, token
        self.expires, self.key = expires, key
        self.end_reason = None  # once it ended: why (docs/api.md "Ended sessions")

    def __repr__(self):  # session ids are random: name it by what it holds
        return f"<session of {self.tenant} on {self.cid}, token {self.token}>"


def other(tenant):
    return "tb" if tenant == "ta" else "ta"


class ApiModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        STATS["examples"] += 1
        self.tmp = tempfile.mkdtemp(prefix="api_model.")
        LIVE_DIRS.add(self.tmp)
        self.server = Server(self.tmp)
        self.server.start()
        self.containers = {}     # id -> Container, registered ones only
        self.ever_registered = set()  # regions that had a container of POOL at some time
        self.sessions = {}       # session id -> Session, live ones only
        self.ended = []          # Sessions that are over
        self.seen_sids = set()   # every session id ever answered
        self.max_token = {}      # id -> highest token ever seen: never forgotten
        self.last_hb = {}        # id -> last_heartbeat_ms seen: never goes back
        self.nonce = 0
        self.drains_changed_ms = 0  # when a drain, undrain or delete last answered
        self.t0 = now_ms()

    def teardown(self):
        try:
            if self.server.proc is not None and self.server.proc.poll() is not None:
                raise AssertionError(f"server died (exit {self.server.proc.returncode}):\n"
                                     f"{self.server.log_text()[-3000:]}")
        finally:
            self.server.stop("kill")
            shutil.rmtree(self.tmp, ignore_errors=True)
            LIVE_DIRS.discard(self.tmp)

    # --- HTTP with the checks every reply gets --------------------------------

    def call(self, method, path, key, body=None, want=None, code=None):
        STATS["requests"] += 1
        status, hdrs, raw = self.server.request(method, path, key, body)
        where = f"{method} {path} {json.dumps(body) if body is not None else ''}"
        assert status < 500 or status == 503, f"{where}: {status} {raw[:300]!r}"
        parsed = None
        if raw:
            try:
                parsed = json.loads(raw)
            except ValueError:
                raise AssertionError(f"{where}: {status} with a body that is not JSON: {raw[:300]!r}")
        if status >= 400:
            assert isinstance(parsed, dict) and isinstance(parsed.get("error"), dict), \
                f"{where}: {status} without the error shape: {raw[:300]!r}"
            err = parsed["error"]
            assert isinstance(err.get("code"), str) and isinstance(err.get("message"), str) \
                and err["message"], f"{where}: error shape: {raw[:300]!r}"
            assert err["code"] in ERROR_CODES.get(status, ()), \
                f"{where}: code {err['code']} with status {status}"
            if status == 503:
                assert "retry-after" in hdrs, f"{where}: 503 without Retry-After"
        if want is not None:
            got_code = parsed["error"]["code"] if status >= 400 else None
            assert status == want and (code is None or got_code == code), \
                f"{where}: got {status} {raw[:300]!r}, want {want} {code or ''}"
        return status, hdrs, parsed

    def step(self, what):
        STATS["steps"] += 1
        note(f"step: {what}")
        # A lease of the model never ends by itself within a run: if one came
        # near its end, the run is too slow to be exact (not a product bug).
        for s in self.sessions.values():
            assert s.expires - now_ms() > 10000, "example ran too long for its leases"

    # --- model helpers ----------------------------------------------------------

    def live_count(self, tenant):
        return sum(1 for s in self.sessions.values() if s.tenant == tenant)

    def claimable(self, region):
        return sorted(c.id for c in self.containers.values()
                      if c.region == region and c.status == "available")

    def end_session(self, sid, reason):
        s = self.sessions.pop(sid)
        s.end_reason = reason
        c = self.containers[s.cid]
        c.session = None
        c.status = "dead" if c.dead_reported else ("draining" if self.drained(c) else "available")
        c.dead_reported = False  # both drains outlive the session
        self.ended.append(s)

    @staticmethod
    def drained(c):
        return c.drain_requested or c.drain_reported

    def session_body_ok(self, where, body, s):
        c = self.containers[s.cid]
        want = {"session_id": s.sid, "container_id": s.cid, "region": c.region, "pool": POOL,
                "token": s.token, "lease_expires_at_ms": s.expires, "data": c.data}
        got = {k: body.get(k) for k in want}
        assert got == want, f"{where}: session body {got}, model {want}"

    def check_fit(self, where, cid, ids):
        """The pick is among the --candidates fastest (fewest latency_ms)."""
        lat = sorted(self.containers[i].latency for i in ids)
        bound = lat[min(CANDIDATES, len(lat)) - 1]
        assert self.containers[cid].latency <= bound, \
            f"{where}: picked {cid} (latency {self.containers[cid].latency}) over faster ones " \
            f"{[(i, self.containers[i].latency) for i in ids]}"

    def check_new_token(self, cid, token, where):
        prev = self.max_token.get(cid, 0)
        assert isinstance(token, int) and token > prev, \
            f"{where}: fencing token of {cid} went from {prev} to {token}: tokens must only grow"
        self.max_token[cid] = token

    def wait_until(self, what, cond, timeout=3.0):
        deadline = time.time() + timeout
        while not cond():
            assert time.time() < deadline, f"timed out waiting for {what}"
            time.sleep(0.005)

    def container_status(self, cid):
        _, _, body = self.call("GET", f"/v1/containers/{cid}", ADMIN, want=200)
        return body

    def call_ended(self, method, path, key, s, body=None):
        """A call on an ended session: 410 session_ended with its end_reason
        and an ended_at_ms no later than now (the model's run is shorter than
        --session-history-ms)."""
        _, _, reply = self.call(method, path, key, body, want=410, code="session_ended")
        err = reply["error"]
        assert err.get("end_reason") == s.end_reason, \
            f"{method} {path}: end_reason {err.get('end_reason')}, model {s.end_reason}"
        assert isinstance(err.get("ended_at_ms"), int) and err["ended_at_ms"] <= now_ms(), \
            f"{method} {path}: ended_at_ms {err.get('ended_at_ms')}"

    def wait_freed(self, cid):
        """The reaper frees an ended session's container within its period."""
        self.wait_until(f"the reaper to free {cid}",
                        lambda: self.container_status(cid)["status"] != "picked")

    # --- setup ------------------------------------------------------------------

    @initialize()
    def setup(self):
        self.call("POST", "/v1/containers", ADMIN,
                  {"containers": [{"id": SENTINEL, "region": SENTINEL_REGION, "pool": "none"}]},
                  want=200)

    # --- containers -----------------------------------------------------------------

    def spec(self, data, cid):
        self.nonce += 1
        return {"id": cid, "region": data.draw(st.sampled_from(REGIONS), label="region"),
                "pool": POOL, "latency_ms": data.draw(st.integers(0, 3), label="latency"),
                "data": {"n": self.nonce}}

    def do_register(self, specs):
        _, _, body = self.call("POST", "/v1/containers", ADMIN, {"containers": specs}, want=200)
        assert body == {"registered": len(specs)}, f"register: {body}"
        for s in specs:
            c = self.containers.get(s["id"])
            if c is None:
                self.ever_registered.add(s["region"])
                self.containers[s["id"]] = Container(s["id"], s["region"], s["latency_ms"],
                                                     s["data"])
                continue
            c.data, c.latency = s["data"], s["latency_ms"]
            c.reported_ts = 0                # a registration resets the report order (#12)
            if c.status != "picked":
                c.region = s["region"]       # the holder's region never changes
                self.ever_registered.add(c.region)  # a move makes the pool known there too
            if c.status == "dead":           # registration counts as a heartbeat
                c.status = "draining" if self.drained(c) else "available"

    @rule(data=st.data())
    def register(self, data):
        ids = data.draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=3, unique=True),
                        label="ids")
        specs = [self.spec(data, cid) for cid in ids]
        self.step(f"register {[(s['id'], s['region'], s['latency_ms']) for s in specs]}")
        self.do_register(specs)

    def do_delete(self, cid):
        c = self.containers.get(cid)
        if c is None:
            self.call("DELETE", f"/v1/containers/{cid}", ADMIN, want=404, code="not_found")
            return False
        if c.status == "picked":
            self.call("DELETE", f"/v1/containers/{cid}", ADMIN, want=409, code="conflict")
            return False
        self.call("DELETE", f"/v1/containers/{cid}", ADMIN, want=204)
        del self.containers[cid]
        self.drains_changed_ms = now_ms()  # its drain ends with it
        self.last_hb.pop(cid, None)  # a new row may start lower
        return True

    @rule(data=st.data())
    def delete(self, data):
        cid = data.draw(st.sampled_from(IDS + [GHOST]), label="id")
        self.step(f"delete {cid}")
        self.do_delete(cid)

    @rule(data=st.data())
    def replace(self, data):
        """An operator replaces a container under the same id: delete, register."""
        cid = data.draw(st.sampled_from(IDS), label="id")
        spec = self.spec(data, cid)
        self.step(f"replace {cid} by one in {spec['region']}, latency {spec['latency_ms']}")
        if self.do_delete(cid):
            self.do_register([spec])

    @rule(data=st.data(), verb=st.sampled_from(["drain", "undrain"]))
    def drain(self, data, verb):
        """An operator's drain (held until undrain or delete), or its end."""
        cid = data.draw(st.sampled_from(IDS + [GHOST]), label="id")
        self.step(f"{verb} {cid}")
        c = self.containers.get(cid)
        if c is None:
            self.call("POST", f"/v1/containers/{cid}/{verb}", ADMIN, want=404, code="not_found")
            return
        _, _, body = self.call("POST", f"/v1/containers/{cid}/{verb}", ADMIN, want=200)
        self.drains_changed_ms = now_ms()
        c.drain_requested = verb == "drain"  # a picked one drains when its session ends
        if c.drain_requested and c.status == "available":
            c.status = "draining"
        elif not c.drain_requested and c.status == "draining" and not c.drain_reported:
            c.status = "available"  # unless its own draining report holds it
        self.drain_body_ok(f"{verb} {cid}", body, c)

    def drain_body_ok(self, where, body, c):
        want = {"id": c.id, "status": c.status, "drain_requested": c.drain_requested,
                "drain_reported": c.drain_reported}
        got = {k: body.get(k) for k in want}
        assert got == want, f"{where}: {got}, model {want}"

    # --- claims -------------------------------------------------------------------

    def expect_claim(self, tenant, region, fallbacks, key, lease):
        """What the model says a claim answers: ('replay', s) | ('quota',) |
        ('none',) | ('claim', region, [ids])."""
        if key is not None:
            for s in self.sessions.values():
                if s.tenant == tenant and s.key == key:
                    return ("replay", s)
        if self.live_count(tenant) >= QUOTA:
            return ("quota",)
        for r in [region] + fallbacks:
            ids = self.claimable(r)
            if ids:
                return ("claim", r, ids)
        return self.nothing_in([region] + fallbacks)

    def nothing_in(self, regions):
        """What a claim that found nothing in `regions` answers: no_capacity
        if a container of the pool is registered in one of them; else
        unknown_pool, or, where one was registered and all were deleted,
        either (the capacity mirror may still know the pool for a refresh)."""
        if any(c.region in regions for c in self.containers.values()):
            return ("none",)
        if any(r in self.ever_registered for r in regions):
            return ("none_or_unknown",)
        return ("unknown",)

    def do_claim(self, tenant, region, fallbacks, key, lease):
        body = {"region": region, "pool": POOL}
        if fallbacks:
            body["fallback_regions"] = fallbacks
        if key is not None:
            body["idempotency_key"] = key
        if lease is not None:
            body["lease_ms"] = lease
        if lease is not None and not (isinstance(lease, int) and 1 <= lease <= MAX_LEASE_MS):
            self.call("POST", "/v1/sessions", TENANT_KEY[tenant], body, want=400,
                      code="invalid_field")
            return None
        exp = self.expect_claim(tenant, region, fallbacks, key, lease)
        t_before = now_ms()
        status, hdrs, reply = self.call("POST", "/v1/sessions", TENANT_KEY[tenant], body)
        t_after = now_ms()
        where = f"claim {tenant} {body}"
        if exp[0] == "replay":
            s = exp[1]
            assert status == 201 and hdrs.get("idempotent-replayed") == "true", \
                f"{where}: {status} {reply} {hdrs}, want a replay of {s.sid}"
            self.session_body_ok(where, reply, s)
            return None
        if exp[0] == "quota":
            assert status == 429 and reply["error"]["code"] == "quota_exceeded", \
                f"{where}: {status} {reply}, want 429: {tenant} holds {self.live_count(tenant)}"
            return None
        if exp[0] in ("none", "unknown", "none_or_unknown"):
            wanted = {"none": {(503, "no_capacity")}, "unknown": {(404, "unknown_pool")},
                      "none_or_unknown": {(503, "no_capacity"), (404, "unknown_pool")}}[exp[0]]
            assert (status, reply["error"]["code"]) in wanted, \
                f"{where}: {status} {reply}, want {wanted}: nothing available"
            return None
        _, want_region, ids = exp
        assert status == 201, f"{where}: {status} {reply}, want 201 from {want_region} {ids}"
        assert "idempotent-replayed" not in hdrs, f"{where}: a fresh claim marked replayed"
        sid, cid = reply.get("session_id"), reply.get("container_id")
        assert cid in ids and reply.get("region") == want_region, \
            f"{where}: got {cid} in {reply.get('region')}, want one of {ids} in {want_region}"
        self.check_fit(where, cid, ids)
        assert sid not in self.seen_sids, f"{where}: session {sid} was answered before"
        self.check_new_token(cid, reply.get("token"), where)
        lease_ms = lease if lease is not None else LEASE_MS
        exp_at = reply.get("lease_expires_at_ms")
        assert t_before - 50 <= exp_at - lease_ms <= t_after + 50, \
            f"{where}: lease_expires_at_ms {exp_at} for a {lease_ms} ms lease asked at {t_before}"
        s = Session(sid, tenant, cid, reply["token"], exp_at, key)
        self.seen_sids.add(sid)
        self.sessions[sid] = s
        c = self.containers[cid]
        c.status, c.session = "picked", sid
        self.session_body_ok(where, reply, s)
        return s

    claim_args = dict(
        tenant=st.sampled_from(["ta", "tb"]),
        region=st.sampled_from(REGIONS),
        fallbacks=st.sampled_from([[], ["eeur"], ["weur"], ["nowhere", "eeur"]]),
        key=st.sampled_from([None, None, "k1", "k2"]),
    )

    @rule(lease=st.sampled_from([None, None, 90000, MAX_LEASE_MS, 0, MAX_LEASE_MS + 1]),
          **claim_args)
    def claim(self, tenant, region, fallbacks, key, lease):
        self.step(f"claim {tenant} {region}+{fallbacks} key={key} lease={lease}")
        self.do_claim(tenant, region, fallbacks, key, lease)

    @rule(**claim_args)
    def claim_short_lease_and_expire(self, tenant, region, fallbacks, key):
        self.step(f"claim {tenant} {region}+{fallbacks} key={key} lease={SHORT_LEASE_MS}, expire")
        s = self.do_claim(tenant, region, fallbacks, key, SHORT_LEASE_MS)
        if s is not None:
            self.expire(s)

    def expire(self, s):
        """Sleeps past the lease's end: the session is over at once, and the
        reaper frees its container soon after."""
        while now_ms() <= s.expires + 1:
            time.sleep(max(0.001, (s.expires + 2 - now_ms()) / 1000))
        key = TENANT_KEY[s.tenant]
        # Over before the reaper frees it: it has ended, expired.
        s.end_reason = "expired"
        self.call_ended("GET", f"/v1/sessions/{s.sid}", key, s)
        self.call_ended("POST", f"/v1/sessions/{s.sid}/renew", key, s, {"token": s.token})
        self.wait_freed(s.cid)
        self.end_session(s.sid, "expired")

    @rule(data=st.data(), n=st.integers(2, 4))
    def claim_concurrently(self, data, n):
        """n claims of one tenant at once: the outcome must be that of any
        serial order, which here is one outcome (one tenant, the fastest
        container first), so a replay gives the same."""
        tenant = data.draw(st.sampled_from(["ta", "tb"]), label="tenant")
        region = data.draw(st.sampled_from(REGIONS), label="region")
        self.step(f"claim concurrently {n} times by {tenant} in {region}")
        pool = self.claimable(region)
        room = QUOTA - self.live_count(tenant)
        wins = min(n, room, len(pool))
        # Who loses is told why: the quota when it is reached, else capacity.
        nothing = {"none": {(503, "no_capacity")}, "unknown": {(404, "unknown_pool")},
                   "none_or_unknown": {(503, "no_capacity"), (404, "unknown_pool")}}
        lose = {(429, "quota_exceeded")} if room <= len(pool) else nothing[self.nothing_in([region])[0]]
        replies = [None] * n
        barrier = threading.Barrier(n)

        def one(i):
            barrier.wait()
            try:
                replies[i] = self.server.request("POST", "/v1/sessions", TENANT_KEY[tenant],
                                                 {"region": region, "pool": POOL}, fresh=True)
            except Exception as e:  # noqa: BLE001 - reported below, in the test's thread
                replies[i] = e
        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        where = f"{n} concurrent claims by {tenant} in {region} (available {pool}, room {room})"
        got = []
        for reply in replies:
            assert not isinstance(reply, Exception), f"{where}: {reply!r}"
            status, _, raw = reply
            body = json.loads(raw)
            if status == 201:
                got.append(body)
            else:
                assert (status, body.get("error", {}).get("code")) in lose, \
                    f"{where}: {status} {raw[:300]!r}, want {lose}"
        assert len(got) == wins, f"{where}: {len(got)} claims won, want {wins}"
        won = sorted(b["container_id"] for b in got)
        assert len(won) == len(set(won)), f"{where}: one container given twice: {won}"
        assert set(won) <= set(pool), f"{where}: got {won}, not all available"
        lat = sorted(self.containers[i].latency for i in pool)[:wins]
        assert sorted(self.containers[i].latency for i in won) == lat, \
            f"{where}: got {won}, not the fastest"
        for b in sorted(got, key=lambda b: b["container_id"]):  # as a replay will
            assert b["session_id"] not in self.seen_sids, f"{where}: session answered twice"
            self.check_new_token(b["container_id"], b["token"], where)
            s = Session(b["session_id"], tenant, b["container_id"], b["token"],
                        b["lease_expires_at_ms"], None)
            self.seen_sids.add(s.sid)
            self.sessions[s.sid] = s
            c = self.containers[s.cid]
            c.status, c.session = "picked", s.sid
            self.session_body_ok(where, b, s)

    # --- session operations ---------------------------------------------------------

    def pick_session(self, data):
        # In the order they were made (ids are random), so a replay picks the same.
        return data.draw(st.sampled_from(list(self.sessions.values())), label="session")

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(),
          caller=st.sampled_from(["owner", "owner", "owner", "other", "admin"]),
          token=st.sampled_from(["current", "current", "current", "older", "newer"]),
          lease=st.sampled_from([None, 90000, MAX_LEASE_MS, 0, MAX_LEASE_MS + 1]))
    def renew(self, data, caller, token, lease):
        s = self.pick_session(data)
        self.step(f"renew {s.sid[:8]}.. ({s.cid}) by {caller} token={token} lease={lease}")
        key = self.key_of(s, caller)
        tok = s.token + {"current": 0, "older": -1, "newer": 1}[token]
        body = {"token": tok}
        if lease is not None:
            body["lease_ms"] = lease
        path = f"/v1/sessions/{s.sid}/renew"
        if lease is not None and not 1 <= lease <= MAX_LEASE_MS:
            self.call("POST", path, key, body, want=400, code="invalid_field")
        elif caller == "other":
            self.call("POST", path, key, body, want=403, code="forbidden")
        elif token != "current":
            self.call("POST", path, key, body, want=409, code="stale_token")
        else:
            t_before = now_ms()
            _, _, reply = self.call("POST", path, key, body, want=200)
            t_after = now_ms()
            lease_ms = lease if lease is not None else LEASE_MS
            exp_at = reply.get("lease_expires_at_ms")
            # A renew never shortens a lease (unless it says "shorten").
            assert max(s.expires, t_before + lease_ms) - 50 <= exp_at <= \
                max(s.expires, t_after + lease_ms) + 50, \
                f"renew: lease_expires_at_ms {exp_at} for {lease_ms} ms asked at {t_before}, " \
                f"the lease ending at {s.expires}"
            s.expires = exp_at
            self.session_body_ok("renew", reply, s)

    def key_of(self, s, caller):
        return {"owner": TENANT_KEY[s.tenant], "other": TENANT_KEY[other(s.tenant)],
                "admin": ADMIN}[caller]

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(),
          caller=st.sampled_from(["owner", "owner", "owner", "other", "admin"]),
          token=st.sampled_from(["current", "current", "current", "older", "newer", "junk"]))
    def release(self, data, caller, token):
        s = self.pick_session(data)
        self.step(f"release {s.sid[:8]}.. ({s.cid}) by {caller} token={token}")
        key = self.key_of(s, caller)
        tok = "x1" if token == "junk" else s.token + {"current": 0, "older": -1, "newer": 1}[token]
        path = f"/v1/sessions/{s.sid}?token={tok}"
        if token == "junk":
            self.call("DELETE", path, key, want=400, code="invalid_field")
        elif caller == "other":
            self.call("DELETE", path, key, want=403, code="forbidden")
        elif token != "current":
            self.call("DELETE", path, key, want=409, code="stale_token")
        else:
            self.call("DELETE", path, key, want=204)
            # The admin key's tenant is not the session's.
            self.end_session(s.sid, "released_by_admin" if caller == "admin" else "released")

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def renew_short_and_expire(self, data):
        """A renew that says "shorten" may shorten a lease; past it the
        session is over."""
        s = self.pick_session(data)
        self.step(f"renew {s.sid[:8]}.. ({s.cid}) to {SHORT_LEASE_MS} ms, shorten, expire")
        _, _, reply = self.call("POST", f"/v1/sessions/{s.sid}/renew", TENANT_KEY[s.tenant],
                                {"token": s.token, "lease_ms": SHORT_LEASE_MS, "shorten": True},
                                want=200)
        s.expires = reply["lease_expires_at_ms"]
        self.session_body_ok("renew short", reply, s)
        self.expire(s)

    # --- heartbeats -----------------------------------------------------------------

    @rule(items=st.lists(st.tuples(st.sampled_from(IDS + [GHOST]),
                                   st.sampled_from([None, "ready", "draining", "dead"]),
                                   st.sampled_from([None, 1, 2, 3])),
                         min_size=1, max_size=3),
          broken_at=st.sampled_from([None, None, None, 0, 1, 2, 3]))
    def heartbeat(self, items, broken_at):
        """A request of heartbeats; with broken_at, one invalid item there,
        which must reject the whole request, nothing taken."""
        self.step(f"heartbeat {items}" + ("" if broken_at is None else f", broken at {broken_at}"))
        hbs = []
        for cid, state, ts in items:
            h = {"container_id": cid}
            if state is not None:
                h["state"] = state
            if ts is not None:
                h["ts_ms"] = self.t0 - 10000 + ts * 1000  # ordered, in the past
            hbs.append(h)
        if broken_at is not None:
            i = min(broken_at, len(hbs))
            hbs.insert(i, {"container_id": IDS[0], "state": "zombie"})
            _, _, body = self.call("POST", "/v1/heartbeats", KEY_C, {"heartbeats": hbs},
                                   want=400, code="invalid_field")
            assert f"heartbeats[{i}]" in body["error"]["message"], \
                f"heartbeat: the message does not name item {i}: {body}"
            self.send_heartbeats([])  # had anything been queued, it is written now
            return
        drain = self.send_heartbeats(hbs)
        # The reply names the reported containers an operator drained, as of
        # the mirror (which has read every drain and undrain so far), in
        # request order, each once.
        want = []
        for h in hbs:
            c = self.containers.get(h["container_id"])
            if c is not None and c.drain_requested and c.id not in want:
                want.append(c.id)
        assert drain == want, f"heartbeat reply's drain: {drain}, model {want}"
        # The model: one item after another, as docs/api.md and the batcher's
        # coalescing ("as if they were written one after another") say.
        for h in hbs:
            c = self.containers.get(h["container_id"])
            if c is None:
                continue  # unknown ids are dropped
            ts = h.get("ts_ms")
            if ts is not None and ts < c.reported_ts:
                continue  # older than the newest report: liveness only
            if ts is not None:
                c.reported_ts = ts
            state = h.get("state")
            if state == "ready":  # ends its own drain, never an operator's
                c.drain_reported = False
                if c.status in ("dead", "draining"):
                    c.status = "draining" if c.drain_requested else "available"
                c.dead_reported = False
            elif state == "draining":  # a picked one drains when its session ends
                c.drain_reported = True
                if c.status == "available":
                    c.status = "draining"
            elif state == "dead":
                if c.status == "picked":
                    c.dead_reported = True
                else:
                    c.status = "dead"
        # A picked container reported dead: the reaper ends its session.
        for c in list(self.containers.values()):
            if c.status == "picked" and c.dead_reported:
                self.wait_until(f"the reaper to end the session on dead {c.id}",
                                lambda: self.container_status(c.id)["status"] != "picked")
                self.end_session(c.session, "container_dead")

    def send_heartbeats(self, hbs):
        """Sends hbs and the sentinel's heartbeat last, and waits until that
        is written: then so are the others (one request is queued in order,
        and a shard's batches are written in order)."""
        before = self.container_status(SENTINEL)["last_heartbeat_ms"]
        while now_ms() <= before:
            time.sleep(0.001)
        hbs = hbs + [{"container_id": SENTINEL}]
        # The mirror must have read the latest drain, undrain or delete for
        # the reply's drain list to be the model's (it lags one refresh).
        self.wait_until("the mirror to read the drains",
                        lambda: self.call("GET", "/v1/capacity", KEY_A, want=200)[2]["as_of_ms"]
                        > self.drains_changed_ms)
        _, _, body = self.call("POST", "/v1/heartbeats", KEY_C, {"heartbeats": hbs}, want=202)
        assert set(body) == {"accepted", "drain", "unknown"} and body["accepted"] == len(hbs), \
            f"heartbeat: {body}"
        self.wait_until("the heartbeat batch to be written",
                        lambda: self.container_status(SENTINEL)["last_heartbeat_ms"] > before)
        return body["drain"]

    # --- restarts -----------------------------------------------------------------------

    @rule(how=st.sampled_from(["term", "kill"]))
    def restart(self, how):
        self.step(f"restart ({'SIGTERM' if how == 'term' else 'kill -9'})")
        self.server.stop(how)
        self.server.start()

    # --- read-only probes: access rules, and sessions seen by others ------------------

    @rule(data=st.data(), kind=st.sampled_from([
        "no key", "bad key", "tenant registers", "container claims", "tenant reports",
        "container drains a container", "other tenant reads", "admin reads", "ended session"]))
    def probe(self, data, kind):
        if kind in ("other tenant reads", "admin reads") and self.sessions:
            s = self.pick_session(data)
            self.step(f"probe: {kind} {s!r}")
            if kind == "admin reads":
                _, _, body = self.call("GET", f"/v1/sessions/{s.sid}", ADMIN, want=200)
                self.session_body_ok("admin get", body, s)
            else:
                self.call("GET", f"/v1/sessions/{s.sid}", self.key_of(s, "other"), want=403,
                          code="forbidden")
            return
        if kind == "ended session" and self.ended:
            # A session that is over says why to its tenant (410); another
            # tenant learns nothing (403); a release repeated with its token
            # after a release is 204 again.
            s = data.draw(st.sampled_from(self.ended), label="ended")
            caller = data.draw(st.sampled_from(["owner", "other"]), label="caller")
            op = data.draw(st.sampled_from(["get", "renew", "release", "release older"]),
                           label="op")
            self.step(f"probe: {op} ended {s!r} by {caller}")
            key = self.key_of(s, caller)
            token = s.token - 1 if op == "release older" else s.token
            method, path, body = {
                "get": ("GET", f"/v1/sessions/{s.sid}", None),
                "renew": ("POST", f"/v1/sessions/{s.sid}/renew", {"token": s.token}),
            }.get(op, ("DELETE", f"/v1/sessions/{s.sid}?token={token}", None))
            if caller == "other":
                self.call(method, path, key, body, want=403, code="forbidden")
            elif op == "release" and s.end_reason in ("released", "released_by_admin"):
                self.call(method, path, key, body, want=204)
            else:
                self.call_ended(method, path, key, s, body)
            return
        self.step(f"probe: {kind}")
        if kind == "no key":
            self.call("POST", "/v1/sessions", None, {"region": "weur"}, want=401,
                      code="unauthorized")
        elif kind == "bad key":
            self.call("GET", f"/v1/containers/{IDS[0]}", "nope", want=401, code="unauthorized")
        elif kind == "tenant registers":
            self.call("POST", "/v1/containers", KEY_A,
                      {"containers": [{"id": IDS[0], "region": "weur"}]}, want=403,
                      code="forbidden")
        elif kind == "container claims":
            self.call("POST", "/v1/sessions", KEY_C, {"region": "weur", "pool": POOL}, want=403,
                      code="forbidden")
        elif kind == "tenant reports":
            self.call("POST", "/v1/heartbeats", KEY_B,
                      {"heartbeats": [{"container_id": IDS[0], "state": "dead"}]}, want=403,
                      code="forbidden")
        else:
            # A container key reads the containers it may report, but only
            # an admin drains one.
            self.call("POST", f"/v1/containers/{IDS[0]}/drain", KEY_C, want=403,
                      code="forbidden")

    # --- invariants, after every step ---------------------------------------------------

    @invariant()
    def server_matches_model(self):
        if not self.server.alive():
            raise AssertionError(f"server is not running:\n{self.server.log_text()[-3000:]}")
        holders = {}
        for s in self.sessions.values():
            assert s.cid not in holders, f"model: {s.cid} held twice"  # the model's own sanity
            holders[s.cid] = s.sid
        for cid in IDS:
            c = self.containers.get(cid)
            if c is None:
                self.call("GET", f"/v1/containers/{cid}", ADMIN, want=404, code="not_found")
                continue
            body = self.container_status(cid)
            want = {"id": cid, "region": c.region, "pool": POOL, "status": c.status,
                    "latency_ms": c.latency, "data": c.data,
                    "drain_requested": c.drain_requested, "drain_reported": c.drain_reported,
                    "session_id": holders.get(cid)}
            got = {k: body.get(k) for k in want}
            assert got == want, f"container {cid}: server {got}, model {want}"
            lhb = body["last_heartbeat_ms"]
            assert lhb >= self.last_hb.get(cid, 0), \
                f"container {cid}: last_heartbeat_ms went back to {lhb}"
            self.last_hb[cid] = lhb
        for s in self.sessions.values():
            _, _, body = self.call("GET", f"/v1/sessions/{s.sid}", TENANT_KEY[s.tenant], want=200)
            self.session_body_ok(f"GET session {s.sid}", body, s)
        for s in self.ended[-3:]:
            self.call_ended("GET", f"/v1/sessions/{s.sid}", ADMIN, s)


def bound_shrinking(seconds):
    """Caps Hypothesis's shrink phase (a fixed 5 minutes in its engine, no
    setting) by clamping the deadline it sets; the smallest example found so
    far is still printed. Internal API: without it, shrinking is unbounded."""
    try:
        from hypothesis.internal.conjecture.engine import ConjectureRunner
    except ImportError:
        return

    def get(self):
        return self.__dict__.get("_model_shrink_deadline")

    def set_(self, value):
        if value is not None:
            value = min(value, time.perf_counter() + seconds)
        self.__dict__["_model_shrink_deadline"] = value
    ConjectureRunner.finish_shrinking_deadline = property(get, set_)


def main():
    global BIN
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="path to the edgealloc binary")
    args = ap.parse_args()
    BIN = os.path.abspath(args.bin)
    if not os.access(BIN, os.X_OK):
        print(f"api_model: FAIL {BIN} is not an executable", file=sys.stderr)
        return 1
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _on_signal)

    bound_shrinking(SHRINK_SECONDS)
    started = time.time()
    failures = 0
    try:
        run_state_machine_as_test(ApiModel, settings=settings(
            max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None, database=None,
            suppress_health_check=list(HealthCheck), print_blob=False))
    except BaseException as e:  # noqa: B902 - report any failure, Hypothesis printed the steps
        if isinstance(e, KeyboardInterrupt):
            raise
        failures = len(getattr(e, "exceptions", None) or [e])
        import traceback
        traceback.print_exc()
    finally:
        _kill_all()
    if failures:
        print(f"api_model: shrinking is capped at MODEL_SHRINK_SECONDS={SHRINK_SECONDS:g} "
              "(a Hypothesis warning of five minutes means this cap)", file=sys.stderr)
    print(f"api_model: {STATS['examples']} examples, {STATS['steps']} steps, "
          f"{STATS['requests']} requests, {failures} failures, "
          f"{time.time() - started:.1f} s")
    print("api_model: " + OPENAPI.summary())
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
