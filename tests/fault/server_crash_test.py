#!/usr/bin/env python3
"""The crash harness through the server.

Starts `edgealloc serve` on a database file (open mode, 127.0.0.1 only),
registers a fleet, and runs client threads doing claims (some with
idempotency keys, and retries of them), renews, releases, heartbeats, drains,
deletes and re-registrations over HTTP. Every acknowledged reply (201, 204,
200; 202 for heartbeats, which docs/api.md does not promise durable) is recorded.
At a random moment the server is killed with SIGKILL; the files are then read
with Python's sqlite3 (PRAGMA integrity_check, the rows), the server is
restarted on the same files, and the invariants are checked through the HTTP
API too:

- integrity_check is ok;
- every acknowledged claim not released since is live on disk and over HTTP,
  same container, same token, expiry at least the last acknowledged one;
- every acknowledged release stays released; every acknowledged registration
  is there, every acknowledged delete is gone;
- no container has two live sessions, no session id is answered for two
  containers;
- tokens of one container id only ever grow: the generation on disk is at
  least every token acknowledged for it, and each new claim's token is above
  every token handed out before for that id, also after delete and
  re-registration of the id and across restarts.

Operations in flight at the kill may or may not have committed: the checks
allow both, then the model takes what is on disk.

    server_crash_test.py --bin build/edgealloc [--kills N] [--seconds S] [--seed X] [--shards N]

Prints `server-crash: K kill points, V invariant violations` and exits 1 on
any violation. Every server it started is killed, also on failure.
"""

import argparse
import http.client
import json
import math
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from fleet_names import churn_id, fleet_id, region_of  # noqa: E402

REGIONS = ["r0", "r1", "r2"]
FLEET_PER_REGION = 4
CHURN_PER_REGION = 2
WORKERS = 3
HELD_MAX = 3
LEASE_MS = 3000000
LIVE_MS = 3600000


class ServerDown(Exception):
    pass


class Client:
    """One keep-alive connection; any network failure is ServerDown."""

    def __init__(self, port):
        self.port = port
        self.conn = None

    def request(self, method, path, body=None):
        try:
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            data = json.dumps(body) if body is not None else None
            headers = {"Content-Type": "application/json"} if data else {}
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
            raw = r.read()
            try:
                js = json.loads(raw) if raw else None
            except ValueError:
                js = None
            return r.status, js, r.getheader("Idempotent-Replayed")
        except (OSError, http.client.HTTPException) as e:
            self.close()
            raise ServerDown(str(e))

    def close(self):
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass
        self.conn = None


