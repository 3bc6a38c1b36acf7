#!/usr/bin/env python3
"""Deafness is not death: time the server could not hear never ends the
sessions of containers that kept reporting (docs/design.md).

One `edgealloc serve` with --dead-after-ms 3000 and a fleet whose every
container reports `ready` every 300 ms, each report on a connection of its
own (an agent whose request hangs sends the next one anyway), some of them
held by sessions with long leases. Then the fault:

  --fault pause   (SQLite) the server is stopped with SIGSTOP for 5 s, as a
                  paused VM or a long stall would, and resumed;
  --fault outage  (PostgreSQL) the database is stopped for 6 s and started
                  again; the node refuses heartbeats meanwhile (503).

After the fault the fleet goes on reporting for 6 s (twice dead-after):
every session must still be live, no container dead, and the node must
have counted the deafness (edgealloc_deaf_spans_total). Then the other
side: two containers (one held) stop reporting while the rest go on; both
must be dead, and the held one's session ended container_dead, within
dead-after plus one sweep and a margin for a loaded machine.

    deafness_test.py --bin build/edgealloc --fault pause|outage [--runs N]

Prints one line a run and exits 1 on the first failed run.
"""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from pg_server import DBNAME, PG_USER, PgServer, psql  # noqa: E402

DEAD_AFTER_MS = 3000
REPORT_EVERY_S = 0.3
FLEET = 8
HELD = 4
LEASE_MS = 600000
# Dead-after, one reaper sweep (dead-after / 4 at most 1 s), and room for a
# loaded 2-core machine: the bound a really silent container must meet.
DEATH_BOUND_S = DEAD_AFTER_MS / 1000 + 1.0 + 2.0


