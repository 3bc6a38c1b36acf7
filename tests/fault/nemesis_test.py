#!/usr/bin/env python3
"""A Jepsen-style nemesis test of the PostgreSQL multi-node mode.

Sets up a real PostgreSQL 15 primary with a synchronous streaming standby,
three `edgealloc serve` nodes, each reaching the database through its own TCP
proxy (written here: it can pass, stall or drop), and client threads over
HTTP: tenants claiming (idempotency keys, the same key retried from two
threads at once, wait_ms, short leases left to expire), renewing, reading and
releasing, now and then with a stale token or another tenant's key, under
per-tenant limits of the keys file (max_sessions, claims_per_s, max_waiters:
tests/fault/nemesis_limits.py); container agents heartbeating, going silent (so the dead sweep ends
their sessions) and coming back; an admin registering, draining and deleting.
Every request is recorded (start and answer on one monotonic clock, node,
request, status, body). Meanwhile a nemesis, on a schedule:

  kill9     kill -9 a node and restart it
  pause     SIGSTOP a node for longer than the lock timeouts, then SIGCONT
  skew      restart a node with its wall clock tens of seconds ahead or behind
            (libfaketime, monotonic clock left alone), later back to normal
  stall     the node's database proxy stops forwarding (no close), then heals
            (6-12 s in the short run; up to 25 s in a long one, past the bound)
  drop      the node's proxy closes every connection and refuses new ones
  longtxn   a transaction on `containers` held open (like pg_dump) while a
            node restarts
  commitcut the proxy drops a connection exactly when a COMMIT's answer
            comes back (the commit happened, the node never hears of it)
  failover  kill the primary (immediate) and promote the standby longer than
            --dead-after-ms later (once, late)
  outage    stop the database primary (immediate) for longer than
            --dead-after-ms and start it again; nodes and clients go on
  pause_db_restart
            a node paused while the database primary stops and starts again
  clockstep, rowlock, syncrep_cancel, slowfsync
            a node's wall clock stepped while it runs, a containers row
            locked by an outside transaction, a commit's synchronous wait
            cancelled, PostgreSQL's fsync slow (tests/fault/nemesis_faults.py)

Every action is recorded with its start and end; a kind that never fired is a
failure (a sweep whose fault never fired proves nothing). A short run (up to
300 s) draws 8 of the kinds besides the failover with its seed, so as not to
take longer; a long one must fire them all.

The database's own view is read with psql: every few seconds a sample of the
containers table (with the database's clock), and a trigger (installed by the
test) records every change of a container's session with clock_timestamp():
when and how each session began and ended, on the database's clock.

The checker (over the history, the samples and that audit) finds:

 1. overlapping holds: two sessions on one container whose acknowledged holds
    overlap. A hold runs from its claim's 201 answer to the earliest of: its
    release being sent, its lease end as acknowledged (database clock,
    converted), a 404/409 answer about it, and its end in the database when
    that end was legitimate (the lease was over, a release had been sent, or
    the container had been silent for --dead-after-ms on the database's clock:
    the lease and silence comparisons the database made itself are strict,
    with no slack). A 201 replayed after its session's hold ended is a hold
    of its own, from its answer to its lease end, a release sent or a
    404/409/410 after it;
 2. acknowledged writes lost: a released session live again; an acknowledged
    session neither released, expired nor legitimately dead that is not live
    with its token (in a sample, at the end, or ended early in the audit); an
    acknowledged claim the database never had; a registration, delete or
    drain not reflected at the end;
 3. a token that did not grow: a claim's token not above every token answered
    for that container before the claim was sent;
 4. a tenant over its quota (live sessions counted by the database, sampled);
 5. one idempotency key yielding two sessions whose holds overlap;
 6. a request not answered within the bound (15 s) by a node that was neither
    paused nor down meanwhile, or answered with a 5xx other than 503;
 7. a death of a reporting container: a container made dead (its session
    ended container_dead, or only its status) while its agent sent
    heartbeats naming it after the death's time less --dead-after-ms (plus
    the clock conversion's slack), whether they got 202 (heard, yet judged
    silent) or 503 or no answer (the server or the database deaf, which is
    no silence of the container's): the clients' own record of who was
    really silent;
 8. a claim of a silent container (no heartbeat or registration naming it
    could have been taken for --dead-after-ms before the claim was sent) or
    of a drained one (an operator's drain answered 200 before the claim was
    sent, no undrain nor delete sent since);
 9. a tenant over its max_sessions (the audit, on the database's clock), its
    claims_per_s (per node, from the clients' record) or its max_waiters (as
    the nodes report it);
10. a session made that no client was answered 201 for, without a claim of
    its tenant answered outcome unknown (503 unavailable, or no answer)
    around it; a keyed retry answered with a new session while the key's
    first one lived (a cut COMMIT's retry must replay it);
11. a stale or foreign token honoured (2xx), or a lease sampled past any
    asked for honestly;
12. a claim or renew acknowledged while the standby could not confirm it
    (syncrep_cancel).

Run it (as root it runs PostgreSQL as the `postgres` user, like
tests/support/pg_server.cc):

    tests/fault/nemesis_test.py --bin build/edgealloc             # short: ~100 s of faults
    NEMESIS_SECONDS=1800 tests/fault/nemesis_test.py --bin build/edgealloc   # long
    tests/fault/nemesis_test.py --self-test                       # the checker alone
    tests/fault/nemesis_test.py --bin /tmp/edgealloc-before --skew-seconds 90 --long-leases
        # a node's clock 90 s ahead and 60-80 s leases: a binary whose reaper
        # uses the node's own clock ends other nodes' sessions early

--seed replays the nemesis's schedule (not the threads' timing); --keep
keeps the folder (node and PostgreSQL logs, history.json, also kept on any
violation); --recheck FOLDER/history.json runs the checker over it again.
The short run takes about 130 s of wall clock on 2 cores (every kind
of fault once takes longer than the 100 s asked).

Prints operations by kind and outcome, nemesis actions by kind, the
violations (at most 20, with details), `nemesis: N operations, F faults
injected, V violations` and `P passed, F failed`; exits 1 on any violation or
any fault kind that did not fire. ctest: fault/nemesis, fault/nemesis_checker.
"""

import argparse
import collections
import http.client
import json
import os
import random
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from fleet_names import churn_id, fleet_id, region_of  # noqa: E402
from pg_server import DBNAME, PG_USER, PgServer, clean_env, psql  # noqa: E402
import nemesis_faults  # noqa: E402
import nemesis_limits  # noqa: E402
from nemesis_limits import DEFAULT_QUOTA as QUOTA, TENANTS, WAIT_POOL  # noqa: E402

# ---------------------------------------------------------------- settings

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


# ---------------------------------------------------------------- servers

class Node:
    """One `edgealloc serve`, on a fixed port, reaching the database through
    its own proxy. Unavailable intervals (down or paused) are recorded: a
    request to the node then may go unanswered."""

    def __init__(self, idx, binary, uri, keys, tmp, lease_ms):
        self.idx, self.binary, self.uri, self.keys = idx, binary, uri, keys
        self.port = free_port()
        self.lease_ms = lease_ms
        self.log_path = os.path.join(tmp, "node%d.log" % idx)
        self.logf = open(self.log_path, "ab")
        self.proc = None
        self.skew = None
        self.clock_file = os.path.join(tmp, "node%d.faketime" % idx)
        self.set_clock("+0")
        self.spawns = []          # when each life began (a new rate bucket)
        self.lock = threading.Lock()
        self.down = []            # [start, end or None]: killed, starting or paused
        self.start_failures = 0

    def mark_down(self):
        with self.lock:
            if not self.down or self.down[-1][1] is not None:
                self.down.append([now(), None])

    def mark_up(self):
        with self.lock:
            if self.down and self.down[-1][1] is None:
                self.down[-1][1] = now()

    def was_down(self, t0, t1):
        with self.lock:
            return any(s <= t1 and (e is None or e >= t0) for s, e in self.down)

    def set_clock(self, offset):
        """The node's wall clock offset (libfaketime's "+40s"), read at every
        call (FAKETIME_NO_CACHE): written while it runs, a step."""
        tmp = self.clock_file + ".new"
        with open(tmp, "w") as f:
            f.write(offset + "\n")
        os.replace(tmp, self.clock_file)

    def spawn(self):
        env = clean_env()
        # What `faketime -f +40s` does, without its wrapper process (so the
        # pid we signal is the node's); only the wall clock moves, and only
        # when the file says so (a skewed start, or a step while it runs).
        self.set_clock(self.skew or "+0")
        env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=self.clock_file,
                   FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
        self.spawns.append(now())
        args = ["--keys", self.keys, "--threads", "2", "--pg-writers", "2",
                "--dead-after-ms", str(DEAD_AFTER_MS), "--lease-ms", str(self.lease_ms),
                "--max-sessions-per-tenant", str(QUOTA), "--batch-wait-ms", "5",
                "--mirror-refresh-ms", "1000"]
        self.logf.write(("--- %.2f start%s\n" % (now() - MONO0, " FAKETIME=" + self.skew
                                                 if self.skew else "")).encode())
        self.logf.flush()
        self.proc = edgealloc_server.serve(self.binary, self.uri, self.port, args,
                                           stdout=self.logf, stderr=self.logf,
                                           stdin=subprocess.DEVNULL, env=env,
                                           preexec_fn=die_with_parent)

    def start(self, timeout=45):
        """Start until /readyz says 200; a start that exits (the database
        unreachable at start is exit 1) is retried, as a supervisor would."""
        self.mark_down()
        deadline = now() + timeout
        while now() < deadline:
            self.spawn()
            if edgealloc_server.wait_answers(self.port, "/readyz", self.proc, deadline - now()):
                self.mark_up()
                return True
            if self.proc.poll() is not None:
                self.start_failures += 1
                time.sleep(0.5)
        self.kill()
        return False

    def kill(self):
        self.mark_down()
        if self.proc is not None:
            edgealloc_server.kill(self.proc)

    def pause(self):
        self.mark_down()
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self):
        self.proc.send_signal(signal.SIGCONT)
        self.mark_up()


