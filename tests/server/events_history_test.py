"""The event log against what the clients saw and what the database holds.

A storm of claims, renews, releases, expiries, drains, undrains and deaths
on one SQLite node, or on three PostgreSQL nodes of one database, while a
reader follows GET /v1/events/stream from node to node, its connection cut
at a random byte of each answer and resumed with Last-Event-ID after the
last whole event it read. Then:

- the reader's events are the database's event table, one for one, in order
  (none missed at a cut, none read twice);
- every claim answered 201 is one session.claimed with its token, every
  release that ended a session one session.ended `released`, every renew
  answered 200 one session.renewed (each renew asks for a later end);
- every ended session of the history table is one session.ended with the
  history's reason, after its claim, and a session still live has none;
- each container that stopped reporting is one container.dead, after its
  sessions' session.ended `container_dead`; each drain and undrain answered
  200 is its container.drained or .undrained.

    python3 tests/server/events_history_test.py --bin build/edgealloc --engine sqlite|postgres
"""
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import (bin_args, call, die_with_parent, free_port, serve, stop,  # noqa: E402
                              wait_answers)
from pg_server import DBNAME, PG_USER, PgServer, psql  # noqa: E402

IDS = ["c-%d" % i for i in range(16)]
SILENT = IDS[:3]            # stop reporting after a while: they die
DEAD_AFTER_MS = 1500
STORM_S = 8.0
COLUMNS = ("seq", "type", "container_id", "session_id", "token", "end_reason")


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


class Record:
    """What the clients were told, kept under one lock."""

    def __init__(self):
        self.lock = threading.Lock()
        self.claimed = {}       # session id -> (container id, token)
        self.released = set()   # session ids a release ended
        self.renews = {}        # session id -> renews answered 200
        self.drains = []        # (container id, "drained" | "undrained"), in answer order
        self.connections = 0    # the reader's stream connections, each cut

    def add(self, what, *args):
        with self.lock:
            if what == "claim":
                self.claimed[args[0]] = (args[1], args[2])
            elif what == "release":
                self.released.add(args[0])
            elif what == "renew":
                self.renews[args[0]] = self.renews.get(args[0], 0) + 1
            else:
                self.drains.append(args)


def post(port, path, body=None):
    status, data = call(port, "POST", path, None if body is None else json.dumps(body), timeout=20)
    return status, (json.loads(data) if data else {})


def claimer(ports, rec, stop_at, seed):
    rnd = random.Random(seed)
    while time.monotonic() < stop_at:
        port = rnd.choice(ports)
        status, s = post(port, "/v1/sessions", {"region": "weur", "pool": "chrome",
                                                "lease_ms": rnd.randint(600, 3000)})
        if status != 201:
            time.sleep(0.05)
            continue
        sid, token = s["session_id"], s["token"]
        rec.add("claim", sid, s["container_id"], token)
        fate = rnd.random()
        time.sleep(rnd.uniform(0, 0.3))
        if fate < 0.3:
            continue  # left to expire, or to its container's death
        if fate < 0.55:
            # A renew asks for more than any claim's lease: its end always moves later.
            status, _ = post(rnd.choice(ports), "/v1/sessions/%s/renew" % sid,
                             {"token": token, "lease_ms": 5000})
            if status == 200:
                rec.add("renew", sid)
        # One release a session: a 204 is the release that ended it (410 if it
        # expired first).
        status, _ = call(rnd.choice(ports), "DELETE", "/v1/sessions/%s?token=%d" % (sid, token),
                         timeout=20)
        if status == 204:
            rec.add("release", sid)


def reporter(ports, quiet, silent_from):
    while not quiet.is_set():
        now = time.monotonic()
        ids = [i for i in IDS if now < silent_from or i not in SILENT]
        post(ports[0], "/v1/heartbeats",
             {"heartbeats": [{"container_id": i, "state": "ready"} for i in ids]})
        time.sleep(0.25)


def drainer(ports, rec, stop_at, seed):
    rnd = random.Random(seed)
    drained = set()
    while time.monotonic() < stop_at:
        cid = rnd.choice(IDS[3:])
        verb = "undrain" if cid in drained else "drain"
        status, _ = post(rnd.choice(ports), "/v1/containers/%s/%s" % (cid, verb))
        if status == 200:
            (drained.discard if verb == "undrain" else drained.add)(cid)
            rec.add("drain", cid, verb + "ed")
        time.sleep(rnd.uniform(0.1, 0.4))