def call(port, method, path, body=None, timeout=10):
    """(status, parsed JSON or None); (None, None) when nothing answered."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            data = json.dumps(body) if body is not None else None
            headers = {"Content-Type": "application/json"} if data is not None else {}
            conn.request(method, path, body=data, headers=headers)
            r = conn.getresponse()
            raw = r.read()
            try:
                return r.status, json.loads(raw) if raw else None
            except ValueError:
                return r.status, raw.decode(errors="replace")
        finally:
            conn.close()
    except (OSError, http.client.HTTPException):
        return None, None


def metric(port, name, labels):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/metrics")
    text = conn.getresponse().read().decode()
    conn.close()
    m = re.search(r"^%s\{%s\} (\S+)$" % (re.escape(name), re.escape(labels)), text, re.M)
    return float(m.group(1)) if m else None


def container_status(port, cid):
    status, c = call(port, "GET", "/v1/containers/" + cid)
    return c.get("status") if status == 200 and isinstance(c, dict) else None


class Reporter(threading.Thread):
    """Every REPORT_EVERY_S, one heartbeat request for the ids still
    reporting, each on a thread of its own, so that a request the server
    does not answer (paused) never delays the next."""

    def __init__(self, port, ids):
        super().__init__(daemon=True)
        self.port = port
        self.ids = list(ids)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.answers = {}

    def silence(self, cid):
        with self.lock:
            self.ids.remove(cid)

    def send(self, ids):
        status, _ = call(self.port, "POST", "/v1/heartbeats",
                         {"heartbeats": [{"container_id": c, "state": "ready"} for c in ids]})
        with self.lock:
            self.answers[status] = self.answers.get(status, 0) + 1

    def run(self):
        while not self.stop.wait(REPORT_EVERY_S):
            with self.lock:
                ids = list(self.ids)
            threading.Thread(target=self.send, args=(ids,), daemon=True).start()


def wait_for(what, fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def one_run(args, tmp, run):
    pg = None
    logpath = os.path.join(tmp, "server%d.log" % run)
    if args.fault == "outage":
        pg = PgServer(tmp, "pg%d" % run, fsync=False)
        pg.init_primary(sync_standby=False)
        psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
        db = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME)
    else:
        db = os.path.join(tmp, "run%d.db" % run)
    port = free_port()
    logf = open(logpath, "wb")
    proc = edgealloc_server.serve(args.bin, db, port,
                                  # Deafness alone: no mass silence could hold the
                                  # sessions (more than 100% is never silent).
                                  ["--dead-after-ms", str(DEAD_AFTER_MS), "--batch-wait-ms", "5",
                                   "--mass-silence-percent", "100"],
                                  stdout=logf, stderr=logf, stdin=subprocess.DEVNULL,
                                  preexec_fn=die_with_parent)
    reporter = None
    try:
        if not edgealloc_server.wait_answers(port, "/readyz", proc, 60):
            raise AssertionError("the server did not get ready")
        ids = ["c-%d" % i for i in range(FLEET)]
        status, body = call(port, "POST", "/v1/containers", {"containers": [
            {"id": cid, "region": "r0", "pool": "p", "latency_ms": 1} for cid in ids]})
        assert status in (200, 201), (status, body)
        reporter = Reporter(port, ids)
        reporter.start()
        sessions = {}
        for _ in range(HELD):
            status, s = call(port, "POST", "/v1/sessions",
                             {"region": "r0", "pool": "p", "lease_ms": LEASE_MS})
            assert status == 201, (status, s)
            sessions[s["session_id"]] = s["container_id"]
        time.sleep(1.0)

        if args.fault == "pause":
            proc.send_signal(signal.SIGSTOP)
            time.sleep(5.0)
            proc.send_signal(signal.SIGCONT)
        else:
            pg.stop_immediate()
            time.sleep(6.0)
            pg.start()
        # Twice dead-after of the fleet reporting, after the fault.
        wait_for("the node to be ready again",
                 lambda: call(port, "GET", "/readyz")[0] == 200, 60)
        time.sleep(2 * DEAD_AFTER_MS / 1000)
        for sid, cid in sessions.items():
            status, s = call(port, "GET", "/v1/sessions/" + sid)
            assert status == 200, "session %s on %s after the %s: %s %s" % (
                sid, cid, args.fault, status, s)
        for cid in ids:
            status, c = call(port, "GET", "/v1/containers/" + cid)
            assert status == 200 and c["status"] != "dead", (cid, status, c)
        cause = "pause" if args.fault == "pause" else "write_failing"
        spans = metric(port, "edgealloc_deaf_spans_total", 'cause="%s"' % cause)
        assert spans is not None and spans >= 1, "deafness not counted: %s" % spans

        # The other side: a container that really stops is still dead in time.
        held_sid, held_cid = next(iter(sessions.items()))
        free_cid = next(c for c in ids if c not in sessions.values())
        t0 = time.monotonic()
        reporter.silence(held_cid)
        reporter.silence(free_cid)
        wait_for("the silent containers to be dead",
                 lambda: all(container_status(port, c) == "dead" for c in (held_cid, free_cid)),
                 DEATH_BOUND_S + 5)
        took = time.monotonic() - t0
        assert took <= DEATH_BOUND_S, "dead after %.1f s, bound %.1f s" % (took, DEATH_BOUND_S)
        status, s = call(port, "GET", "/v1/sessions/" + held_sid)
        assert status == 410 and s["error"].get("end_reason") == "container_dead", (status, s)
        for sid, cid in sessions.items():
            if sid != held_sid:
                assert call(port, "GET", "/v1/sessions/" + sid)[0] == 200, sid
        print("deafness %s run %d: ok (%d sessions kept through the fault; silent ones dead "
              "after %.1f s; heartbeat answers %s)"
              % (args.fault, run, len(sessions), took, dict(sorted(reporter.answers.items(),
                                                                 key=lambda kv: str(kv[0])))),
              flush=True)
    except AssertionError:
        logf.flush()
        with open(logpath, errors="replace") as f:
            sys.stderr.write("--- server log (last 40 lines)\n" + "".join(f.readlines()[-40:]))
        raise
    finally:
        if reporter is not None:
            reporter.stop.set()
        edgealloc_server.kill(proc)
        logf.close()
        if pg is not None:
            pg.stop_immediate()


def main():
    args = edgealloc_server.bin_args(("--fault", dict(choices=["pause", "outage"], required=True)),
                                     ("--runs", dict(type=int, default=1)))
    with tempfile.TemporaryDirectory(prefix="edgealloc-deafness-") as tmp:
        os.chmod(tmp, 0o755)
        for run in range(args.runs):
            try:
                one_run(args, tmp, run)
            except AssertionError as e:
                print("deafness %s run %d: FAILED: %s" % (args.fault, run, e), flush=True)
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
