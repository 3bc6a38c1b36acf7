#!/usr/bin/env python3
"""Steps of the PostgreSQL database host's wall clock while two nodes run.

PostgreSQL runs under libfaketime with a timestamp file (its monotonic
clock left alone); the test rewrites the file while it runs, so the clock
every lease, silence and death is judged on steps +60 s, then back by 60 s
(an NTP step, `date -s`, a VM resumed with a stale clock). Two `edgealloc
serve` nodes share the database; a client holds a 10 s lease on one
container, claimed through node A and watched through node B, and three
containers report every 300 ms, through either node; one stops reporting
between the two steps. Checked against the test's own monotonic clock, each
answer timed when it arrived:

- the lease lives (GET answers 200) until 10 s after the claim was sent,
  and ends `expired` within a few seconds after that;
- no container that keeps reporting is ever `dead`;
- the container that stopped is `dead` no sooner than --dead-after-ms after
  its last accepted heartbeat was sent, and no later than that plus the
  reaper's interval and a margin for load; the reapers marked one container
  silent in all (quits), by /metrics;
- once it is dead, the clock steps back 60 s again and the container
  reports again: it is alive within a beat and a margin (its death time
  moved with the step, or its reports would be refused for the step);
- each step was shifted for once in the fleet: edgealloc_clock_steps_total
  summed over the two nodes is 3, and so is the database's own count
  (db_clock_shifts); each node's log says the database's clock stepped.

    db_clock_step_test.py --bin build/edgealloc

Exits 1 naming each violation. Servers are stopped, also on failure.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from pg_server import DBNAME, FAKETIME_LIB, PG_USER, PgServer, psql  # noqa: E402

DEAD_AFTER_MS = 3000
LEASE_MS = 10000
BEAT_S = 0.3
STEP_S = 60
# Past --dead-after-ms: one reaper interval (min(1000, dead_after / 4)) and
# room for a loaded machine (ctest -j2 on 2 cores).
DEATH_MARGIN_S = 0.75 + 2.0
# After the lease's end: the lease reaper's interval (1 s) and the same room.
EXPIRY_MARGIN_S = 1.0 + 2.0
# A dead container reporting again is alive after its next report is written
# (a beat and a batch) and room for load.
REVIVE_BOUND_S = BEAT_S + 0.2 + 2.0


def request(port, method, path, body=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        data = json.dumps(body) if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        raw = r.read()
        return r.status, (json.loads(raw) if raw[:1] in (b"{", b"[") else raw)
    finally:
        conn.close()


class Reporter(threading.Thread):
    """Heartbeats for one container through one node every BEAT_S until
    halted; remembers when the last accepted (202) one was sent."""

    def __init__(self, port, cid):
        super().__init__(daemon=True)
        self.port, self.cid = port, cid
        self.halt = threading.Event()
        self.last_accepted = None
        self.errors = []

    def run(self):
        while not self.halt.is_set():
            sent = time.monotonic()
            try:
                status, _ = request(self.port, "POST", "/v1/heartbeats",
                                    {"heartbeats": [{"container_id": self.cid, "state": "ready"}]})
                if status == 202:
                    self.last_accepted = sent
                else:
                    self.errors.append("heartbeat %s: %d" % (self.cid, status))
            except (OSError, http.client.HTTPException) as e:
                self.errors.append("heartbeat %s: %s" % (self.cid, e))
            self.halt.wait(BEAT_S)


class Watch:
    """Polls the session (through one node) and every container (through
    the other) until the lease has ended and the stopped container is dead
    (or the time is up)."""

    def __init__(self, session_port, container_port, session_id, sent, reporters, stopped):
        self.session_port, self.container_port = session_port, container_port
        self.session_id = session_id
        self.lease_end = sent + LEASE_MS / 1000.0
        self.sent, self.reporters, self.stopped = sent, reporters, stopped
        self.ended_at = self.dead_at = None
        self.violations = []

    def poll_session(self):
        status, body = request(self.session_port, "GET", "/v1/sessions/" + self.session_id)
        now = time.monotonic()
        if status == 200 or self.ended_at is not None:
            return
        self.ended_at = now
        reason = body.get("error", {}).get("end_reason") if isinstance(body, dict) else None
        if now < self.lease_end:
            self.violations.append("the lease ended %.2f s before its end by the client's clock "
                                   "(%d, %s)" % (self.lease_end - now, status, reason))
        elif reason != "expired":
            self.violations.append("the lease ended %s, not expired" % reason)

    def poll_containers(self):
        for r in self.reporters:
            status, body = request(self.container_port, "GET", "/v1/containers/" + r.cid)
            now = time.monotonic()
            if status != 200 or body["status"] != "dead":
                continue
            if r is not self.stopped or not r.halt.is_set():
                self.violations.append("%s is dead while it reports (%.2f s after the claim)" %
                                       (r.cid, now - self.sent))
            elif self.dead_at is None:
                self.dead_at = now
                if now < r.last_accepted + DEAD_AFTER_MS / 1000.0:
                    self.violations.append("%s was dead %.2f s after its last heartbeat, before "
                                           "--dead-after-ms" % (r.cid, now - r.last_accepted))

    def run(self):
        deadline = self.lease_end + EXPIRY_MARGIN_S + 5
        while time.monotonic() < deadline and (self.ended_at is None or self.dead_at is None):
            self.poll_session()
            self.poll_containers()
            time.sleep(0.1)
        self.judge()

    def judge(self):
        if self.ended_at is None:
            self.violations.append("the lease did not end")
        elif self.ended_at > self.lease_end + EXPIRY_MARGIN_S:
            self.violations.append("the lease ended %.2f s after its end" %
                                   (self.ended_at - self.lease_end))
        last = self.stopped.last_accepted
        bound = DEAD_AFTER_MS / 1000.0 + DEATH_MARGIN_S
        if self.dead_at is None:
            self.violations.append("%s, silent since %.2f s after the claim, was never dead" %
                                   (self.stopped.cid, last - self.sent))
        elif self.dead_at - last > bound:
            self.violations.append("%s was dead %.2f s after its last heartbeat (bound %.2f s)" %
                                   (self.stopped.cid, self.dead_at - last, bound))


def metric_sum(ports, pattern):
    """The sum over the nodes of the samples matching pattern (bytes regex
    with one group), and each node's list."""
    each = []
    for port in ports:
        _, metrics = request(port, "GET", "/metrics")
        each.append([int(float(n)) for n in re.findall(pattern, metrics, re.M)])
    return sum(sum(e) for e in each), each