# ---------------------------------------------------------------- proxy

class Proxy:
    """A node's TCP path to the database: one listener per upstream (the
    primary, the standby), all under one mode. pass: bytes flow. stall: no
    byte moves either way and nothing is closed (a hung network or peer).
    drop: every connection closed, and the ports closed for a while, so a
    connect is refused. commitcut (armed): the next answer to a COMMIT is not
    forwarded: the connection is dropped instead (the commit happened, the
    node never hears of it). An upstream that is down (the old primary after
    the failover) has its port closed too, as a host that is down: libpq
    then tries the next host of the URI."""

    def __init__(self, name, upstreams):
        self.name = name
        self.lock = threading.Lock()
        self.stalled = False
        self.refuse_until = 0.0
        self.armed_cut = False
        self.conns = set()
        self.conns_by_id = {}
        self.closing = False
        self.drops = 0
        self.drops_inflight_commit = 0   # connections whose COMMIT was unanswered at a drop
        self.drops_inflight = 0          # connections with any statement unanswered at a drop
        self.commit_cuts = 0
        self.ports = []
        self.threads = []
        for up in upstreams:
            ls = self.listen(0)
            self.ports.append(ls.getsockname()[1])
            th = threading.Thread(target=self.serve, args=(ls, self.ports[-1], up), daemon=True)
            th.start()
            self.threads.append(th)

    @staticmethod
    def listen(port):
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            ls.bind(("127.0.0.1", port))
            ls.listen(64)
        except OSError:
            ls.close()
            raise
        ls.settimeout(0.1)
        return ls

    @staticmethod
    def reachable(port):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            return False

    def serve(self, ls, port, upstream):
        dead = False
        while not self.closing:
            if ls is None:  # closed: refusing, or the upstream is down
                if now() < self.refuse_until or (dead and not self.reachable(upstream)):
                    time.sleep(0.1)
                    continue
                try:
                    ls = self.listen(port)
                except OSError:
                    time.sleep(0.1)
                    continue
                dead = False
            if now() < self.refuse_until:
                ls.close()
                ls = None
                continue
            try:
                down, _ = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                ls.close()
                ls = None
                continue
            if now() < self.refuse_until:
                self.reset(down)
                continue
            try:
                up = socket.create_connection(("127.0.0.1", upstream), timeout=3)
            except OSError:
                self.reset(down)  # the upstream is down: so is the path, until it is back
                ls.close()
                ls = None
                dead = True
                continue
            for s in (down, up):
                s.settimeout(None)
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = {"down": down, "up": up, "commit_pending": False, "pending": False,
                    "closed": False}
            with self.lock:
                self.conns.add(id(conn))
                self.conns_by_id[id(conn)] = conn
            threading.Thread(target=self.pump, args=(conn, down, up, True), daemon=True).start()
            threading.Thread(target=self.pump, args=(conn, up, down, False), daemon=True).start()
        if ls is not None:
            ls.close()

    @staticmethod
    def reset(s):
        try:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            s.close()
        except OSError:
            pass

    def pump(self, conn, src, dst, to_server):
        try:
            while not conn["closed"]:
                if self.stalled:  # leave the bytes in the kernel's buffers
                    time.sleep(0.02)
                    continue
                r, _, _ = select.select([src], [], [], 0.2)
                if not r or self.stalled:
                    continue
                data = src.recv(65536)
                if not data:
                    while self.stalled and not conn["closed"]:
                        time.sleep(0.02)  # a partition hides the close too
                    break
                conn["pending"] = to_server  # a request sent, its answer not yet back
                if to_server:
                    # libpq sends COMMIT as a simple query: 'Q', length 11.
                    if b"\x0bCOMMIT\x00" in data:
                        conn["commit_pending"] = True
                elif conn["commit_pending"]:
                    conn["commit_pending"] = False
                    if self.armed_cut:
                        self.armed_cut = False
                        self.commit_cuts += 1
                        self.drop(2.0, cut=True)
                        return
                dst.sendall(data)
        except OSError:
            pass
        self.close_conn(conn)

    def close_conn(self, conn):
        with self.lock:
            if conn["closed"]:
                return
            conn["closed"] = True
            self.conns.discard(id(conn))
            self.conns_by_id.pop(id(conn), None)
        for s in (conn["down"], conn["up"]):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            try:
                s.close()
            except OSError:
                pass

    def drop(self, seconds, cut=False):
        """Close every connection; refuse new ones for `seconds`. Returns how
        many connections had a statement, and a COMMIT, sent and unanswered."""
        with self.lock:
            self.refuse_until = now() + seconds
            conns = list(self.conns_by_id.values())
            self.drops += 0 if cut else 1
        commits = sum(1 for c in conns if c["commit_pending"])
        statements = sum(1 for c in conns if c["pending"])
        if not cut:
            self.drops_inflight_commit += commits
            self.drops_inflight += statements
        for c in conns:
            self.close_conn(c)
        return statements, commits

    def close(self):
        self.closing = True
        self.stalled = False
        for th in self.threads:
            th.join(2)
        with self.lock:
            conns = list(self.conns_by_id.values())
        for c in conns:
            self.close_conn(c)


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


def container_body(cid):
    return {"id": cid, "region": region_of(cid), "pool": WAIT_POOL if cid == WAIT_ID else "p",
            "latency_ms": int(cid.split("-")[2]) + 1, "data": {"n": cid}}


WAIT_ID = "w-%s-0" % REGIONS[0]  # delta's pool's one container


def fleet_ids():
    return [fleet_id(r, j) for r in REGIONS for j in range(FLEET_PER_REGION)] + [WAIT_ID]


def fleet_bodies():
    return [container_body(c) for c in fleet_ids()]


# ---------------------------------------------------------------- database view

# Every change of a container's session, with the database's clock: when and
# how each session began and ended (a row's old values say why it ended);
# and every container made dead, with or without a session.
AUDIT_SQL = r"""
CREATE TABLE IF NOT EXISTS nemesis_audit (
  seq bigserial PRIMARY KEY, at_ms bigint, id text, old_session text, old_gen bigint,
  old_lease bigint, old_hb bigint, old_dead_reported boolean, new_session text, new_gen bigint,
  new_status text, new_lease bigint, new_tenant text, new_key text);
CREATE OR REPLACE FUNCTION nemesis_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO nemesis_audit (at_ms, id, old_session, old_gen, old_lease, old_hb,
                             old_dead_reported, new_session, new_gen, new_status, new_lease,
                             new_tenant, new_key)
  VALUES ((extract(epoch FROM clock_timestamp()) * 1000)::bigint, NEW.id, OLD.session_id,
          OLD.generation, OLD.lease_expires_at_ms, OLD.last_heartbeat_ms, OLD.dead_reported,
          NEW.session_id, NEW.generation, NEW.status, NEW.lease_expires_at_ms, NEW.tenant,
          NEW.idempotency_key);
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS nemesis_audit ON containers;
CREATE TRIGGER nemesis_audit AFTER UPDATE ON containers FOR EACH ROW
  WHEN (OLD.session_id IS DISTINCT FROM NEW.session_id OR
        (NEW.status = 'dead' AND OLD.status IS DISTINCT FROM 'dead'))
  EXECUTE FUNCTION nemesis_audit();
"""

SAMPLE_SQL = r"""
SELECT json_build_object(
  'now', (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
  'rows', (SELECT coalesce(json_agg(c), '[]') FROM (
     SELECT id, status, generation, session_id, tenant, idempotency_key, lease_expires_at_ms,
            last_heartbeat_ms, drain_requested FROM containers) c),
  'quota', (SELECT coalesce(json_object_agg(tenant, n), '{}') FROM (
     SELECT tenant, count(*) AS n FROM containers WHERE session_id IS NOT NULL
       AND lease_expires_at_ms > (extract(epoch FROM clock_timestamp()) * 1000)::bigint
     GROUP BY tenant) q))
"""


