"""The nemesis' event reader and its check: a reader follows GET /v1/events
(an admin key: every event) from node to node through every fault, resuming
after the last seq it read; at the end it reads up to the database's last
event, and what it read is held against the database's event table:

- seq strictly grows in what it read (no event twice, none out of order);
- every event it read is the database's event of that seq, field for field
  (an event read and then gone would be one read from a change that never
  committed for good);
- no event of the database at or before the last seq it read was missed (a
  reader that resumes after the last seq it saw misses none: the commit
  order the log promises, through kills, outages and a failover)."""

import json
import random
import threading
import time

from nemesis_common import ADMIN_KEY, request
from pg_server import psql

FIELDS = ("seq", "type", "container_id", "session_id", "token", "end_reason")
EVENTS_SQL = ("SELECT coalesce(json_agg(json_build_object(%s) ORDER BY seq), '[]') FROM events"
              % ", ".join("'%s', %s" % (f, f) for f in FIELDS))


class EventReader:
    def __init__(self, hist, nodes, seed):
        self.hist, self.nodes = hist, nodes
        self.rng = random.Random(seed * 7919)
        self.after = 0
        self.read = []         # the events read, in order, as FIELDS tuples
        self.pages = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.follow, daemon=True)

    def page(self, wait_ms):
        """One page after the cursor from a node at random; its events kept.
        The op is recorded with its count, not its events (the history would
        hold every event twice)."""
        op = request(self.hist, self.nodes, self.rng, "events", "events", "GET",
                     "/v1/events?after=%d&limit=%d&wait_ms=%d"
                     % (self.after, self.rng.choice([1, 7, 100]), wait_ms), ADMIN_KEY)
        if op["status"] != 200 or not isinstance(op["resp"], dict):
            return False
        events = op["resp"].get("events", [])
        op["resp"] = {"events": len(events), "next": op["resp"].get("next")}
        for e in events:
            self.read.append(tuple(e.get(f) for f in FIELDS))
        if events:
            self.after = events[-1]["seq"]
        self.pages += 1
        return True

    def follow(self):
        while not self.stop.is_set():
            if not self.page(1000):
                time.sleep(0.2)

    def start(self):
        self.thread.start()

    def finish(self, db_port, deadline_s=120):
        """Stops following, then reads up to the database's last event; the
        database's events (a list of FIELDS tuples), or None if it could not
        be read or caught up with in deadline_s."""
        self.stop.set()
        self.thread.join(30)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            try:
                db = [tuple(e[f] for f in FIELDS) for e in json.loads(psql(db_port, EVENTS_SQL,
                                                                            timeout=60))]
            except Exception:  # noqa: BLE001 - the database may still be coming back
                time.sleep(1)
                continue
            last = db[-1][0] if db else 0
            while self.after < last and time.monotonic() < end:
                if not self.page(0):
                    time.sleep(0.2)
            if self.after >= last:
                return db
        return None


def check(read, db):
    """Violations (kind, detail) of what a resuming reader read against the
    database's log; db None is one (the log could not be read)."""
    if db is None:
        return [("events", "the event log could not be read to its end")]
    out = []
    seqs = [e[0] for e in read]
    for a, b in zip(seqs, seqs[1:]):
        if b <= a:
            out.append(("event read twice or out of order", "seq %d after %d" % (b, a)))
            break
    by_seq = {e[0]: e for e in db}
    for e in read:
        if by_seq.get(e[0]) != e:
            out.append(("event read that the database does not hold",
                        "read %r, database %r" % (e, by_seq.get(e[0]))))
    last = seqs[-1] if seqs else 0
    seen = set(seqs)
    missed = [e for e in db if e[0] <= last and e[0] not in seen]
    if missed:
        out.append(("event missed by a resuming reader",
                    "%d of %d, the first %r" % (len(missed), len(db), missed[0])))
    return out


def self_test_cases():
    """(name, read, database, the violation kind wanted or None): made-up
    logs, one per kind the check finds, and a clean one."""
    db = [(s, "session.claimed", "c-1", "s%d" % s, s, None) for s in range(1, 6)]
    return [
        ("events: all read", db, db, None),
        ("events: read up to 3, resumed", db[:3], db, None),
        ("events: one read twice", db[:3] + db[2:], db, "event read twice or out of order"),
        ("events: one skipped at a resume", db[:2] + db[3:], db,
         "event missed by a resuming reader"),
        ("events: one read, then gone", db + [(6, "session.ended", "c-1", "s6", 6, "released")],
         db, "event read that the database does not hold"),
        ("events: the log unread", db, None, "events"),
    ]