def stream_once(port, after, cut_at):
    """One GET /v1/events/stream, its answer read up to byte cut_at (or
    whole): the whole events in it, as (cursor, event)."""
    # A stream that finds nothing waits up to 25 s: the reader gives up on it
    # after 3 s of silence, one more kind of cut.
    sock = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        head = "GET /v1/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: %s\r\n" \
               "Connection: close\r\n\r\n" % after
        sock.sendall(head.encode())
        data = b""
        while len(data) < cut_at:
            try:
                chunk = sock.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()  # a cut: whatever was not read is lost with the connection
    body = data[:cut_at].split(b"\r\n\r\n", 1)
    if len(body) < 2 or not data.startswith(b"HTTP/1.1 200"):
        return []
    events = []
    for block in body[1].split(b"\n\n")[:-1]:  # the last is cut, or empty
        fields = dict(line.split(b": ", 1) for line in block.split(b"\n")
                      if b": " in line and not line.startswith(b":"))
        if b"id" in fields and b"data" in fields:
            events.append((fields[b"id"].decode(), json.loads(fields[b"data"])))
    return events


def follow(ports, until_seq_fn, done, seed, out, rec):
    """Reads the stream from node to node, cut at random, until done is set
    and the database's last seq is read."""
    rnd = random.Random(seed)
    after = "0"
    while True:
        last = until_seq_fn() if done.is_set() else None
        if last is not None and int(after) >= last:
            return
        for cursor, event in stream_once(rnd.choice(ports), after, rnd.randint(40, 6000)):
            out.append(event)
            after = cursor
        rec.connections += 1  # this thread's alone


def rows_of(engine, where):
    sql = ("SELECT %s FROM events ORDER BY seq" % ", ".join(COLUMNS),
           "SELECT session_id, end_reason FROM session_history WHERE end_reason IS NOT NULL")
    if engine == "sqlite":
        db = sqlite3.connect(where, timeout=30)
        try:
            return [list(db.execute(q)) for q in sql]
        finally:
            db.close()
    out = []
    for q in sql:
        text = psql(where, q, timeout=60)
        out.append([tuple(None if v == "" else (int(v) if v.lstrip("-").isdigit() else v)
                          for v in line.split("|")) for line in text.splitlines()])
    return out


def check(rec, read, events, history):
    key = lambda e: tuple(e.get(c) for c in COLUMNS)  # noqa: E731
    if [key(e) for e in read] != [tuple(r) for r in events]:
        seqs = [e["seq"] for e in read]
        fail("the reader's %d events are not the database's %d (read seqs %s...)"
             % (len(read), len(events), seqs[:20]))
    by_session = {}
    for e in read:
        if e.get("session_id"):
            by_session.setdefault(e["session_id"], []).append(e)
    for sid, (cid, token) in rec.claimed.items():
        got = [e for e in by_session.get(sid, []) if e["type"] == "session.claimed"]
        if len(got) != 1 or got[0]["container_id"] != cid or got[0]["token"] != token:
            fail("claim %s on %s token %d: events %r" % (sid, cid, token, got))
    for sid in rec.released:
        ends = [e for e in by_session[sid] if e["type"] == "session.ended"]
        if [e["end_reason"] for e in ends] != ["released"]:
            fail("release of %s: ends %r" % (sid, ends))
    for sid, n in rec.renews.items():
        got = sum(1 for e in by_session[sid] if e["type"] == "session.renewed")
        if got != n:
            fail("%s renewed %d times by 200, %d session.renewed" % (sid, n, got))
    ended = dict(history)
    for sid, evs in by_session.items():
        kinds = [e["type"] for e in evs]
        if kinds[0] != "session.claimed" or kinds.count("session.ended") > 1 or \
                ("session.ended" in kinds and kinds[-1] != "session.ended"):
            fail("%s: events out of order %r" % (sid, kinds))
        reasons = [e["end_reason"] for e in evs if e["type"] == "session.ended"]
        if reasons != ([ended[sid]] if sid in ended else []):
            fail("%s: ended %r by its events, %r by the history" % (sid, reasons, ended.get(sid)))
    for cid in SILENT:
        deaths = [i for i, e in enumerate(read) if e["type"] == "container.dead"
                  and e["container_id"] == cid]
        if len(deaths) != 1:
            fail("%s stopped reporting: %d container.dead events" % (cid, len(deaths)))
        late = [e for e in read[deaths[0]:] if e["container_id"] == cid
                and e["type"] == "session.ended" and e["end_reason"] == "container_dead"]
        if late:
            fail("%s: a session.ended after its container.dead: %r" % (cid, late))
    drains = [(e["container_id"], e["type"].split(".")[1]) for e in read
              if e["type"] in ("container.drained", "container.undrained")]
    if drains != rec.drains:
        fail("drains answered 200 %r, events %r" % (rec.drains[:10], drains[:10]))
    print("ok %d events read through %d cut connections are the database's; %d claims, "
          "%d releases, %d renews, %d ended sessions, %d drains and undrains, %d deaths match"
          % (len(read), rec.connections, len(rec.claimed), len(rec.released),
             sum(rec.renews.values()), len(ended), len(drains), len(SILENT)))