def take_sample(hist, port):
    t0 = now()
    w0 = time.time()
    out = psql(port, SAMPLE_SQL, timeout=10)
    t1 = now()
    w1 = time.time()
    js = json.loads(out)
    s = {"a": t0, "b": t1, "db_ms": js["now"], "rows": js["rows"], "quota": js["quota"],
         "offset_ms": js["now"] - (w0 + w1) * 500.0}
    with hist.lock:
        hist.samples.append(s)
    return s


def read_audit(port):
    out = psql(port, "SELECT coalesce(json_agg(a ORDER BY seq), '[]') FROM nemesis_audit a",
               timeout=30)
    return json.loads(out)


# ---------------------------------------------------------------- nemesis

class Nemesis:
    def __init__(self, hist, nodes, proxies, primary, standby, rng, args):
        self.hist, self.nodes, self.proxies = hist, nodes, proxies
        self.primary, self.standby = primary, standby
        self.rng, self.args = rng, args
        self.db_port = primary.port      # where the test reads the database
        self.failed_over = False
        self.problems = []               # a fault that could not be injected or undone
        self.fsync_file = None           # the slow-fsync shim's delay, if preloaded
        self.required = [k for k in KINDS if k != "failover"]

    def record(self, kind, node, t0, detail, **extra):
        a = {"kind": kind, "node": node, "start": t0, "end": now(), "detail": detail}
        a.update(extra)
        with self.hist.lock:
            self.hist.actions.append(a)
        log("%-9s node %s  %.1f s  %s" % (kind, node, a["end"] - t0, detail))

    def restart(self, node, skew=None):
        node.kill()
        node.skew = skew
        if not node.start():
            self.problems.append("node %d did not restart (log %s)" % (node.idx, node.log_path))

    def run(self, kind):
        """One action of `kind`; True if it fired (was recorded)."""
        fired = len(self.hist.actions)
        self.act(kind)
        return len(self.hist.actions) > fired

    def act(self, kind):
        i = self.rng.randrange(len(self.nodes))
        node, proxy = self.nodes[i], self.proxies[i]
        t0 = now()
        if kind == "kill9":
            self.restart(node)
            self.record(kind, i, t0, "restart attempts failed so far: %d" % node.start_failures)
        elif kind == "pause":
            secs = self.rng.uniform(5, 12)
            node.pause()
            time.sleep(secs)
            node.resume()
            self.record(kind, i, t0, "SIGSTOP %.1f s" % secs)
        elif kind == "skew":
            secs = self.args.skew_seconds * self.rng.choice([1, -1])
            if self.args.skew_seconds >= 60:
                secs = abs(secs)  # the pre-fix check: ahead, past long leases
            self.restart(node, skew="%+ds" % secs)
            time.sleep(self.args.skew_hold)
            self.restart(node)
            self.record(kind, i, t0, "wall clock %+d s for %.0f s" % (secs, self.args.skew_hold))
        elif kind == "stall":
            secs = self.rng.uniform(*self.args.stall_range)
            proxy.stalled = True
            time.sleep(secs)
            proxy.stalled = False
            self.record(kind, i, t0, "database path stalled %.1f s" % secs)
        elif kind == "drop":
            secs = self.rng.uniform(1, 4)
            statements, commits = proxy.drop(secs)
            time.sleep(secs)
            self.record(kind, i, t0, "connections dropped, refused %.1f s; %d with a statement "
                        "in flight, %d with a COMMIT" % (secs, statements, commits))
        elif kind == "commitcut":
            before = proxy.commit_cuts
            proxy.armed_cut = True
            deadline = now() + 10
            while proxy.commit_cuts == before and now() < deadline:
                time.sleep(0.01)
            proxy.armed_cut = False
            cut = proxy.commit_cuts - before
            time.sleep(2)
            if cut:
                self.record(kind, i, t0, "a COMMIT's answer cut off in flight")
        elif kind == "longtxn":
            secs = self.rng.uniform(10, 20)
            # Like pg_dump: a lock on containers held in an open transaction.
            sql = "BEGIN; SELECT 1 FROM containers LIMIT 1; SELECT pg_sleep(%.1f); COMMIT;" % secs
            p = subprocess.Popen(["psql", "-X", "-q", "-h", "127.0.0.1", "-p", str(self.db_port),
                                  "-U", PG_USER, "-d", DBNAME, "-c", sql], env=clean_env(),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 preexec_fn=die_with_parent)
            time.sleep(1)
            held = p.poll() is None
            self.restart(node)
            try:
                p.wait(secs + 15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            if held:
                self.record(kind, i, t0, "transaction held %.0f s while node %d restarted (ready "
                            "after %.1f s)" % (secs, i, node.down[-1][1] - node.down[-1][0]
                                                if node.down[-1][1] else -1))
            else:
                self.problems.append("longtxn: psql ended at once (exit %s)" % p.returncode)
        elif kind in ("outage", "pause_db_restart"):
            self.db_restart(kind, i, node, t0)
        elif kind == "clockstep":
            nemesis_faults.clock_step(self, i, node, t0)
        elif kind == "rowlock":
            nemesis_faults.row_lock(self, i, self.rng.choice(fleet_ids()), t0)
        elif kind == "syncrep_cancel":
            nemesis_faults.syncrep_cancel(self, t0)
        elif kind == "slowfsync":
            nemesis_faults.slow_fsync(self, t0)
        elif kind == "failover":
            self.primary.stop_immediate()
            t_kill = now()
            # Longer than dead-after, as a failover manager's detection and
            # promotion are: no container is judged by the silence.
            time.sleep(self.rng.uniform(DEAD_AFTER_MS / 1000.0 + 1, DEAD_AFTER_MS / 1000.0 + 3))
            self.standby.promote()
            self.db_port = self.standby.port
            self.failed_over = True
            # Wait until some node answers a claim path again (any status but
            # 503 and no answer) to tell how long the outage was.
            self.record(kind, None, t0, "primary killed (immediate), standby promoted %.1f s "
                        "later (dead-after %.0f s)" % (now() - t_kill, DEAD_AFTER_MS / 1000.0))

    def db_restart(self, kind, i, node, t0):
        """outage: the database primary stopped (immediate) for longer than
        dead-after, then started, while every node goes on. pause_db_restart:
        node i paused while the primary stops and starts again."""
        pg = self.standby if self.failed_over else self.primary
        if kind == "outage":
            secs = self.rng.uniform(DEAD_AFTER_MS / 1000.0 + 1, DEAD_AFTER_MS / 1000.0 + 4)
        else:
            secs = self.rng.uniform(1, 3)
            node.pause()
        pg.stop_immediate()
        time.sleep(secs)
        try:
            pg.start()
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            self.problems.append("%s: the database did not start again: %s %s"
                                 % (kind, e, pg.log_tail(5)))
            if kind != "outage":
                node.resume()
            return
        if kind == "outage":
            self.record(kind, None, t0, "database primary down %.1f s (immediate stop), "
                        "started again" % secs)
        else:
            time.sleep(self.rng.uniform(0.5, 2))
            node.resume()
            self.record(kind, i, t0, "node %d paused %.1f s; the database down %.1f s in it"
                        % (i, now() - t0, secs))

    def schedule(self, seconds):
        """Each kind at least once (failover last, late), then random kinds
        until `seconds` have passed, with quiet gaps between. A short run
        (up to 300 s, as in CI) draws SHORT_KINDS of the kinds, so that it
        stays as long as it was; a long one has them all."""
        start = now()
        order = [k for k in KINDS if k != "failover"]
        if self.args.kinds:
            order = [k for k in self.args.kinds.split(",") if k != "failover"]
        elif seconds <= 300:
            order = self.rng.sample(order, SHORT_KINDS)
        self.required = list(order)
        self.rng.shuffle(order)
        end = start + seconds
        fo_at = start + seconds * 0.75
        first = True
        tries = collections.Counter()
        while now() < end - 5 or order:
            time.sleep(self.rng.uniform(1.5, 3.5) if not first else 3)
            first = False
            if not self.failed_over and (now() >= fo_at and not order):
                kind = "failover"
            elif order:
                kind = order.pop()
            else:
                kind = self.rng.choice(self.required)
            tries[kind] += 1
            if not self.run(kind) and tries[kind] < 3 and kind != "failover":
                order.insert(0, kind)  # did not fire (no COMMIT passed): later, again
        if not self.failed_over:
            self.run("failover")


class Sampler(threading.Thread):
    def __init__(self, hist, nem, every=2.0):
        super().__init__(daemon=True)
        self.hist, self.nem, self.every = hist, nem, every
        self.stop = threading.Event()
        self.errors = 0

    def run(self):
        while not self.stop.wait(self.every):
            try:
                take_sample(self.hist, self.nem.db_port)
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                self.errors += 1  # a failover in progress: the next one


# ---------------------------------------------------------------- checker

class Checker:
    """Pure function of the recorded history, the samples and the audit."""

    def __init__(self, hist, dead_after_ms=DEAD_AFTER_MS, nodes_down=None, spawns=None):
        self.h = hist
        self.dead_after_ms = dead_after_ms
        self.spawns = spawns or {}   # node index -> when each of its lives began
        # node index -> [(start, end or None)]: paused or down
        self.nodes_down = nodes_down or {}
        self.violations = []  # (kind, detail)

    def v(self, kind, detail):
        self.violations.append((kind, detail))

    def mono(self, db_ms):
        return self.h.db_to_mono(db_ms)

    def was_down(self, node, t0, t1):
        return any(s <= t1 and (e is None or e >= t0) for s, e in self.nodes_down.get(node, []))

    def sessions(self):
        """Per acknowledged session: its claims' answers, renews, releases,
        and the earliest moment its hold can have ended, by the client's
        knowledge (release sent, lease end, a 404/409 about it)."""
        ses = {}
        for op in self.h.ops:
            if op["kind"] == "claim" and op["status"] == 201 and isinstance(op["resp"], dict):
                r = op["resp"]
                s = ses.setdefault(r["session_id"], {
                    "sid": r["session_id"], "cid": r["container_id"], "token": r["token"],
                    "tenant": op.get("tenant"), "key": op["req"].get("idempotency_key"),
                    "start": op["t1"], "answers": [], "releases": [], "renews": [],
                    "gone": None, "gone_at": [], "first": op, "claims": []})
                s["claims"].append(op)
                s["start"] = min(s["start"], op["t1"])
                if op["t1"] <= s["first"]["t1"]:
                    s["first"] = op
                s["answers"].append((op["t1"], r["lease_expires_at_ms"]))
                if r["container_id"] != s["cid"] or r["token"] != s["token"]:
                    self.v("session answered two ways",
                           "session %s answered as %s/%d and %s/%d" % (
                               s["sid"], s["cid"], s["token"], r["container_id"], r["token"]))
        for op in self.h.ops:
            sid = op.get("sid")
            if sid not in ses:
                continue
            s = ses[sid]
            if op["kind"] == "release":
                s["releases"].append(op)
            elif op["kind"] == "renew":
                s["renews"].append(op)
                if op["status"] == 200 and isinstance(op["resp"], dict):
                    s["answers"].append((op["t1"], op["resp"]["lease_expires_at_ms"]))
            elif op["kind"] == "get" and op["status"] == 200 and isinstance(op["resp"], dict):
                s["answers"].append((op["t1"], op["resp"]["lease_expires_at_ms"]))
            if op["kind"] in ("release", "renew", "get") and op["status"] in (404, 409, 410):
                s["gone"] = op["t1"] if s["gone"] is None else min(s["gone"], op["t1"])
                s["gone_at"].append(op["t1"])
        for s in ses.values():
            # The lease as last acknowledged; a renew answered after that
            # (or not at all: it may have committed) may have set it to as
            # little as its send time plus its lease_ms.
            t_last, lease = max(s["answers"])
            end = self.mono(lease)
            for op in s["renews"]:
                if op["t1"] >= t_last and op["status"] in (200, 503, None):
                    end = min(end, op["t0"] + op["req"]["lease_ms"] / 1000.0)
            s["lease_by_client"] = end < self.mono(lease)  # a renew in flight
            s["lease_end"] = end
            s["lease_db_ms"] = lease
            sent = [op["t0"] for op in s["releases"]]
            s["release_sent"] = min(sent) if sent else None
            s["released_ack"] = min((op["t1"] for op in s["releases"] if op["status"] == 204),
                                    default=None)
        return ses

    def audit_timeline(self):
        """From the audit: per session, its start and its end in the database,
        and whether that end was one the rules allow without the client."""
        began, ended = {}, {}
        for a in self.h.audit:
            if a["new_session"]:
                began[a["new_session"]] = a
            if a["old_session"]:
                ended[a["old_session"]] = a
        return began, ended

    def end_ok(self, s, a):
        """Why the database's end `a` of session `s` was allowed, or None."""
        at = a["at_ms"]
        # Silence and lease ends are the database's own comparisons of its
        # own clock (the heartbeat stamp, the lease and the end all are
        # its): no slack. A release is the client's: converted, with slack.
        if a["new_status"] == "dead":
            if a["old_dead_reported"]:
                return "reported dead"
            if at - (a["old_hb"] or 0) >= self.dead_after_ms:
                return "silent %d ms" % (at - (a["old_hb"] or 0))
            return None
        if a["old_lease"] is not None and at >= a["old_lease"]:
            return "lease over"
        if s is not None and s["release_sent"] is not None and \
                s["release_sent"] <= self.mono(at) + TOL_MS / 1000.0:
            return "released"
        return None

    def check(self):
        ses = self.sessions()
        began, ended = self.audit_timeline()
        have_audit = bool(self.h.audit)
        # The hold's end: the client's knowledge, or the database's end when
        # it was a legitimate one the client could not know of (a death, an
        # expiry, a release in flight).
        for s in ses.values():
            ends = [s["lease_end"]]
            if s["release_sent"] is not None:
                ends.append(s["release_sent"])
            if s["gone"] is not None:
                ends.append(s["gone"])
            a = ended.get(s["sid"])
            s["db_end"] = a
            s["db_end_ok"] = self.end_ok(s, a) if a else None
            if a and s["db_end_ok"]:
                ends.append(self.mono(a["at_ms"]))
            s["end"] = min(ends)
        holds = list(ses.values())
        for s in ses.values():
            holds += [self.late_hold(s, op) for op in s["claims"] if op["t1"] > s["end"]]

        # 2. Acknowledged sessions in the database's history.
        if have_audit:
            for s in ses.values():
                b = began.get(s["sid"])
                if b is None:
                    self.v("acknowledged session lost",
                           "claim of %s (%s token %d, answered %.2f on node %s) is not in the "
                           "database's history" % (s["sid"], s["cid"], s["token"],
                                                   s["start"] - self.h.mono0, s["first"]["node"]))
                elif b["id"] != s["cid"] or b["new_gen"] != s["token"]:
                    self.v("acknowledged session lost",
                           "%s answered %s/%d, the database made it %s/%d" % (
                               s["sid"], s["cid"], s["token"], b["id"], b["new_gen"]))
                a = s["db_end"]
                if a and not s["db_end_ok"]:
                    self.v("acknowledged session ended early",
                           "%s on %s (tenant %s, claimed via node %s) ended at %.2f with status "
                           "%s: lease to %.2f (db %d), last heartbeat %d ms before, no release "
                           "sent before%s" % (
                               s["sid"], s["cid"], s["tenant"], s["first"]["node"],
                               self.mono(a["at_ms"]) - self.h.mono0, a["new_status"],
                               self.mono(a["old_lease"]) - self.h.mono0 if a["old_lease"] else -1,
                               a["old_lease"] or -1, a["at_ms"] - (a["old_hb"] or 0),
                               "" if s["release_sent"] is None else " (one sent at %.2f)"
                               % (s["release_sent"] - self.h.mono0)))

        # 1. Overlapping holds, per container.
        by_cid = collections.defaultdict(list)
        for s in holds:
            if s["end"] > s["start"]:
                by_cid[s["cid"]].append(s)
        for cid, lst in by_cid.items():
            lst.sort(key=lambda s: s["start"])
            for i, x in enumerate(lst):
                for y in lst[i + 1:]:
                    if y["start"] >= x["end"] or y["sid"] == x["sid"]:
                        continue
                    if y["start"] < x["end"] - 0.05:
                        self.v("overlapping holds",
                               "%s: %s (token %d, held %.2f to %.2f, tenant %s) and %s (token %d, "
                               "answered %.2f on node %s); the first's database end: %s" % (
                                   cid, x["sid"], x["token"], x["start"] - self.h.mono0,
                                   x["end"] - self.h.mono0, x["tenant"], y["sid"], y["token"],
                                   y["start"] - self.h.mono0, y["first"]["node"],
                                   self.describe_end(x)))

        # 5. One idempotency key, two sessions live together.
        by_key = collections.defaultdict(list)
        for s in ses.values():
            if s["key"]:
                by_key[(s["tenant"], s["key"])].append(s)
        for (tenant, key), lst in by_key.items():
            lst.sort(key=lambda s: s["start"])
            for i, x in enumerate(lst):
                for y in lst[i + 1:]:
                    if y["start"] < x["end"] - 0.05:
                        self.v("one key two sessions",
                               "tenant %s key %s: %s (answered %.2f, live to %.2f) and %s "
                               "(answered %.2f)" % (
                                   tenant, key, x["sid"], x["start"] - self.h.mono0,
                                   x["end"] - self.h.mono0, y["sid"], y["start"] - self.h.mono0))

        # 3. Tokens grow per container: a claim's token is above every token
        # answered for that container before the claim was sent.
        claims = collections.defaultdict(list)
        for op in self.h.ops:
            if op["kind"] == "claim" and op["status"] == 201 and not op["replayed"] and \
                    isinstance(op["resp"], dict):
                claims[op["resp"]["container_id"]].append(op)
        for cid, lst in claims.items():
            for b in lst:
                for a in lst:
                    if a["t1"] < b["t0"] and a["resp"]["token"] >= b["resp"]["token"] and \
                            a["resp"]["session_id"] != b["resp"]["session_id"]:
                        self.v("token did not grow",
                               "%s: token %d (answered %.2f) then token %d (sent %.2f)" % (
                                   cid, a["resp"]["token"], a["t1"] - self.h.mono0,
                                   b["resp"]["token"], b["t0"] - self.h.mono0))
                        break

        # 2 and 4. The samples of the database; a session lost is told once.
        final_ms = None
        told = set()
        for smp in self.h.samples:
            live = {r["session_id"]: r for r in smp["rows"] if r["session_id"]}
            for tenant, n in smp["quota"].items():
                if n > nemesis_limits.max_sessions(tenant):
                    self.v("quota exceeded", "tenant %s holds %d live sessions (quota %d) at %.2f"
                           % (tenant, n, nemesis_limits.max_sessions(tenant),
                              smp["a"] - self.h.mono0))
            tdb = self.mono(smp["db_ms"])
            for s in ses.values():
                if s["released_ack"] is not None and s["released_ack"] < smp["a"] and \
                        s["sid"] in live:
                    self.v("acknowledged release lost",
                           "%s on %s released (204 at %.2f) is live at %.2f" % (
                               s["sid"], s["cid"], s["released_ack"] - self.h.mono0,
                               smp["a"] - self.h.mono0))
                if s["start"] >= smp["a"] or s["end"] <= smp["b"] + TOL_MS / 1000.0:
                    continue
                if s["lease_db_ms"] <= smp["db_ms"] or (
                        s["lease_by_client"] and s["lease_end"] <= tdb + TOL_MS / 1000.0):
                    continue  # over by the database's clock (or a renew's, in flight)
                r = live.get(s["sid"])
                if (r is None or r["generation"] != s["token"] or r["id"] != s["cid"]) and \
                        s["sid"] not in told:
                    told.add(s["sid"])
                    self.v("acknowledged session lost",
                           "%s (%s token %d, lease to %.2f) is not live with its token at %.2f: %s"
                           % (s["sid"], s["cid"], s["token"], s["lease_end"] - self.h.mono0,
                              smp["a"] - self.h.mono0, "gone" if r is None else
                              "%s/%s" % (r["id"], r["generation"])))
            final_ms = smp
        if final_ms is not None:
            self.check_admin(final_ms)
            for cid, lst in claims.items():
                row = next((r for r in final_ms["rows"] if r["id"] == cid), None)
                top = max(op["resp"]["token"] for op in lst)
                if row is not None and row["generation"] < top:
                    self.v("token did not grow", "%s: generation %d at the end, a token %d was "
                           "answered" % (cid, row["generation"], top))

        # 7 and 8. Deaths and claims against who was heard.
        got, sent, maybe = self.heard()
        self.check_deaths(got, sent)
        self.check_claims(maybe)
        # 9 to 12. The tenants' limits, outcomes unknown, stale and foreign tokens.
        nemesis_limits.check(self, ses, began, ended, self.spawns)
        # 13. A commit whose synchronous wait was cancelled, acknowledged.
        nemesis_faults.check_not_durable(self)

        # 6. Every request answered within its bound, by a node not down.
        for op in self.h.ops:
            late = op["status"] is None or op["t1"] - op["t0"] > op["timeout"] + 0.5
            if late and not self.was_down(op["node"], op["t0"], op["t1"] + 0.5):
                self.v("no answer",
                       "%s %s to node %d sent %.2f: %s after %.1f s" % (
                           op["method"], op["path"], op["node"], op["t0"] - self.h.mono0,
                           op["err"] or "status %s" % op["status"], op["t1"] - op["t0"]))
            if op["status"] is not None and op["status"] >= 500 and op["status"] != 503:
                self.v("5xx other than 503", "%s %s to node %d at %.2f: %d %s" % (
                    op["method"], op["path"], op["node"], op["t0"] - self.h.mono0, op["status"],
                    json.dumps(op["resp"])[:200]))
        return self.violations

    def late_hold(self, s, op):
        """A 201 answered after its session's hold had ended (a replay that
        came late): the client holds the container again, from that answer
        to the lease it names, a release sent or a 404/409/410 after it."""
        ends = [self.mono(op["resp"]["lease_expires_at_ms"])]
        ends += [r["t0"] for r in s["releases"] if r["t0"] >= op["t1"]]
        ends += [g for g in s["gone_at"] if g >= op["t1"]]
        return dict(s, start=op["t1"], end=min(ends), first=op)

    def heard(self):
        """The clients' own record of who was heard: per container, the
        heartbeat requests naming it that got 202 (certainly taken), those
        sent and not refused with a 4xx (its agent was reporting, whether
        the server could hear or not), and every heartbeat or registration
        naming it not refused with a 4xx (it may have been taken)."""
        got = collections.defaultdict(list)
        sent = collections.defaultdict(list)
        maybe = collections.defaultdict(list)
        for op in self.h.ops:
            body = op["req"] if isinstance(op["req"], dict) else {}
            if op["kind"] == "heartbeat":
                ids = op.get("ids") or [i["container_id"] for i in body.get("heartbeats", [])]
            elif op["kind"] == "register":
                ids = [c["id"] for c in body.get("containers", [])]
            else:
                continue
            if op["status"] is not None and 400 <= op["status"] < 500:
                continue
            for cid in ids:
                maybe[cid].append(op)
                if op["kind"] == "heartbeat":
                    sent[cid].append(op)
                if op["kind"] == "heartbeat" and op["status"] == 202:
                    got[cid].append(op)
        return got, sent, maybe

    def check_deaths(self, got, sent):
        """7. A container made dead while its agent was reporting within the
        last dead-after: heartbeats naming it sent after the death less
        dead-after and before the death (converted from the database's
        clock, so with slack both ways), whether they got 202 (heard and
        still judged silent) or 503 or no answer (the server deaf: a node
        or the database down is no silence of the container's)."""
        tol = TOL_MS / 1000.0
        for a in self.h.audit:
            if a["new_status"] != "dead" or a["old_dead_reported"]:
                continue
            d = self.mono(a["at_ms"])
            since = d - self.dead_after_ms / 1000.0 + tol
            taken = [op for op in got.get(a["id"], []) if op["t0"] > since and op["t1"] < d - tol]
            tried = [op for op in sent.get(a["id"], []) if since < op["t0"] < d - tol]
            if tried:
                last = max(tried, key=lambda o: o["t0"])
                self.v("death of a reporting container",
                       "%s made dead at %.2f (session %s; its last heartbeat stamped %d ms "
                       "before); in the %.1f s before, %d heartbeats naming it were sent "
                       "(answers %s), %d of them got 202 and were answered before; the last "
                       "sent %.2f to node %d" % (
                           a["id"], d - self.h.mono0, a["old_session"],
                           a["at_ms"] - (a["old_hb"] or 0), self.dead_after_ms / 1000.0,
                           len(tried), dict(collections.Counter(str(o["status"]) for o in tried)),
                           len(taken), last["t0"] - self.h.mono0, last["node"]))

    def taken_by(self, o):
        """The latest a request may have been taken: its answer; one the
        client gave up on (no answer) sent to a node that was paused or down
        meanwhile, also the end of that spell, since a paused node reads the
        request still in its socket when it resumes (seen: a heartbeat timed
        out at 32.5 s, taken at 36.4 s when its node resumed, its container
        rightly claimed at 40.9 s)."""
        if o["status"] is not None:
            return o["t1"]
        end = o["t1"]
        for s, e in self.nodes_down.get(o["node"], []):
            if s <= o["t1"] and (e is None or e >= o["t0"]):
                end = max(end, e if e is not None else float("inf"))
        return end

    def check_claims(self, maybe):
        """8. A claim (201, not a replay) of a container that could not have
        been heard for dead-after before the claim was sent, or that an
        operator drained (200 before the claim was sent) with no undrain nor
        delete sent since."""
        tol = TOL_MS / 1000.0
        admin = collections.defaultdict(list)
        for op in self.h.ops:
            if op["kind"] in ("drain", "undrain", "delete"):
                for cid in op.get("ids", []):
                    admin[cid].append(op)
        for op in self.h.ops:
            if op["kind"] != "claim" or op["status"] != 201 or op["replayed"] or \
                    not isinstance(op["resp"], dict):
                continue
            cid = op["resp"]["container_id"]
            last = max((min(self.taken_by(o), op["t1"]) for o in maybe.get(cid, [])
                        if o["t0"] < op["t1"]), default=None)
            if last is None or op["t0"] - last > self.dead_after_ms / 1000.0 + tol:
                self.v("claim of a silent container",
                       "%s claimed (%s, sent %.2f to node %d) though last heard %s" % (
                           cid, op["resp"]["session_id"], op["t0"] - self.h.mono0, op["node"],
                           "never" if last is None else "at %.2f at the latest"
                           % (last - self.h.mono0)))
            drains = [o for o in admin[cid] if o["kind"] == "drain" and o["status"] == 200
                      and o["t1"] < op["t0"]]
            if not drains:
                continue
            dr = max(drains, key=lambda o: o["t1"])
            if not any(o["kind"] in ("undrain", "delete") and o["t1"] > dr["t0"] and
                       o["t0"] < op["t1"] for o in admin[cid]):
                self.v("claim of a drained container",
                       "%s claimed (%s, sent %.2f to node %d), drained (200 at %.2f) and not "
                       "undrained" % (cid, op["resp"]["session_id"], op["t0"] - self.h.mono0,
                                      op["node"], dr["t1"] - self.h.mono0))

    def ends_by_cause(self):
        """How the database ended sessions (proof that expiry and the dead
        sweep fired): released, expired, swept dead, or not allowed."""
        ses = {s["sid"]: s for s in self.sessions().values()}
        n = collections.Counter()
        for a in self.h.audit:
            if not a["old_session"]:
                continue
            why = self.end_ok(ses.get(a["old_session"]), a)
            if why is None and a["old_session"] not in ses and a["new_status"] != "dead":
                why = "released"  # a session no client saw: nobody to wrong
            n["not allowed" if why is None else why.split(" ")[0]] += 1
        return n

    def describe_end(self, s):
        a = s["db_end"]
        if a is None:
            return "none recorded"
        return "%.2f status %s (%s)" % (self.mono(a["at_ms"]) - self.h.mono0, a["new_status"],
                                        s["db_end_ok"] or "NOT allowed: lease to db %s, last "
                                        "heartbeat %d ms before" % (
                                            a["old_lease"], a["at_ms"] - (a["old_hb"] or 0)))

    def check_admin(self, smp):
        """Registrations, deletes, drains: the last one sent for an id, if
        acknowledged, is what the end state shows."""
        last = {}
        for op in sorted((o for o in self.h.ops
                          if o["kind"] in ("register", "drain", "undrain", "delete")),
                         key=lambda o: o["t0"]):
            for cid in op.get("ids", []):
                last[cid] = op
        rows = {r["id"]: r for r in smp["rows"]}
        for cid, op in last.items():
            if op["t1"] > smp["a"]:
                continue
            r = rows.get(cid)
            if op["kind"] == "register" and op["status"] == 200 and r is None:
                self.v("acknowledged registration lost", "%s registered at %.2f, absent at end"
                       % (cid, op["t1"] - self.h.mono0))
            if op["kind"] == "delete" and op["status"] == 204 and r is not None:
                self.v("acknowledged delete lost", "%s deleted at %.2f, present at end" % (
                    cid, op["t1"] - self.h.mono0))
            if op["kind"] == "drain" and op["status"] == 200 and r is not None and not (
                    r["status"] in ("draining", "dead") or
                    (r["status"] == "picked" and r["drain_requested"])):
                self.v("acknowledged drain lost", "%s drained at %.2f, %s at end" % (
                    cid, op["t1"] - self.h.mono0, r["status"]))
            if op["kind"] == "undrain" and op["status"] == 200 and r is not None and \
                    r["drain_requested"]:
                self.v("acknowledged undrain lost", "%s undrained at %.2f, still drained at end"
                       % (cid, op["t1"] - self.h.mono0))


# ---------------------------------------------------------------- self-test

def self_test():
    """Hand-made histories, one per kind of violation; each must be found,
    and a clean history must pass."""
    base_ms = 1_800_000_000_000

    def mk():
        h = History()
        h.mono0, h.wall0, h.db_offset_ms = 0.0, base_ms / 1000.0, 0.0
        return h

    def claim(h, t0, t1, sid, cid, token, lease_s, tenant="acme", key=None, node=0,
              replayed=False):
        req = {"region": "r0", "pool": "p"}
        if key:
            req["idempotency_key"] = key
        h.add_op({"kind": "claim", "thread": "t", "node": node, "method": "POST",
                  "path": "/v1/sessions", "req": req, "status": 201, "replayed": replayed,
                  "err": None, "timeout": BOUND_S, "tenant": tenant, "t0": t0, "t1": t1,
                  "resp": {"session_id": sid, "container_id": cid, "token": token,
                           "lease_expires_at_ms": base_ms + int(lease_s * 1000)}})

    def release(h, t0, t1, sid, status=204):
        h.add_op({"kind": "release", "thread": "t", "node": 1, "method": "DELETE",
                  "path": "/v1/sessions/" + sid, "req": None, "status": status,
                  "replayed": False, "err": None, "timeout": BOUND_S, "sid": sid, "t0": t0,
                  "t1": t1, "resp": None})

    def audit_claim(h, at_s, sid, cid, token, lease_s, tenant="acme", key=None):
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": None,
                        "old_gen": token - 1, "old_lease": None, "old_hb": 0,
                        "old_dead_reported": False, "new_session": sid, "new_gen": token,
                        "new_status": "picked", "new_lease": base_ms + int(lease_s * 1000),
                        "new_tenant": tenant, "new_key": key})

    def audit_end(h, at_s, sid, cid, token, lease_s, status="available", hb_s=None):
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": sid,
                        "old_gen": token, "old_lease": base_ms + int(lease_s * 1000),
                        "old_hb": base_ms + int((at_s if hb_s is None else hb_s) * 1000),
                        "old_dead_reported": False, "new_session": None, "new_gen": token,
                        "new_status": status, "new_lease": None})

    def audit_dead(h, at_s, cid, hb_s):
        """A container without a session made dead."""
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": None,
                        "old_gen": 1, "old_lease": None, "old_hb": base_ms + int(hb_s * 1000),
                        "old_dead_reported": False, "new_session": None, "new_gen": 1,
                        "new_status": "dead", "new_lease": None})

    def op(h, kind, t, status, method, path, ids, req=None, sid=None, node=0):
        h.add_op({"kind": kind, "thread": "t", "node": node, "method": method, "path": path,
                  "req": req, "status": status, "replayed": False, "err": None,
                  "timeout": BOUND_S, "sid": sid, "ids": ids, "t0": t, "t1": t + 0.05,
                  "resp": None})

    def hb(h, t, cids, status=202):
        op(h, "heartbeat", t, status, "POST", "/v1/heartbeats", cids,
           {"heartbeats": [{"container_id": c, "state": "ready"} for c in cids]})

    def admin(h, kind, t, cid, status=200):
        op(h, kind, t, status, "POST", "/v1/containers/%s/%s" % (cid, kind), [cid])

    def sample(h, t, rows, quota=None):
        h.samples.append({"a": t, "b": t + 0.01, "db_ms": base_ms + int(t * 1000),
                          "rows": rows, "quota": quota or {}, "offset_ms": 0})

    def row(cid, sid, token, lease_s, tenant="acme"):
        return {"id": cid, "status": "picked" if sid else "available", "generation": token,
                "session_id": sid, "tenant": tenant if sid else None, "idempotency_key": None,
                "lease_expires_at_ms": base_ms + int(lease_s * 1000) if sid else None,
                "last_heartbeat_ms": base_ms, "drain_requested": False}

    def clean():
        """Two sessions on c1 one after the other (release, then a death after
        silence), a key replayed, a lease that expired, all sampled."""
        h = mk()
        op(h, "register", 0.0, 200, "POST", "/v1/containers", ["c1"],
           {"containers": [{"id": "c1"}]})
        for t in (0.5, 2.5, 4.5, 12.5, 14.5, 16.5):  # c1 silent from 4.5 to 12.5
            hb(h, t, ["c1"])
        claim(h, 1.0, 1.1, "s1", "c1", 10, 60, key="k1")
        audit_claim(h, 1.05, "s1", "c1", 10, 60, key="k1")
        claim(h, 1.5, 1.6, "s1", "c1", 10, 60, key="k1", replayed=True)
        sample(h, 2.0, [row("c1", "s1", 10, 60)], {"acme": 1})
        release(h, 3.0, 3.1, "s1")
        audit_end(h, 3.05, "s1", "c1", 10, 60)
        claim(h, 4.0, 4.1, "s2", "c1", 11, 60, key="k1")
        audit_claim(h, 4.05, "s2", "c1", 11, 60, key="k1")
        sample(h, 5.0, [row("c1", "s2", 11, 60)], {"acme": 1})
        audit_end(h, 12.0, "s2", "c1", 11, 60, status="dead", hb_s=5.0)  # silent 7 s
        claim(h, 13.0, 13.1, "s3", "c1", 12, 15.0)
        audit_claim(h, 13.05, "s3", "c1", 12, 15.0)
        audit_end(h, 15.2, "s3", "c1", 12, 15.0)                     # expired
        claim(h, 16.0, 16.1, "s4", "c1", 13, 60)
        audit_claim(h, 16.05, "s4", "c1", 13, 60)
        sample(h, 17.0, [row("c1", "s4", 13, 60)], {"acme": 1})
        return h

    cases = {"clean": (clean(), None)}

    h = clean()  # another node's early end of s4 (no release, lease not over), then s5
    audit_end(h, 18.0, "s4", "c1", 13, 60)
    claim(h, 19.0, 19.1, "s5", "c1", 14, 60, tenant="bravo", node=2)
    audit_claim(h, 19.05, "s5", "c1", 14, 60)
    cases["overlap"] = (h, "overlapping holds")

    h = clean()  # the dead sweep ends s4 though its container spoke 1 s before
    audit_end(h, 18.0, "s4", "c1", 13, 60, status="dead", hb_s=17.0)
    cases["premature death"] = (h, "acknowledged session ended early")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 0, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": 500, "replayed": False, "err": None, "timeout": BOUND_S,
              "sid": "s4", "t0": 18.0, "t1": 18.1, "resp": {"error": {"code": "internal"}}})
    cases["500"] = (h, "5xx other than 503")

    h = clean()
    sample(h, 3.5, [row("c1", "s1", 10, 60)], {"acme": 1})  # released at 3.1, live at 3.5
    cases["release lost"] = (h, "acknowledged release lost")

    h = clean()
    claim(h, 20.0, 20.1, "s6", "c2", 5, 60)               # s6 never in the database
    cases["claim lost"] = (h, "acknowledged session lost")

    h = clean()
    claim(h, 20.0, 20.1, "s6", "c1", 9, 60)  # after s4's token 13 was answered
    audit_claim(h, 20.05, "s6", "c1", 9, 60)
    cases["token down"] = (h, "token did not grow")

    h = clean()
    sample(h, 18.0, [row("c1", "s4", 13, 60)], {"acme": QUOTA + 1})
    cases["quota"] = (h, "quota exceeded")

    h = clean()
    claim(h, 5.0, 5.2, "s9", "c3", 20, 60, key="k1")  # k1 while s2 (k1) lives
    audit_claim(h, 5.1, "s9", "c3", 20, 60)
    cases["one key two sessions"] = (h, "one key two sessions")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 2, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": None, "replayed": False, "err": "timed out",
              "timeout": BOUND_S, "sid": "s4", "t0": 20.0, "t1": 20.0 + BOUND_S, "resp": None})
    cases["unanswered"] = (h, "no answer")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 2, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": None, "replayed": False, "err": "timed out",
              "timeout": BOUND_S, "sid": "s4", "t0": 20.0, "t1": 20.0 + BOUND_S, "resp": None})
    cases["unanswered, node paused"] = (h, None)

    def on_c2(h, lease_s=25.0):
        hb(h, 18.5, ["c2"])
        claim(h, 19.0, 19.1, "s5", "c2", 3, lease_s)
        audit_claim(h, 19.05, "s5", "c2", 3, lease_s)
        return h

    h = on_c2(clean())  # its lease to 25.0 ended by the database at 24.6
    audit_end(h, 24.6, "s5", "c2", 3, 25.0)
    cases["reaper 0.4 s early"] = (h, "acknowledged session ended early")

    h = on_c2(clean())  # swept dead after 5.6 s of silence on the database's clock
    audit_end(h, 24.1, "s5", "c2", 3, 60, status="dead", hb_s=18.5)
    cases["dead 0.4 s early"] = (h, "acknowledged session ended early")

    h = clean()  # s2's container got 202s at 8 and 10, never written: dead at 12
    hb(h, 8.0, ["c1"])
    hb(h, 10.0, ["c1"])
    cases["reporting, session dead"] = (h, "death of a reporting container")

    h = clean()  # s2's container reporting through an outage (503s): dead at 12
    for t in (7.0, 9.0, 11.0):
        hb(h, t, ["c1"], status=503)
    cases["reporting, server deaf"] = (h, "death of a reporting container")

    h = clean()  # c2, with no session, reporting every second and made dead
    for t in range(18, 24):
        hb(h, float(t), ["c2"])
    audit_dead(h, 24.0, "c2", hb_s=17.0)
    cases["reporting, made dead"] = (h, "death of a reporting container")

    h = clean()  # c2 last heard at 10, claimed at 20
    hb(h, 10.0, ["c2"])
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["claim of silent"] = (h, "claim of a silent container")

    def drained(h):
        hb(h, 19.5, ["c2"])
        admin(h, "drain", 18.0, "c2")
        return h

    h = drained(clean())
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["claim of drained"] = (h, "claim of a drained container")

    h = drained(clean())
    admin(h, "undrain", 19.0, "c2")
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["drained, undrained"] = (h, None)

    h = clean()  # s3 (expired at 15.2) replayed at 16.5 saying it lasts to 60
    claim(h, 13.2, 16.5, "s3", "c1", 12, 60, replayed=True)
    cases["replay after the end"] = (h, "overlapping holds")

    h = clean()  # a renew of s4 answered 410: gone, c1 free for s5
    h.add_op({"kind": "renew", "thread": "t", "node": 0, "method": "POST",
              "path": "/v1/sessions/s4/renew", "req": {"token": 13, "lease_ms": 9000},
              "status": 410, "replayed": False, "err": None, "timeout": BOUND_S, "sid": "s4",
              "t0": 17.5, "t1": 17.6, "resp": {"error": {"code": "session_ended"}}})
    claim(h, 18.0, 18.1, "s5", "c1", 14, 60, tenant="bravo")
    audit_claim(h, 18.05, "s5", "c1", 14, 60)
    sample(h, 19.0, [row("c1", "s5", 14, 60, tenant="bravo")], {"bravo": 1})
    cases["410 is gone"] = (h, None)
    paused = {2: [(19.0, 30.0)]}
    helpers = dict(clean=clean, claim=claim, audit_claim=audit_claim, audit_end=audit_end, op=op,
                   hb=hb, sample=sample, row=row, base_ms=base_ms)
    cases.update(nemesis_limits.self_test_cases(helpers))
    cases.update(nemesis_faults.self_test_cases(helpers))

    passed = failed = 0
    for name, (h, want, *extra) in cases.items():
        down = extra[1] if len(extra) > 1 else paused if name == "unanswered, node paused" else None
        c = Checker(h, nodes_down=down, spawns=extra[0] if extra else None)
        found = c.check()
        kinds = {k for k, _ in found}
        ok = (not found) if want is None else (want in kinds)
        if ok:
            passed += 1
        else:
            failed += 1
        print("nemesis self-test: %-24s %s%s" % (name, "ok" if ok else "FAILED",
                                                  "" if ok else ": found %s" % found))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


