"""What the clock-step tests share (tests/fault/clock_step_test.py, one
SQLite node; tests/fault/db_clock_step_test.py, PostgreSQL's clock): the
timings, a client, a container that reports, the watch of a lease and of a
death by the test's own monotonic clock, and the revival after a step back.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import sys
import tempfile
import threading
import time

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


def metric_sum(ports, pattern):
    """The sum over the nodes of the samples matching pattern (bytes regex
    with one group), and each node's list."""
    each = []
    for port in ports:
        _, metrics = request(port, "GET", "/metrics")
        each.append([int(float(n)) for n in re.findall(pattern, metrics, re.M)])
    return sum(sum(e) for e in each), each


def step_scenario(ports, step):
    """The steps under a lease and heartbeats, the same on either engine:
    ports = (a, b), the node that registers, claims and takes held's and
    quits' reports, and the node watched and taking steady's (the same one
    on SQLite); step(s) steps the clock to s seconds off. Returns the
    violations, the Watch, and the count of steps wanted."""
    a, b = ports
    status, body = request(a, "POST", "/v1/containers", {"containers": [
        {"id": "held", "region": "r", "pool": "leased"},
        {"id": "steady", "region": "r", "pool": "other"},
        {"id": "quits", "region": "r", "pool": "other"}]})
    if status != 200:
        return ["registration answered %d %s" % (status, body)], None, 0
    reporters = [Reporter(a, "held"), Reporter(b, "steady"), Reporter(a, "quits")]
    for r in reporters:
        r.start()
    try:
        time.sleep(1)
        sent = time.monotonic()
        status, session = request(a, "POST", "/v1/sessions",
                                  {"region": "r", "pool": "leased", "lease_ms": LEASE_MS})
        if status != 201:
            return ["the claim answered %d %s" % (status, session)], None, 0
        watch = Watch(b, a, session["session_id"], sent, reporters, reporters[2])
        watcher = threading.Thread(target=watch.run)
        watcher.start()
        time.sleep(1.5)
        step(STEP_S)  # forward: the lease and the silences must keep their length
        time.sleep(1.5)
        reporters[2].halt.set()
        time.sleep(1.0)
        step(0)  # back: the silent container must still die in time
        watcher.join()
    finally:
        for r in reporters:
            r.halt.set()
    violations = watch.violations
    if watch.dead_at is not None:
        # A third step, back again, after quits' death: its death time must
        # move with the rest, or its reports stay refused for the step.
        violations += revive(a, lambda: step(-STEP_S), Reporter(a, "quits"))
    for r in reporters:
        if r.errors:
            violations.append("%s: %d heartbeats failed, the first %s" %
                              (r.cid, len(r.errors), r.errors[0]))
    want = 3 if watch.dead_at is not None else 2
    steps, each = metric_sum(set(ports), rb"^edgealloc_clock_steps_total (\d+)$")
    if steps != want:
        violations.append("edgealloc_clock_steps_total summed over the nodes is %d (%s), not %d"
                          % (steps, each, want))
    return violations, watch, want


def clock_step_main(name, description, faketime_lib, run, show_logs):
    """A clock-step test's main: parses --bin and calls run(binary, workdir),
    which returns the violations it found. On any it prints them and
    show_logs(workdir), keeps the folder and returns 1; else it removes the
    folder and returns 0. Without libfaketime (faketime_lib) it returns 1."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    if not os.path.exists(faketime_lib):
        print("%s: no %s (scripts/setup.sh installs faketime)" % (name, faketime_lib))
        return 1
    workdir = tempfile.mkdtemp(prefix=name + "-")
    violations = run(os.path.abspath(args.bin), workdir)
    if violations:
        for v in violations:
            print("VIOLATION: " + v)
        show_logs(workdir)
        print("%s: %d violations (files kept in %s)" % (name, len(violations), workdir))
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("%s: 0 violations" % name)
    return 0