def storm(ports, until_seq_fn, snapshot):
    """The storm, then a quiet time in which every lease ends (the longest,
    a renew's, is 5 s) while the living containers go on reporting; the
    reader reads to the last event, and the database is read before the
    reports stop (their end would kill the rest of the fleet)."""
    rec, read, done, quiet = Record(), [], threading.Event(), threading.Event()
    start = time.monotonic()
    stop_at = start + STORM_S
    workers = [threading.Thread(target=claimer, args=(ports, rec, stop_at, s)) for s in range(4)]
    workers.append(threading.Thread(target=drainer, args=(ports, rec, stop_at, 99)))
    reporting = threading.Thread(target=reporter, args=(ports, quiet, start + 2))
    reader = threading.Thread(target=follow, args=(ports, until_seq_fn, done, 7, read, rec))
    for t in workers + [reporting, reader]:
        t.start()
    try:
        for t in workers:
            t.join()
        time.sleep(6.5)
        done.set()
        reader.join(timeout=120)
        if reader.is_alive():
            fail("the reader did not reach the database's last event in 120 s")
        return rec, read, snapshot()
    finally:
        quiet.set()
        reporting.join()


def woken_by_another_node(ports):
    """A long poll on one node answers as soon as another node commits (the
    nodes' commit signal goes through the database: LISTEN/NOTIFY), not at
    the end of its wait."""
    _, data = call(ports[1], "GET", "/v1/events?limit=1000", timeout=20)
    after = json.loads(data)["next"]
    answer = {}

    def poll():
        t0 = time.monotonic()
        answer["status"], answer["body"] = call(
            ports[1], "GET", "/v1/events?after=%s&wait_ms=20000" % after, timeout=40)
        answer["s"] = time.monotonic() - t0
    waiter = threading.Thread(target=poll)
    waiter.start()
    time.sleep(1.0)  # the poll waits by now
    post(ports[0], "/v1/containers", {"containers": [{"id": "late", "region": "weur",
                                                      "pool": "other"}]})
    waiter.join()
    got = json.loads(answer["body"]).get("events", []) if answer["status"] == 200 else []
    if [e["container_id"] for e in got] != ["late"] or answer["s"] > 10:
        fail("a long poll on node 1 after a registration on node 0: %s %r after %.1f s"
             % (answer["status"], got, answer["s"]))
    print("ok a long poll on one node answered %.1f s after its wait began, at another "
          "node's commit" % answer["s"])


def run(binary, engine, tmp):
    procs, pg = [], None
    args = ["--dead-after-ms", str(DEAD_AFTER_MS)]
    try:
        if engine == "sqlite":
            where = os.path.join(tmp, "fleet.db")
            db, nodes = where, 1
        else:
            pg = PgServer(tmp, "pg", fsync=False)
            pg.init_primary(sync_standby=False)
            psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
            where = pg.port
            db, nodes = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME), 3
        ports = [free_port() for _ in range(nodes)]
        for i, port in enumerate(ports):
            log = open(os.path.join(tmp, "node%d.log" % i), "wb")
            procs.append((serve(binary, db, port, args, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, preexec_fn=die_with_parent), log))
            if not wait_answers(port, "/readyz", procs[-1][0], 60):
                fail("node %d did not get ready:\n%s"
                     % (i, open(os.path.join(tmp, "node%d.log" % i)).read()))
        fleet = {"containers": [{"id": c, "region": "weur", "pool": "chrome",
                                 "slots": 1 + n % 2} for n, c in enumerate(IDS)]}
        if post(ports[0], "/v1/containers", fleet)[0] != 200:
            fail("register")
        if nodes > 1:
            woken_by_another_node(ports)

        def last_seq():
            rows = rows_of(engine, where)[0]
            return rows[-1][0] if rows else 0
        rec, read, (events, history) = storm(ports, last_seq, lambda: rows_of(engine, where))
        check(rec, read, events, history)
    finally:
        for proc, log in procs:
            stop(proc, timeout=30, kill_late=True)
            log.close()
        if pg is not None:
            pg.stop_immediate()


def main():
    a = bin_args(("--engine", dict(choices=["sqlite", "postgres"], required=True)))
    with tempfile.TemporaryDirectory() as tmp:
        run(a.bin, a.engine, tmp)


if __name__ == "__main__":
    main()
