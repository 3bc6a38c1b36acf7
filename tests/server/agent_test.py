"""`edgealloc agent` against the real server (docs/agent.md), one case a run:

    python3 tests/server/agent_test.py --bin build/edgealloc --case alive

- alive:     a container with an agent stays available past --dead-after-ms,
             while one registered without an agent is dead by then; the
             agent registered it with its --slots and --attributes;
- unhealthy: a container whose --health-cmd fails is reported draining and a
             claim answers 503 no_capacity; it is claimable once it passes;
- restart:   the server stopped (SIGTERM) and started again on the same --db
             and port: the agent rides it out, the container is alive after;
- sigterm:   SIGTERM to the agent of a picked container, with the container
             key the docs give it: it reports draining, waits while the
             session holds, and exits 0 once it is released; an agent whose
             key is refused, or whose server is gone, exits at once instead
             of waiting out --drain-timeout-ms;
- drain:     an operator drain (POST /v1/containers/{id}/drain) reaches the
             agent through the heartbeat reply's `drain`, which runs --on-drain;
- ts:        the agent's heartbeats carry ts_ms: a report dated ahead of them
             outranks them until the agent's clock passes its date;
- unknown:   an agent whose --id has no container logs it once (the reply's
             `unknown`), and that it is known once it is registered;
- deaths:    (no agent) containers left silent are dead, and the server logs
             them by pool with their silence, counts them by reason and
             serves them by pool (GET /v1/capacity/deaths).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import (call, die_with_parent, free_port, kill, serve, stop,  # noqa: E402
                              wait_answers)

ADMIN = "adm-agent-test-5c1e"
CONTAINER = "ctr-agent-test-9d02"
DEAD_AFTER_MS = 1500
INTERVAL_MS = 300


def fail(msg, logs=()):
    for path in logs:
        print("---- %s\n%s" % (path, open(path).read()), file=sys.stderr)
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def request(port, method, path, body=None, key=ADMIN):
    status, data = call(port, method, path, body, key)
    return status, json.loads(data) if data else None


def status_of(port, cid):
    code, body = request(port, "GET", "/v1/containers/" + cid)
    return body["status"] if code == 200 else code


def wait_for(predicate, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


class Fleet:
    """A server with a keys file (an admin key, a container key for `w-*`),
    and the agents started against it; everything stopped at the end."""

    def __init__(self, binary, tmp):
        self.binary, self.tmp = binary, tmp
        self.keys = os.path.join(tmp, "keys")
        with open(self.keys, "w") as f:
            f.write("%s admin\n%s container w-*\n" % (ADMIN, CONTAINER))
        os.chmod(self.keys, 0o600)
        self.port = free_port()
        self.db = os.path.join(tmp, "pool.db")
        self.server_log = os.path.join(tmp, "server.log")
        self.server = None
        self.agents = []

    def start_server(self):
        log = open(self.server_log, "a")
        self.server = serve(self.binary, self.db, self.port,
                            # A fleet of a few containers, each case about one or
                            # two of them: no mass silence (more than 100% never is).
                            ["--keys", self.keys, "--dead-after-ms", str(DEAD_AFTER_MS),
                             "--mirror-refresh-ms", "100", "--mass-silence-percent", "100"],
                            stdout=log, stderr=log, preexec_fn=die_with_parent)
        if not wait_answers(self.port, "/readyz", self.server, timeout=10):
            fail("the server did not start", [self.server_log])

    def agent(self, cid, *args, key=ADMIN):
        log_path = os.path.join(self.tmp, "agent-%s.log" % cid)
        log = open(log_path, "w")
        env = dict(os.environ, EDGEALLOC_KEY=key)
        argv = [self.binary, "agent", "--server", "http://127.0.0.1:%d" % self.port, "--id", cid,
                "--interval-ms", str(INTERVAL_MS)] + list(args)
        proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env, preexec_fn=die_with_parent)
        self.agents.append(proc)
        return proc, log_path

    def logs(self):
        return [self.server_log] + [os.path.join(self.tmp, f) for f in sorted(os.listdir(self.tmp))
                                    if f.startswith("agent-")]

    def close(self):
        for proc in self.agents:  # a SIGTERM would wait for a picked one's release
            kill(proc)
        if self.server is not None:
            stop(self.server, timeout=30, kill_late=True)


def register(fleet, cid):
    body = json.dumps({"containers": [{"id": cid, "region": "weur", "pool": "chrome"}]})
    code, _ = request(fleet.port, "POST", "/v1/containers", body)
    if code != 200:
        fail("register %s: %d" % (cid, code), fleet.logs())


def claim(fleet):
    return request(fleet.port, "POST", "/v1/sessions", json.dumps({"region": "weur", "pool": "chrome"}))


def case_alive(fleet):
    fleet.agent("w-1", "--register", "--region", "weur", "--pool", "chrome", "--slots", "2",
                "--attributes", '{"gpu":"a100"}')
    register(fleet, "w-2")  # nobody reports for it
    time.sleep(3 * DEAD_AFTER_MS / 1000)
    if status_of(fleet.port, "w-2") != "dead":
        fail("w-2, without an agent, is %r, not dead" % status_of(fleet.port, "w-2"), fleet.logs())
    if status_of(fleet.port, "w-1") != "available":
        fail("w-1, with an agent, is %r past --dead-after-ms" % status_of(fleet.port, "w-1"),
             fleet.logs())
    code, session = claim(fleet)
    if code != 201 or session["container_id"] != "w-1":
        fail("claim: %d %r" % (code, session), fleet.logs())
    # Registered with its --slots and --attributes: a second session, by a
    # selector, on its other slot.
    _, shown = request(fleet.port, "GET", "/v1/containers/w-1")
    if shown.get("slots") != 2 or shown.get("attributes") != {"gpu": "a100"}:
        fail("w-1 registered as %r" % shown, fleet.logs())
    code, second = request(fleet.port, "POST", "/v1/sessions", json.dumps(
        {"region": "weur", "pool": "chrome", "selector": {"gpu": "a100"}}))
    if code != 201 or second["container_id"] != "w-1" or second["slot"] == session["slot"]:
        fail("second claim: %d %r" % (code, second), fleet.logs())


def case_unhealthy(fleet):
    sick = os.path.join(fleet.tmp, "sick")
    open(sick, "w").close()
    register(fleet, "w-1")
    _, log = fleet.agent("w-1", "--health-cmd", "test ! -e " + sick, key=CONTAINER)
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "draining", 5):
        fail("a failing health check: w-1 is %r, not draining" % status_of(fleet.port, "w-1"),
             fleet.logs())
    time.sleep(2 * DEAD_AFTER_MS / 1000)
    code, body = claim(fleet)
    if code != 503 or body["error"]["code"] != "no_capacity":
        fail("a claim of an unhealthy fleet: %d %r" % (code, body), fleet.logs())
    if status_of(fleet.port, "w-1") != "draining":
        fail("w-1 is %r, not kept draining" % status_of(fleet.port, "w-1"), fleet.logs())
    if "health check of w-1 fails (exit 1)" not in open(log).read():
        fail("the agent did not log the failing check", fleet.logs())
    os.unlink(sick)
    if not wait_for(lambda: claim(fleet)[0] == 201, 5):
        fail("w-1 was not claimable once its check passed", fleet.logs())


def case_restart(fleet):
    proc, log = fleet.agent("w-1", "--register", "--region", "weur", "--pool", "chrome")
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "available", 5):
        fail("w-1 never available", fleet.logs())
    if stop(fleet.server, timeout=30) != 0:
        fail("the server did not stop cleanly", fleet.logs())
    time.sleep(1.0)  # the agent finds nobody home
    fleet.start_server()
    time.sleep(3 * DEAD_AFTER_MS / 1000)
    if proc.poll() is not None:
        fail("the agent exited (%d) across the restart" % proc.returncode, fleet.logs())
    if status_of(fleet.port, "w-1") != "available":
        fail("after the restart w-1 is %r" % status_of(fleet.port, "w-1"), fleet.logs())
    text = open(log).read()
    if "heartbeat failed" not in text or "the server takes heartbeats again" not in text:
        fail("the agent did not log the outage and its end", fleet.logs())


def exits_soon(proc, what, fleet, timeout=5):
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        fail("%s: the agent did not exit within %d s of SIGTERM (--drain-timeout-ms 30000)"
             % (what, timeout), fleet.logs())


def started(log):
    # The agent's first line comes once it has its signals in hand.
    return lambda: "reports to" in open(log).read()


def case_sigterm(fleet):
    # Registered by the admin: the container key may report, not register.
    register(fleet, "w-1")
    proc, log = fleet.agent("w-1", key=CONTAINER)
    if not wait_for(started(log), 5):
        fail("the agent of w-1 never started", fleet.logs())
    if not wait_for(lambda: claim(fleet)[0] == 201, 5):
        fail("w-1 never claimed", fleet.logs())
    _, c = request(fleet.port, "GET", "/v1/containers/w-1")
    proc.send_signal(signal.SIGTERM)
    time.sleep(2 * DEAD_AFTER_MS / 1000)  # past --dead-after-ms: the draining reports keep it alive
    if proc.poll() is not None:
        fail("the agent exited (%d) while its container was picked" % proc.returncode, fleet.logs())
    code, c2 = request(fleet.port, "GET", "/v1/containers/w-1")
    if c2["status"] != "picked" or not c2["drain_reported"]:  # its own report, not an operator's drain
        fail("the picked w-1 did not take the draining report: %r" % c2, fleet.logs())
    code, _ = request(fleet.port, "DELETE", "/v1/sessions/%s?token=%d" % (c["session_id"], 1))
    if code != 204:
        fail("release: %d" % code, fleet.logs())
    try:
        rc = proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        fail("the agent did not exit once w-1 was released", fleet.logs())
    if rc != 0 or status_of(fleet.port, "w-1") != "draining":
        fail("exit %d, w-1 %r" % (rc, status_of(fleet.port, "w-1")), fleet.logs())
    if "w-1 is not picked; exiting" not in open(log).read():
        fail("the agent did not log its exit", fleet.logs())
    # A key the server refuses (scoped to w-*, not x-1) cannot tell.
    register(fleet, "x-1")
    refused, refused_log = fleet.agent("x-1", key=CONTAINER)
    if not wait_for(started(refused_log), 5):
        fail("the agent of x-1 never started", fleet.logs())
    refused.send_signal(signal.SIGTERM)
    if exits_soon(refused, "a refused key", fleet) != 0:
        fail("the refused agent's exit code", fleet.logs())
    if "cannot tell whether x-1 is picked" not in open(refused_log).read():
        fail("the refused agent did not say why it exited", fleet.logs())
    # A server that is gone cannot tell either.
    lonely, lonely_log = fleet.agent("w-2", key=CONTAINER)
    if not wait_for(started(lonely_log), 5):
        fail("the agent of w-2 never started", fleet.logs())
    stop(fleet.server, timeout=30, kill_late=True)
    fleet.server = None
    lonely.send_signal(signal.SIGTERM)
    if exits_soon(lonely, "no server", fleet) != 0:
        fail("the agent without a server's exit code", fleet.logs())
    if "cannot tell whether w-2 is picked" not in open(lonely_log).read():
        fail("the agent without a server did not say why it exited", fleet.logs())


def case_drain(fleet):
    marker = os.path.join(fleet.tmp, "drained")
    proc, log = fleet.agent("w-1", "--register", "--region", "weur", "--pool", "chrome",
                            "--on-drain", "echo drained > " + marker)
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "available", 5):
        fail("w-1 never available", fleet.logs())
    code, _ = request(fleet.port, "POST", "/v1/containers/w-1/drain")
    if code != 200:
        fail("drain: %d" % code, fleet.logs())
    if not wait_for(lambda: os.path.exists(marker), 5):
        fail("--on-drain did not run after an operator drain", fleet.logs())
    time.sleep(1.0)
    if status_of(fleet.port, "w-1") != "draining":
        fail("the agent's ready reports undid the operator drain", fleet.logs())
    if "an operator drained w-1" not in open(log).read():
        fail("the agent did not log the drain", fleet.logs())


def case_unknown(fleet):
    """An agent whose --id the server has no container of says so, once
    (not at every heartbeat), and says when it is registered after all."""
    _, log = fleet.agent("w-7")
    no_container = "the server has no container w-7"
    if not wait_for(lambda: no_container in open(log).read(), 5):
        fail("the agent did not log that w-7 is unknown", fleet.logs())
    time.sleep(4 * INTERVAL_MS / 1000)  # more heartbeats, each answered "unknown"
    register(fleet, "w-7")
    if not wait_for(lambda: "the server knows w-7 now" in open(log).read(), 5):
        fail("the agent did not log that w-7 is known once registered", fleet.logs())
    if not wait_for(lambda: status_of(fleet.port, "w-7") == "available", 5):
        fail("w-7 is not available once registered", fleet.logs())
    text = open(log).read()
    if text.count(no_container) != 1:
        fail("the agent logged the unknown id %d times, not once" % text.count(no_container),
             fleet.logs())
    if "w-7 reported ready" not in text[text.index("the server knows w-7 now"):]:
        fail("the agent did not log its ready report once w-7 was known", fleet.logs())


def case_ts(fleet):
    """The agent's heartbeats carry ts_ms, its host's clock: a `draining`
    report dated AHEAD_MS ahead outranks its `ready` ones (taken for
    liveness only) until its clock passes that date. Without ts_ms each of
    its `ready` reports counts as current and undoes the draining at once."""
    ahead_ms = 6000
    fleet.agent("w-1", "--register", "--region", "weur", "--pool", "chrome")
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "available", 5):
        fail("w-1 never available", fleet.logs())
    dated = int(time.time() * 1000) + ahead_ms
    body = json.dumps({"heartbeats": [{"container_id": "w-1", "ts_ms": dated, "state": "draining"}]})
    code, _ = request(fleet.port, "POST", "/v1/heartbeats", body)
    if code != 202:
        fail("the dated report: %d" % code, fleet.logs())
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "draining", 5):
        fail("the dated draining report was not taken", fleet.logs())
    mark = request(fleet.port, "GET", "/v1/containers/w-1")[1]["last_heartbeat_ms"]
    # The agent's heartbeats accepted after the mark and well before `dated`
    # were sent before it too (one host, one clock): each changes liveness only.
    heard = 0
    while heard < 3 and int(time.time() * 1000) < dated - 1000:
        c = request(fleet.port, "GET", "/v1/containers/w-1")[1]
        if mark < c["last_heartbeat_ms"] < dated - 500:
            if c["status"] != "draining":
                fail("a ready report of the agent, sent before the dated draining one, undid it: "
                     "%r (its heartbeats carry no ts_ms?)" % c, fleet.logs())
            heard += 1
            mark = c["last_heartbeat_ms"]
        time.sleep(0.1)
    if heard == 0:
        fail("no heartbeat of the agent was written before the dated report's time", fleet.logs())
    # Once its clock passes the date, its `ready` is newer: available again.
    if not wait_for(lambda: status_of(fleet.port, "w-1") == "available", ahead_ms / 1000 + 5):
        fail("w-1 did not come back once the agent's clock passed the dated report",
             fleet.logs())


def case_deaths(fleet):
    """Not the agent's: what the server says when containers die unreported
    (docs/heartbeats-capacity-metrics.md "Deaths")."""
    for cid, region, pool in [("w-1", "weur", "chrome"), ("w-2", "weur", "chrome"),
                              ("w-3", "eeur", "firefox")]:
        body = json.dumps({"containers": [{"id": cid, "region": region, "pool": pool}]})
        if request(fleet.port, "POST", "/v1/containers", body)[0] != 200:
            fail("register " + cid, fleet.logs())
    code, session = request(fleet.port, "POST", "/v1/sessions",
                            json.dumps({"region": "eeur", "pool": "firefox"}))
    if code != 201:
        fail("claim: %d" % code, fleet.logs())
    if not wait_for(lambda: all(status_of(fleet.port, c) == "dead" for c in ("w-1", "w-2", "w-3")),
                    3 * DEAD_AFTER_MS / 1000):
        fail("the silent containers are not dead", fleet.logs())
    time.sleep(0.3)
    lines = [l for l in open(fleet.server_log).read().splitlines() if "reaper:" in l]
    if not lines or not all(" warning " in l for l in lines):
        fail("no reaper warning", fleet.logs())
    text = "\n".join(lines)
    dead = sum(int(re.search(r"reaper: (\d+) containers? dead", l).group(1)) for l in lines)
    if dead != 3 or "weur/chrome" not in text or "eeur/firefox 1" not in text:
        fail("the reaper's lines do not count 3 by pool: %r" % lines, fleet.logs())
    if not all(c in text for c in ("w-1", "w-2", "w-3")) or "silent up to 1." not in text:
        fail("the reaper's lines lack the ids or the silence: %r" % lines, fleet.logs())
    metrics = call(fleet.port, "GET", "/metrics", key=ADMIN)[1].decode()
    code, deaths = request(fleet.port, "GET", "/v1/capacity/deaths")
    pools = [(p["region"], p["pool"], p["silent"], p["reported"]) for p in deaths["pools"]]
    if code != 200 or deaths["window_ms"] != 600000 or \
            pools != [("weur", "chrome", 2, 0), ("eeur", "firefox", 1, 0)]:
        fail("/v1/capacity/deaths: %d %r" % (code, deaths), fleet.logs())
    for want in ('edgealloc_containers_marked_dead_total{reason="silent"} 3',
                 'edgealloc_containers_marked_dead_total{reason="reported"} 0'):
        if want not in metrics:
            fail("no %r in /metrics" % want, fleet.logs())


CASES = {"deaths": case_deaths, "alive": case_alive, "unhealthy": case_unhealthy, "restart": case_restart,
         "sigterm": case_sigterm, "drain": case_drain, "ts": case_ts, "unknown": case_unknown}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fleet = Fleet(args.bin, tmp)
        try:
            fleet.start_server()
            CASES[args.case](fleet)
        finally:
            fleet.close()
    print("ok agent/%s" % args.case)


if __name__ == "__main__":
    main()