class Model:
    """What was acknowledged, and what is in flight, under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.violations = []
        self.inflight = {}        # thread -> (op, args)
        self.live = {}            # sid -> dict(cid, token, expiry, key)
        self.released = set()
        self.sid_container = {}   # every session id ever answered -> container
        self.max_acked = {}       # cid -> largest token acknowledged
        self.max_seen = {}        # cid -> largest generation seen on disk
        self.present = set()
        self.deleted_once = set()
        self.drained = set()
        self.expect_key = {}      # key -> sid committed at the kill, or None
        self.key_retries = []     # (key, region)
        self.acks = {k: 0 for k in ("claim", "replay", "release", "renew", "register",
                                    "drain", "delete", "heartbeat")}
        self.kill_no = 0
        self.reported_low = set()  # (id, token) already reported below its token

    def violation(self, what):
        self.violations.append("kill %d: %s" % (self.kill_no, what))
        if len(self.violations) <= 20:
            print("server-crash: VIOLATION kill %d: %s" % (self.kill_no, what),
                  file=sys.stderr, flush=True)

    def begin(self, tid, op, *args):
        with self.lock:
            self.inflight[tid] = (op, args)

    def failed(self, tid):
        with self.lock:
            self.inflight.pop(tid, None)

    def ack_claim(self, tid, body, replayed, key):
        with self.lock:
            self.inflight.pop(tid, None)
            sid, cid, token = body["session_id"], body["container_id"], body["token"]
            expiry = body["lease_expires_at_ms"]
            known = self.sid_container.get(sid)
            if known is not None and known != cid:
                self.violation("session answered for two containers: %s was %s, now %s"
                               % (sid, known, cid))
            if sid in self.released:
                self.violation("released session answered again: " + sid)
            if replayed:
                self.acks["replay"] += 1
                l = self.live.get(sid)
                if l is None or l["cid"] != cid or l["token"] != token:
                    self.violation("replay answered a session that is not the live one of "
                                   "its key: %s %s token %d" % (sid, cid, token))
                else:
                    expiry = l["expiry"]
            else:
                self.acks["claim"] += 1
                before = max(self.max_acked.get(cid, 0), self.max_seen.get(cid, 0))
                if token <= before:
                    self.violation(
                        "token did not grow%s: %s claimed with token %d, a token %d was "
                        "handed out before" % (
                            " (after delete and re-registration)"
                            if cid in self.deleted_once else "", cid, token, before))
                if key:
                    if self.expect_key.get(key):
                        self.violation("retry of an idempotent claim that had committed made "
                                       "a second session: key %s had %s, got %s"
                                       % (key, self.expect_key[key], sid))
                    for s, l in self.live.items():
                        if l["key"] == key:
                            self.violation("two live sessions for key %s: %s and %s"
                                           % (key, s, sid))
                # A release whose 204 another thread has not recorded yet is
                # over already (its reply came before this claim was sent).
                releasing = {args[0] for op, args in self.inflight.values() if op == "release"}
                for s, l in self.live.items():
                    if l["cid"] == cid and s not in releasing:
                        self.violation("container has two live sessions: %s %s and %s"
                                       % (cid, s, sid))
            self.max_acked[cid] = max(self.max_acked.get(cid, 0), token)
            self.sid_container[sid] = cid
            self.live[sid] = {"cid": cid, "token": token, "expiry": expiry, "key": key}
            return dict(self.live[sid], sid=sid)

    def ack_release(self, tid, sid):
        with self.lock:
            self.inflight.pop(tid, None)
            self.acks["release"] += 1
            if sid not in self.live:
                self.violation("release acknowledged for a session not live: " + sid)
            self.live.pop(sid, None)
            self.released.add(sid)

    def ack_renew(self, tid, sid, body):
        with self.lock:
            self.inflight.pop(tid, None)
            self.acks["renew"] += 1
            l = self.live.get(sid)
            if l is None or l["cid"] != body["container_id"] or l["token"] != body["token"]:
                self.violation("renew answered for a session not live as acknowledged: " + sid)
            else:
                l["expiry"] = body["lease_expires_at_ms"]

    def ack_container(self, tid, op, ids):
        with self.lock:
            self.inflight.pop(tid, None)
            for cid in ids:
                if op == "register":
                    self.acks["register"] += 1
                    self.present.add(cid)
                elif op == "delete":
                    self.acks["delete"] += 1
                    self.present.discard(cid)
                    self.drained.discard(cid)
                    self.deleted_once.add(cid)
                elif op == "drain":
                    self.acks["drain"] += 1
                    self.drained.add(cid)

    def ack_heartbeat(self, tid):
        with self.lock:
            self.inflight.pop(tid, None)
            self.acks["heartbeat"] += 1


def read_disk(model, db_files):
    """Rows of every shard file, read with plain sqlite3 (read-only)."""
    rows = []
    for path in db_files:
        if not os.path.exists(path):
            continue
        try:
            con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, timeout=5)
        except sqlite3.Error as e:
            model.violation("reopen failed: %s: %s" % (path, e))
            continue
        try:
            res = [r[0] for r in con.execute("PRAGMA integrity_check")]
            if res != ["ok"]:
                model.violation("integrity_check: %s: %s" % (path, res))
            try:
                cur = con.execute(
                    # A container and its session (one slot each here).
                    "SELECT c.id, c.status, c.generation, s.session_id, s.idempotency_key, "
                    "s.lease_expires_at_ms, c.drain_requested "
                    "FROM containers c LEFT JOIN sessions s ON s.container_id = c.id")
            except sqlite3.OperationalError:
                continue  # killed before the schema was committed
            for r in cur:
                rows.append({"id": r[0], "status": r[1], "generation": r[2], "sid": r[3],
                             "key": r[4], "expiry": r[5], "drain_requested": r[6]})
        except sqlite3.Error as e:
            model.violation("read failed: %s: %s" % (path, e))
        finally:
            con.close()
    return rows


def check_disk(model, rows):
    m = model
    by_id, by_sid = {}, {}
    for r in rows:
        if r["id"] in by_id:
            m.violation("one id in two shard files: " + r["id"])
        by_id[r["id"]] = r
        if r["sid"]:
            if r["sid"] in by_sid:
                m.violation("one session on two containers: " + r["sid"])
            by_sid[r["sid"]] = r
    releasing, renewing, deleting, registering = set(), set(), set(), set()
    inflight_claims = 0
    for op, args in m.inflight.values():
        if op == "release":
            releasing.add(args[0])
        elif op == "renew":
            renewing.add(args[0])
        elif op == "delete":
            deleting.add(args[0])
        elif op == "register":
            registering.update(args[0])
        elif op == "claim":
            inflight_claims += 1
    for sid, l in m.live.items():
        r = by_sid.get(sid)
        if r is None:
            if sid not in releasing:
                m.violation("acknowledged claim lost: session %s on %s token %d is not on disk"
                            % (sid, l["cid"], l["token"]))
            continue
        if r["id"] != l["cid"] or r["generation"] != l["token"] or r["status"] != "picked":
            m.violation("acknowledged session changed: %s acked %s/%d, disk %s/%d %s"
                        % (sid, l["cid"], l["token"], r["id"], r["generation"], r["status"]))
        if sid not in renewing and (r["expiry"] or 0) < l["expiry"]:
            m.violation("acknowledged renew lost: %s expiry %s < acked %d"
                        % (sid, r["expiry"], l["expiry"]))
    unknown = 0
    for sid, r in by_sid.items():
        if sid in m.released:
            m.violation("acknowledged release lost: %s is live again on %s" % (sid, r["id"]))
        known = m.sid_container.get(sid)
        if known is not None and known != r["id"]:
            m.violation("session on a container other than answered: " + sid)
        if sid not in m.live and sid not in m.released:
            unknown += 1
    if unknown > inflight_claims:
        m.violation("sessions on disk that no claim in flight explains: %d > %d"
                    % (unknown, inflight_claims))
    for r in rows:
        a = m.max_acked.get(r["id"])
        if a is not None and r["generation"] < a and (r["id"], a) not in m.reported_low:
            m.reported_low.add((r["id"], a))
            m.violation("generation below an acknowledged token%s: %s generation %d < token %d"
                        % (" (after delete and re-registration)"
                           if r["id"] in m.deleted_once else "", r["id"], r["generation"], a))
    for cid in m.present:
        if cid not in by_id and cid not in deleting:
            m.violation("acknowledged registration lost: " + cid)
    for cid in m.deleted_once:
        if cid not in m.present and cid in by_id and cid not in registering:
            m.violation("acknowledged delete lost: %s is on disk" % cid)
    for cid in m.drained:
        r = by_id.get(cid)
        if r is None or cid in deleting:
            continue
        if not (r["status"] == "draining" or (r["status"] == "picked" and r["drain_requested"])):
            m.violation("acknowledged drain lost: %s is %s" % (cid, r["status"]))
    return by_id, by_sid


def resync(model, rows, by_sid):
    """The model becomes the disk; keyed claims in flight are retried next."""
    m = model
    m.expect_key = {}
    m.key_retries = []
    for op, args in m.inflight.values():
        if op == "claim" and args[0]:
            key, region = args[0], args[1]
            committed = None
            for r in rows:
                if r["sid"] and r["key"] == key:
                    committed = r["sid"]
            m.expect_key[key] = committed
            m.key_retries.append((key, region))
    present = {r["id"] for r in rows}
    for op, args in m.inflight.values():
        if op == "delete" and args[0] not in present:
            m.deleted_once.add(args[0])  # a delete in flight that committed
    for sid in list(m.live):
        if sid not in by_sid:
            m.released.add(sid)
    m.live = {}
    m.present = set()
    m.drained = set()
    for r in rows:
        m.present.add(r["id"])
        m.max_seen[r["id"]] = max(m.max_seen.get(r["id"], 0), r["generation"])
        if r["id"].startswith("x-") and (r["status"] == "draining" or r["drain_requested"]):
            m.drained.add(r["id"])
        if r["sid"]:
            m.live[r["sid"]] = {"cid": r["id"], "token": r["generation"],
                                "expiry": r["expiry"], "key": r["key"]}
            m.sid_container[r["sid"]] = r["id"]
    m.inflight = {}


def check_http(model, port):
    """After the restart: the server shows what the disk holds."""
    m = model
    c = Client(port)
    try:
        for sid, l in m.live.items():
            st, body, _ = c.request("GET", "/v1/sessions/" + sid)
            if st != 200 or body["container_id"] != l["cid"] or body["token"] != l["token"]:
                m.violation("session wrong after restart: GET %s: %d %s, expected %s/%d"
                            % (sid, st, body, l["cid"], l["token"]))
        for sid in list(m.released)[-50:]:
            st, body, _ = c.request("GET", "/v1/sessions/" + sid)
            # Ended, and saying so: its end survives the restart too.
            if st != 410 or body["error"]["code"] != "session_ended":
                m.violation("released session answers after restart: %s: %d" % (sid, st))
        holders = {l["cid"]: sid for sid, l in m.live.items()}
        for cid in sorted(m.present):
            st, body, _ = c.request("GET", "/v1/containers/" + cid)
            if st != 200:
                m.violation("container missing after restart: GET %s: %d" % (cid, st))
                continue
            if body.get("session_id") != holders.get(cid):
                m.violation("container holder wrong after restart: %s held by %s, expected %s"
                            % (cid, body.get("session_id"), holders.get(cid)))
    except ServerDown as e:
        m.violation("server did not answer after restart: %s" % e)
    finally:
        c.close()


class Run:
    """The client threads of one server lifetime."""

    def __init__(self, model, port, seed, stop):
        self.m = model
        self.port = port
        self.rng = random.Random(seed)
        self.seed = seed
        self.stop = stop

    def claim(self, c, tid, region, key):
        self.m.begin(tid, "claim", key, region)
        body = {"region": region, "pool": "p", "lease_ms": LEASE_MS}
        if key:
            body["idempotency_key"] = key
        st, js, replayed = c.request("POST", "/v1/sessions", body)
        if st == 201:
            return self.m.ack_claim(tid, js, replayed == "true", key)
        self.m.failed(tid)
        return None

    def worker(self, tid, held):
        rng = random.Random(self.seed * 7919 + tid)
        c = Client(self.port)
        n = 0
        try:
            while not self.stop.is_set():
                dice = rng.randrange(100)
                if len(held) < HELD_MAX and dice < 45:
                    key = None
                    if rng.random() < 0.5:
                        key = "k%d.%d.%d" % (self.seed % 100000, tid, n)
                        n += 1
                    s = self.claim(c, tid, rng.choice(REGIONS), key)
                    if s:
                        held.append(s)
                elif held and dice < 55:
                    s = rng.choice(held)
                    if s["key"]:
                        self.claim(c, tid, region_of(s["cid"]), s["key"])
                elif held and dice < 75:
                    s = rng.choice(held)
                    self.m.begin(tid, "renew", s["sid"])
                    st, js, _ = c.request("POST", "/v1/sessions/%s/renew" % s["sid"],
                                          {"token": s["token"],
                                           "lease_ms": LEASE_MS - rng.randrange(100000)})
                    if st == 200:
                        self.m.ack_renew(tid, s["sid"], js)
                    else:
                        self.m.failed(tid)
                elif held:
                    i = rng.randrange(len(held))
                    s = held[i]
                    self.m.begin(tid, "release", s["sid"])
                    st, _, _ = c.request("DELETE", "/v1/sessions/%s?token=%d"
                                         % (s["sid"], s["token"]))
                    if st == 204:
                        self.m.ack_release(tid, s["sid"])
                    else:
                        self.m.failed(tid)
                    if st in (204, 404, 409):
                        held.pop(i)
                else:
                    time.sleep(0.001)
        except ServerDown:
            pass
        finally:
            c.close()

    def heartbeats(self, tid):
        rng = random.Random(self.seed * 31 + 5)
        c = Client(self.port)
        try:
            while not self.stop.is_set():
                items = []
                for cid in rng.sample([fleet_id(r, j) for r in REGIONS
                                       for j in range(FLEET_PER_REGION)], rng.randint(1, 5)):
                    h = {"container_id": cid, "ts_ms": int(time.time() * 1000),
                         "load": rng.random()}
                    if rng.random() < 0.25:
                        h["state"] = "ready"
                    items.append(h)
                self.m.begin(tid, "heartbeat")
                st, _, _ = c.request("POST", "/v1/heartbeats", {"heartbeats": items})
                if st == 202:
                    self.m.ack_heartbeat(tid)  # accepted, not promised durable
                else:
                    self.m.failed(tid)
                time.sleep(0.002)
        except ServerDown:
            pass
        finally:
            c.close()

    def register(self, c, tid, ids):
        self.m.begin(tid, "register", list(ids))
        cs = [{"id": cid, "region": region_of(cid), "pool": "p",
               "latency_ms": 0 if cid.startswith("x-") else 1 + int(cid.split("-")[2]),
               "data": {"n": cid}} for cid in ids]
        st, _, _ = c.request("POST", "/v1/containers", {"containers": cs})
        if st == 200:
            self.m.ack_container(tid, "register", ids)
            return True
        self.m.failed(tid)
        return False

    def churn(self, tid, present):
        rng = random.Random(self.seed * 131 + 7)
        c = Client(self.port)
        try:
            while not self.stop.is_set():
                cid = churn_id(rng.choice(REGIONS), rng.randrange(CHURN_PER_REGION))
                if cid not in present:
                    if self.register(c, tid, [cid]):
                        present.add(cid)
                    time.sleep(0.002)
                    continue
                self.m.begin(tid, "drain", cid)
                st, _, _ = c.request("POST", "/v1/containers/%s/drain" % cid)
                if st == 200:
                    self.m.ack_container(tid, "drain", [cid])
                else:
                    self.m.failed(tid)
                for _ in range(20):
                    self.m.begin(tid, "delete", cid)
                    st, _, _ = c.request("DELETE", "/v1/containers/" + cid)
                    if st == 204:
                        self.m.ack_container(tid, "delete", [cid])
                    else:
                        self.m.failed(tid)
                    if st in (204, 404):
                        present.discard(cid)
                        if self.register(c, tid, [cid]):
                            present.add(cid)
                        break
                    time.sleep(0.003)
                time.sleep(0.002)
        except ServerDown:
            pass
        finally:
            c.close()

    def start(self):
        m = self.m
        with m.lock:
            held = [[] for _ in range(WORKERS)]
            for i, (sid, l) in enumerate(sorted(m.live.items())):
                held[i % WORKERS].append(dict(l, sid=sid))
            retries = m.key_retries
            m.key_retries = []
            churn_present = {cid for cid in m.present if cid.startswith("x-")}
            adopted = set(m.live)
        # The claims with a key whose reply the last kill cut off: a client
        # retries them, before anything else (so nobody releases the session
        # meanwhile).
        c = Client(self.port)
        try:
            for i, (key, region) in enumerate(retries):
                s = self.claim(c, 0, region, key)
                if s and s["sid"] not in adopted:
                    held[i % WORKERS].append(s)
        except ServerDown:
            pass
        finally:
            c.close()
        self.threads = [threading.Thread(target=self.worker, args=(t, held[t]))
                        for t in range(WORKERS)]
        self.threads.append(threading.Thread(target=self.heartbeats, args=(5,)))
        self.threads.append(threading.Thread(target=self.churn, args=(6, churn_present)))
        for t in self.threads:
            t.daemon = True
            t.start()

    def join(self):
        for t in self.threads:
            t.join(10)
            if t.is_alive():
                self.m.violation("a client thread hung after the kill (no reply, no error)")


class Server:
    def __init__(self, binary, db, shards, log, log_path):
        self.binary, self.db, self.shards, self.log = binary, db, shards, log
        self.log_path = log_path
        self.log_offset = 0
        self.proc = None
        self.port = None

    def lost_port(self):
        """The server exited because another process took the free port we
        picked between our probe and its bind: not the server's fault."""
        if self.proc is None or self.proc.poll() is None:
            return False
        with open(self.log_path, "rb") as f:
            f.seek(self.log_offset)
            return b"Address already in use" in f.read()

    def start_ready(self, tries=5):
        for _ in range(tries):
            self.start()
            if self.wait_ready():
                return True
            if not self.lost_port():
                return False
        return False

    def start(self):
        self.port = free_port()
        self.log.flush()
        self.log_offset = os.path.getsize(self.log_path)
        self.proc = edgealloc_server.serve(
            self.binary, self.db, self.port,
            ["--shards", str(self.shards), "--threads", "2",
             "--lease-ms", str(LEASE_MS), "--dead-after-ms", str(LIVE_MS),
             "--batch-wait-ms", "2", "--mirror-refresh-ms", "1000"],
            stdout=self.log, stderr=self.log, stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent)
        return self.proc

    def wait_ready(self, timeout=15):
        return edgealloc_server.wait_answers(self.port, "/readyz", self.proc, timeout, 0.005)

    def kill(self):
        status = edgealloc_server.kill(self.proc) if self.proc is not None else None
        self.proc = None
        return status


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", required=True, help="path to build/edgealloc")
    ap.add_argument("--kills", type=int,
                    default=int(os.environ.get("EDGEALLOC_SERVER_CRASH_KILLS", "100")))
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("EDGEALLOC_SERVER_CRASH_SECONDS", "55")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get(
        "EDGEALLOC_SERVER_CRASH_SEED", str(random.randrange(1 << 30)))))
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    print("server-crash: seed %d (--seed %d to replay)" % (args.seed, args.seed), flush=True)
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="server-crash-")
    db = os.path.join(tmp, "crash.db")
    db_files = [db] if args.shards == 1 else [
        "%s.shard%d-of-%d" % (db, i, args.shards) for i in range(args.shards)]
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "ab")
    m = Model()
    server = Server(binary, db, args.shards, log, log_path)
    kills = 0
    kills_in_workload = 0
    t0 = time.time()
    try:
        # The fleet, once, before the first kill point.
        if not server.start_ready():
            m.violation("server did not start")
            raise SystemExit
        c = Client(server.port)
        fleet = [fleet_id(r, j) for r in REGIONS for j in range(FLEET_PER_REGION)]
        st, _, _ = c.request("POST", "/v1/containers", {"containers": [
            {"id": cid, "region": region_of(cid), "pool": "p",
             "latency_ms": 1 + int(cid.split("-")[2])} for cid in fleet]})
        c.close()
        if st != 200:
            m.violation("fleet registration answered %d" % st)
            raise SystemExit
        m.present.update(fleet)
        m.acks["register"] += len(fleet)
        started = True
        while kills < args.kills and time.time() - t0 < args.seconds:
            m.kill_no = kills + 1
            # A sixth of the kill points land while the server starts (opening,
            # WAL recovery, migration); the rest under load, log-uniform from
            # 2 ms to 600 ms of it.
            early = rng.random() < 1 / 6
            stop = threading.Event()
            run = None
            if early:
                if started:
                    server.kill()  # a clean process to kill while it starts:
                    started = False  # this one was up (the first), nothing is lost
                server.start()
                time.sleep(rng.uniform(0.001, 0.06))
            else:
                if not started and not server.start_ready():
                    m.violation("server did not become ready after restart")
                    break
                check_http(m, server.port)
                run = Run(m, server.port, rng.randrange(1 << 30), stop)
                run.start()
                time.sleep(math.exp(rng.uniform(math.log(0.002), math.log(0.6))))
            started = False
            lost_port = server.lost_port()
            status = server.kill()
            stop.set()
            if run:
                run.join()
            if lost_port:
                continue  # never served: nothing to kill, nothing to check
            if status != -signal.SIGKILL:
                m.violation("server ended on its own before the kill: status %s" % status)
            else:
                kills += 1
                kills_in_workload += 0 if early else 1
            rows = read_disk(m, db_files)
            by_id, by_sid = check_disk(m, rows)
            resync(m, rows, by_sid)
        # The last restart is checked over HTTP too.
        if server.start_ready():
            check_http(m, server.port)
        else:
            m.violation("server did not become ready after the last restart")
    except SystemExit:
        pass
    finally:
        server.kill()
        log.close()
    secs = time.time() - t0
    a = m.acks
    print("server-crash: %d kill points (%d under load), %.1f s, acks: %d claims (%d replays), "
          "%d releases, %d renews, %d registrations, %d drains, %d deletes, "
          "%d heartbeat requests (202, not promised durable)"
          % (kills, kills_in_workload, secs, a["claim"], a["replay"], a["release"], a["renew"],
             a["register"], a["drain"], a["delete"], a["heartbeat"]))
    kinds = {}
    for v in m.violations:
        k = v.split(": ", 2)[1] if v.count(": ") >= 2 else v
        kinds[k] = kinds.get(k, 0) + 1
    for k, n in sorted(kinds.items()):
        print('  violations of "%s": %d' % (k, n))
    print("server-crash: %d kill points, %d invariant violations" % (kills, len(m.violations)),
          flush=True)
    if m.violations and os.path.exists(os.path.join(tmp, "server.log")):
        with open(os.path.join(tmp, "server.log"), "rb") as f:
            lines = [l for l in f.read().decode("utf-8", "replace").splitlines()
                     if "serving on" not in l]
        if lines:
            print("server log (tail):\n" + "\n".join(lines[-20:]))
    if args.keep:
        print("server-crash: files kept in " + tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if m.violations or kills == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