def revive(port, step_back, reporter):
    """After a death, a step back and the dead container reporting again:
    its reports are accepted after the death, on the stepped clock, so it
    must be alive again within REVIVE_BOUND_S. Returns the violations."""
    step_back()
    reporter.start()
    start = time.monotonic()
    try:
        while time.monotonic() < start + REVIVE_BOUND_S + 5:
            status, body = request(port, "GET", "/v1/containers/" + reporter.cid)
            if status == 200 and body["status"] != "dead":
                took = time.monotonic() - start
                print("%s alive again %.2f s after the step back" % (reporter.cid, took))
                if took > REVIVE_BOUND_S:
                    return ["%s was alive again only %.2f s after it reported again (bound %.1f s)"
                            % (reporter.cid, took, REVIVE_BOUND_S)]
                return []
            time.sleep(0.1)
    finally:
        reporter.halt.set()
    return ["%s, reporting again after a step back, stayed dead" % reporter.cid]


def scenario(a, b, pg):
    """The steps under a lease and heartbeats; returns the violations."""
    status, body = request(a, "POST", "/v1/containers", {"containers": [
        {"id": "held", "region": "r", "pool": "leased"},
        {"id": "steady", "region": "r", "pool": "other"},
        {"id": "quits", "region": "r", "pool": "other"}]})
    if status != 200:
        return ["registration answered %d %s" % (status, body)]
    reporters = [Reporter(a, "held"), Reporter(b, "steady"), Reporter(a, "quits")]
    for r in reporters:
        r.start()
    try:
        time.sleep(1)
        sent = time.monotonic()
        status, session = request(a, "POST", "/v1/sessions",
                                  {"region": "r", "pool": "leased", "lease_ms": LEASE_MS})
        if status != 201:
            return ["the claim answered %d %s" % (status, session)]
        watch = Watch(b, a, session["session_id"], sent, reporters, reporters[2])
        watcher = threading.Thread(target=watch.run)
        watcher.start()
        time.sleep(1.5)
        pg.step_clock(STEP_S)  # forward: the lease and the silences must keep their length
        time.sleep(1.5)
        reporters[2].halt.set()
        time.sleep(1.0)
        pg.step_clock(0)  # back: the silent container must still die in time
        watcher.join()
    finally:
        for r in reporters:
            r.halt.set()
    violations = watch.violations
    if watch.dead_at is not None:
        # A third step, back again, after quits' death: its death time must
        # move with the rest, or its reports stay refused for the step.
        violations += revive(a, lambda: pg.step_clock(-STEP_S), Reporter(a, "quits"))
    for r in reporters:
        if r.errors:
            violations.append("%s: %d heartbeats failed, the first %s" %
                              (r.cid, len(r.errors), r.errors[0]))
    steps, each = metric_sum((a, b), rb"^edgealloc_clock_steps_total (\d+)$")
    want = 3 if watch.dead_at is not None else 2
    if steps != want:
        violations.append("edgealloc_clock_steps_total summed over the nodes is %d (%s), not %d"
                          % (steps, each, want))
    shifts = psql(pg.port, "SELECT shifts, shifted_ms FROM db_clock_shifts").strip()
    count, shifted = (int(x) for x in shifts.split("|"))
    print("db_clock_shifts: %d shifts, %+d ms in all; nodes' counts %s" % (count, shifted, each))
    want_ms = 0 if want == 2 else -STEP_S * 1000
    if count != want or abs(shifted - want_ms) > 500:
        violations.append("the database recorded %d shifts of %+d ms in all, not %d of about %+d"
                          % (count, shifted, want, want_ms))
    # The reapers' own count: a reporting container killed and revived
    # between two polls is still counted here.
    dead, each = metric_sum(
        (a, b), rb'^edgealloc_containers_marked_dead_total\{reason="silent"\} (\d+)$')
    if dead != 1:
        violations.append("the reapers marked %d containers silent (%s), not 1 (quits)"
                          % (dead, each))
    return violations