def recheck(path):
    """The checker over a kept run's history (to study or change it)."""
    with open(path) as f:
        d = json.load(f)
    h = History()
    h.ops, h.actions, h.audit, h.samples = d["ops"], d["actions"], d["audit"], d["samples"]
    h.db_offset_ms, h.mono0, h.wall0 = d["db_offset_ms"], d["mono0"], d["wall0"]
    down = {int(k): [tuple(x) for x in v] for k, v in d["nodes_down"].items()}
    spawns = {int(k): v for k, v in d.get("spawns", {}).items()}
    c = Checker(h, nodes_down=down, spawns=spawns)
    violations = c.check()
    print("nemesis: sessions ended in the database: " +
          ", ".join("%s %d" % kv for kv in sorted(c.ends_by_cause().items())))
    for k, n in sorted(collections.Counter(k for k, _ in violations).items()):
        print('  violations of "%s": %d' % (k, n))
    for k, d in violations[:20]:
        print("nemesis: VIOLATION %s: %s" % (k, d))
    print("nemesis: %d operations, %d faults injected, %d violations"
          % (len(h.ops), len(h.actions), len(violations)))
    return 1 if violations else 0


# ---------------------------------------------------------------- main

def summary(hist, violations, missing, nem, proxies, nodes, sampler, secs, ends=None,
            notes=()):
    by = collections.Counter()
    for op in hist.ops:
        code = nemesis_limits.code_of(op) if op["status"] in (409, 429, 503) else None
        by[(op["kind"], "no answer" if op["status"] is None else
            "%s %s" % (op["status"], code) if code else str(op["status"]))] += 1
    print("nemesis: operations by kind and outcome:")
    kinds = sorted({k for k, _ in by})
    for k in kinds:
        print("  %-10s %s" % (k, ", ".join("%s: %d" % (st, n) for (kk, st), n
                                           in sorted(by.items()) if kk == k)))
    acts = collections.Counter(a["kind"] for a in hist.actions)
    print("nemesis: actions by kind: " + ", ".join("%s %d" % (k, acts.get(k, 0)) for k in KINDS))
    print("nemesis: proxy drops %d, connections cut with a statement in flight %d, with a COMMIT "
          "in flight %d; COMMIT answers cut (commitcut): %d; node start attempts that exited: %d; "
          "samples %d (%d failed); audit rows %d; %.0f s" % (
              sum(p.drops for p in proxies), sum(p.drops_inflight for p in proxies),
              sum(p.drops_inflight_commit for p in proxies),
              sum(p.commit_cuts for p in proxies), sum(n.start_failures for n in nodes),
              len(hist.samples), sampler.errors, len(hist.audit), secs))
    if ends:
        print("nemesis: sessions ended in the database: " +
              ", ".join("%s %d" % kv for kv in sorted(ends.items())))
    for line in notes:
        print("nemesis: " + line)
    vk = collections.Counter(k for k, _ in violations)
    for k, n in sorted(vk.items()):
        print('  violations of "%s": %d' % (k, n))
    # At most 20 printed, the first few of each kind.
    each = max(2, 20 // max(1, len(vk)))
    shown = collections.Counter()
    printed = 0
    for k, d in violations:
        if shown[k] < each and printed < 20:
            shown[k] += 1
            printed += 1
            print("nemesis: VIOLATION %s: %s" % (k, d))
    for k in missing:
        print("nemesis: FAULT NEVER FIRED: " + k)


def slow_fsync_env(args, tmp):
    """The shim copied where the postgres user may read it, and its delay
    file; PostgreSQL's fsync is then on and each call passes through the
    shim (really syncing only with --fsync)."""
    if not args.slow_fsync_lib:
        return {}, None
    lib = os.path.join(tmp, "slow_fsync.so")
    shutil.copy(args.slow_fsync_lib, lib)
    os.chmod(lib, 0o755)
    delay = os.path.join(tmp, "fsync_delay_ms")
    nemesis_faults.write_delay(delay, 0)
    return {"LD_PRELOAD": lib, "EDGEALLOC_SLOW_FSYNC_FILE": delay,
            "EDGEALLOC_SLOW_FSYNC_REAL": "1" if args.fsync else "0"}, delay


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="path to build/edgealloc")
    ap.add_argument("--self-test", action="store_true", help="check the checker, no servers")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("NEMESIS_SECONDS", "100")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get(
        "NEMESIS_SEED", str(random.randrange(1 << 30)))))
    ap.add_argument("--skew-seconds", type=int, default=40,
                    help="how far a skewed node's wall clock is off (ahead or behind; from 60 "
                         "on, always ahead)")
    ap.add_argument("--skew-hold", type=float, default=15.0,
                    help="how long a skewed node runs before its normal restart")
    ap.add_argument("--long-leases", action="store_true",
                    help="claims and renews ask for 60-80 s leases (the pre-fix clock check)")
    ap.add_argument("--stall", type=float, nargs=2, default=None, dest="stall_range",
                    metavar=("MIN", "MAX"),
                    help="proxy stall duration range, seconds (default 6 12 in a short run, "
                         "6 25 in a long one: past the answer bound)")
    ap.add_argument("--fsync", action="store_true", help="PostgreSQL with fsync on")
    ap.add_argument("--slow-fsync-lib", metavar="SO",
                    help="tests/fault/slow_fsync.cc built (the slowfsync fault preloads it into "
                         "PostgreSQL; without it that fault does not fire)")
    ap.add_argument("--kinds", help="the faults to inject, comma-separated (default: all in a "
                                     "long run, %d drawn in a short one; failover always)"
                    % SHORT_KINDS)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--recheck", metavar="HISTORY_JSON",
                    help="run the checker again over a kept run's history.json")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.recheck:
        return recheck(args.recheck)
    if not args.bin:
        ap.error("--bin is required (or --self-test)")
    binary = os.path.abspath(args.bin)
    if args.stall_range is None:
        args.stall_range = [6.0, 12.0] if args.seconds <= 300 else [6.0, 25.0]
    rng = random.Random(args.seed)
    log("seed %d (--seed %d to replay the schedule), %.0f s of faults, binary %s"
        % (args.seed, args.seed, args.seconds, binary))
    tmp = tempfile.mkdtemp(prefix="nemesis-")
    hist = History()
    primary = standby = None
    nodes, proxies = [], []
    sampler = None
    nem = None
    t_start = now()
    violations, missing, ends, notes = [], [], None, []
    try:
        pg_env, fsync_file = slow_fsync_env(args, tmp)
        primary = PgServer(tmp, "primary", args.fsync or bool(pg_env), pg_env)
        primary.init_primary()
        standby = PgServer(tmp, "standby", args.fsync or bool(pg_env), pg_env)
        standby.init_standby(primary)
        # The standby is synchronous before the first write.
        for _ in range(300):
            if psql(primary.port, "SELECT sync_state FROM pg_stat_replication",
                    db="postgres").strip() == "sync":
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the standby did not become synchronous")
        psql(primary.port, "CREATE DATABASE " + DBNAME, db="postgres")
        log("PostgreSQL primary :%d, synchronous standby :%d (%.1f s)"
            % (primary.port, standby.port, now() - t_start))

        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as f:
            f.write("\n".join(nemesis_limits.keys_file_lines(ADMIN_KEY, AGENT_KEY)) + "\n")
        lease_ms = 70000 if args.long_leases else 15000
        for i in range(NODES):
            p = Proxy("node%d" % i, [primary.port, standby.port])
            proxies.append(p)
            uri = ("postgresql://%s@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write"
                   % (PG_USER, p.ports[0], p.ports[1], DBNAME))
            nodes.append(Node(i, binary, uri, keys, tmp, lease_ms))
        for n in nodes:
            if not n.start():
                raise RuntimeError("node %d did not start; log %s:\n%s" % (
                    n.idx, n.log_path, open(n.log_path, errors="replace").read()[-2000:]))
        psql(primary.port, AUDIT_SQL)
        op = request(hist, nodes, rng, "setup", "register", "POST", "/v1/containers", ADMIN_KEY,
                     {"containers": fleet_bodies() + [container_body(churn_id(r, j))
                                                      for r in REGIONS
                                                      for j in range(CHURN_PER_REGION)]},
                     ids=fleet_ids())
        if op["status"] != 200:
            raise RuntimeError("fleet registration: %s %s" % (op["status"], op["resp"]))
        log("3 nodes up on :%s (%.1f s)" % (",".join(str(n.port) for n in nodes),
                                            now() - t_start))

        nem = Nemesis(hist, nodes, proxies, primary, standby, rng, args)
        nem.fsync_file = fsync_file
        sampler = Sampler(hist, nem)
        take_sample(hist, primary.port)
        sampler.start()
        work = Workload(hist, nodes, args.seed, args.long_leases)
        work.start()
        nem.schedule(args.seconds)
        time.sleep(5)  # quiet: the last faults' requests finish, short leases expire
        work.join()
        sampler.stop.set()
        sampler.join(15)
        for _ in range(20):
            try:
                take_sample(hist, nem.db_port)
                hist.audit = read_audit(nem.db_port)
                break
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                time.sleep(1)
        offs = sorted(s["offset_ms"] for s in hist.samples)
        hist.db_offset_ms = offs[len(offs) // 2] if offs else 0.0
        down = {n.idx: [tuple(d) for d in n.down] for n in nodes}
        checker = Checker(hist, nodes_down=down, spawns={n.idx: n.spawns for n in nodes})
        violations = checker.check()
        ends = checker.ends_by_cause()
        unknown, replayed = nemesis_limits.unknown_replayed(checker, checker.audit_timeline()[0])
        notes = ["kinds this run had to fire: " + ", ".join(nem.required + ["failover"]),
                 "claims answered outcome unknown (503 unavailable or none): %d; of them made, "
                 "then replayed to a keyed retry: %d" % (unknown, replayed)]
        fired = {a["kind"] for a in hist.actions}
        missing = [k for k in nem.required + ["failover"] if k not in fired]
        violations += [("fault not injected or not undone", p) for p in nem.problems]
    except Exception as e:  # noqa: BLE001 - a set-up failure is a failed test
        violations.append(("set-up", "%s: %s" % (type(e).__name__, e)))
    finally:
        for n in nodes:
            n.kill()
        for p in proxies:
            p.close()
        for pg in (standby, primary):
            if pg is not None:
                pg.stop_immediate()
    secs = now() - t_start
    if nem is not None and sampler is not None:
        summary(hist, violations, missing, nem, proxies, nodes, sampler, secs, ends, notes)
    else:
        for k, d in violations:
            print("nemesis: VIOLATION %s: %s" % (k, d))
    if violations and nodes:
        for n in nodes:
            with open(n.log_path, errors="replace") as f:
                lines = [l for l in f.read().splitlines() if "serving on" not in l]
            print("node %d log (tail):\n  %s" % (n.idx, "\n  ".join(lines[-8:])))
    faults = len(hist.actions)
    print("nemesis: %d operations, %d faults injected, %d violations"
          % (len(hist.ops), faults, len(violations)), flush=True)
    failed = len(violations) + len(missing)
    print("%d passed, %d failed" % (0 if failed else 1, 1 if failed else 0))
    if args.keep or violations:
        with open(os.path.join(tmp, "history.json"), "w") as f:
            json.dump({"ops": hist.ops, "actions": hist.actions, "audit": hist.audit,
                       "db_offset_ms": hist.db_offset_ms, "mono0": hist.mono0,
                       "wall0": hist.wall0, "samples": hist.samples,
                       "nodes_down": {n.idx: n.down for n in nodes},
                       "spawns": {n.idx: n.spawns for n in nodes}}, f, default=str)
        print("nemesis: files kept in %s (--recheck %s/history.json checks it again)"
              % (tmp, tmp))
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
