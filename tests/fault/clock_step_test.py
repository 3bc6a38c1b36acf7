#!/usr/bin/env python3
"""Steps of a SQLite server's wall clock while it runs.

`edgealloc serve` runs under libfaketime with a timestamp file, its
monotonic clock left alone; the test rewrites the file while the server
runs, so the server's wall clock steps +60 s, then back by 60 s (an NTP
step, `date -s`, a VM resumed with a stale clock). Meanwhile a client holds
a 10 s lease on one container, and three containers report every 300 ms;
one of them stops reporting between the two steps. Checked against the
test's own monotonic clock, each answer timed when it arrived:

- the lease lives (GET answers 200) until 10 s after the claim was sent,
  and ends `expired` within a few seconds after that;
- no container that keeps reporting is ever `dead`;
- the container that stopped is `dead` no sooner than --dead-after-ms after
  its last accepted heartbeat was sent, and no later than that plus the
  reaper's interval and a margin for load;
- the reaper marked one container silent in all (quits), by /metrics;
- once it is dead, the clock steps back 60 s again and the container
  reports again: it is alive within a beat and a margin (its death time
  moved with the step, or its reports would be refused for the step);
- /metrics counts the three steps (edgealloc_clock_steps_total 3) and the
  log says at least twice that the clock stepped.

    clock_step_test.py --bin build/edgealloc

Exits 1 naming each violation. The server is stopped, also on failure.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402

FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
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


class ClockFile:
    """The server's wall clock offset, as libfaketime reads it at every call:
    replaced whole (rename), so that no read sees a half-written file."""

    def __init__(self, path):
        self.path = path
        self.set(0)

    def set(self, offset_s):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.write("%+d\n" % offset_s)
        os.rename(tmp, self.path)


class Reporter(threading.Thread):
    """Heartbeats for one container every BEAT_S until halted; remembers
    when the last accepted (202) one was sent, by the test's clock."""

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
    """Polls the session and every container until the lease has ended and
    the stopped container is dead (or the time is up)."""

    def __init__(self, port, session_id, sent, reporters, stopped):
        self.port, self.session_id = port, session_id
        self.lease_end = sent + LEASE_MS / 1000.0
        self.sent, self.reporters, self.stopped = sent, reporters, stopped
        self.ended_at = self.dead_at = None
        self.violations = []

    def poll_session(self):
        status, body = request(self.port, "GET", "/v1/sessions/" + self.session_id)
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
            status, body = request(self.port, "GET", "/v1/containers/" + r.cid)
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


def scenario(port, clock):
    """The steps under a lease and heartbeats; returns the violations."""
    status, body = request(port, "POST", "/v1/containers", {"containers": [
        {"id": "held", "region": "r", "pool": "leased"},
        {"id": "steady", "region": "r", "pool": "other"},
        {"id": "quits", "region": "r", "pool": "other"}]})
    if status != 200:
        return ["registration answered %d %s" % (status, body)]
    reporters = [Reporter(port, cid) for cid in ("held", "steady", "quits")]
    for r in reporters:
        r.start()
    try:
        time.sleep(1)
        sent = time.monotonic()
        status, session = request(port, "POST", "/v1/sessions",
                                  {"region": "r", "pool": "leased", "lease_ms": LEASE_MS})
        if status != 201:
            return ["the claim answered %d %s" % (status, session)]
        watch = Watch(port, session["session_id"], sent, reporters, reporters[2])
        watcher = threading.Thread(target=watch.run)
        watcher.start()
        time.sleep(1.5)
        clock.set(STEP_S)  # forward: the lease and the silences must keep their length
        time.sleep(1.5)
        reporters[2].halt.set()
        time.sleep(1.0)
        clock.set(0)  # back: the silent container must still die in time
        watcher.join()
    finally:
        for r in reporters:
            r.halt.set()
    violations = watch.violations
    if watch.dead_at is not None:
        # A third step, back again, after quits' death: its death time must
        # move with the rest, or its reports stay refused for the step.
        violations += revive(port, lambda: clock.set(-STEP_S), Reporter(port, "quits"))
    for r in reporters:
        if r.errors:
            violations.append("%s: %d heartbeats failed, the first %s" %
                              (r.cid, len(r.errors), r.errors[0]))
    status, metrics = request(port, "GET", "/metrics")
    m = re.search(rb"^edgealloc_clock_steps_total (\d+)$", metrics, re.M)
    want = 3 if watch.dead_at is not None else 2
    if not m or int(m.group(1)) != want:
        violations.append("edgealloc_clock_steps_total is %s, not %d" %
                          (m.group(1).decode() if m else "missing", want))
    # The reaper's own count: a reporting container killed and revived
    # between two polls is still counted here.
    dead = re.findall(rb'^edgealloc_containers_marked_dead_total\{reason="silent"\} (\d+)$',
                      metrics, re.M)
    if [int(n) for n in dead] != [1]:
        violations.append("the reaper marked %s containers silent, not 1 (quits)" %
                          b",".join(dead).decode())
    return violations


def run(binary, workdir):
    clock = ClockFile(os.path.join(workdir, "clock"))
    env = dict(os.environ, LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=clock.path,
               FAKETIME_NO_CACHE="1", FAKETIME_DONT_FAKE_MONOTONIC="1")
    port = free_port()
    log_path = os.path.join(workdir, "server.log")
    with open(log_path, "wb") as log:
        proc = edgealloc_server.serve(binary, os.path.join(workdir, "db"), port,
                                      ["--dead-after-ms", str(DEAD_AFTER_MS)], env=env,
                                      stdout=log, stderr=log, preexec_fn=die_with_parent)
        try:
            if not edgealloc_server.wait_answers(port, "/readyz", proc, timeout=30):
                return ["the server did not start"], log_path
            violations = scenario(port, clock)
        finally:
            edgealloc_server.stop(proc)
    with open(log_path, "rb") as f:
        said = [line for line in f.read().decode(errors="replace").splitlines()
                if "wall clock stepped" in line]
    for line in said:
        print(line)
    if len(said) < 2:
        violations.append("the log does not say twice that the wall clock stepped")
    return violations, log_path


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    if not os.path.exists(FAKETIME_LIB):
        print("clock-step: no %s (scripts/setup.sh installs faketime)" % FAKETIME_LIB)
        return 1
    workdir = tempfile.mkdtemp(prefix="clock-step-")
    violations, log_path = run(os.path.abspath(args.bin), workdir)
    if violations:
        for v in violations:
            print("VIOLATION: " + v)
        with open(log_path, "rb") as f:
            sys.stdout.write(f.read().decode(errors="replace")[-3000:])
        print("clock-step: %d violations (files in %s)" % (len(violations), workdir))
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    print("clock-step: 0 violations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