def start_node(binary, db, workdir, name):
    port = free_port()
    log = open(os.path.join(workdir, name + ".log"), "wb")
    proc = edgealloc_server.serve(binary, db, port,
                                  # Steps alone: no mass silence could hold the sessions.
                                  ["--dead-after-ms", str(DEAD_AFTER_MS), "--batch-wait-ms", "5",
                                   "--mass-silence-percent", "100"],
                                  stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                  preexec_fn=die_with_parent)
    log.close()
    return port, proc


def run(binary, workdir):
    pg = PgServer(workdir, "pg", fsync=False, faketime=True)
    nodes = []
    try:
        pg.init_primary(sync_standby=False)
        psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
        db = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME)
        for name in ("a", "b"):
            nodes.append(start_node(binary, db, workdir, name))
            if not edgealloc_server.wait_answers(nodes[-1][0], "/readyz", nodes[-1][1], 60):
                return ["node %s did not start" % name]
        violations = scenario(nodes[0][0], nodes[1][0], pg)
    finally:
        for _, proc in nodes:
            edgealloc_server.stop(proc)
        pg.stop_immediate()
    for name in ("a", "b")[:len(nodes)]:
        with open(os.path.join(workdir, name + ".log"), "rb") as f:
            said = [line for line in f.read().decode(errors="replace").splitlines()
                    if "database's clock stepped" in line]
        for line in said:
            print(name + ": " + line)
        if not any("against this node's monotonic clock" in line for line in said):
            violations.append("node %s's log does not say the database's clock stepped" % name)
    return violations


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    if not os.path.exists(FAKETIME_LIB):
        print("db-clock-step: no %s (scripts/setup.sh installs faketime)" % FAKETIME_LIB)
        return 1
    workdir = tempfile.mkdtemp(prefix="db-clock-step-")
    violations = run(os.path.abspath(args.bin), workdir)
    if violations:
        for v in violations:
            print("VIOLATION: " + v)
        for name in ("a", "b"):
            path = os.path.join(workdir, name + ".log")
            if os.path.exists(path):
                with open(path, errors="replace") as f:
                    sys.stdout.write("--- node %s log (last 30 lines)\n" % name +
                                     "".join(f.readlines()[-30:]))
        print("kept for a look: " + workdir)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("db-clock-step: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
