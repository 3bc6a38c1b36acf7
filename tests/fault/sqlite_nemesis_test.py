#!/usr/bin/env python3
"""A nemesis for one `edgealloc serve` on SQLite, over HTTP.

The PostgreSQL nemesis' clients (tests/fault/nemesis_workload.py: tenants
under the keys file's limits, stale and foreign tokens, agents falling silent
and coming back, an admin draining, undraining and deleting, the waiting
tenant and the poll of its limits) against one node, and an admin polling
GET /v1/containers, while on a schedule:

  pause      SIGSTOP 3-8 s (sometimes past --dead-after-ms), then SIGCONT
  kill9      kill -9 and start again on the same file
  clockstep  the wall clock stepped 20-60 s ahead or behind while it runs
             (libfaketime's timestamp file), and back after 5-10 s
  diskfull   every file write past 4 KiB fails (RLIMIT_FSIZE set on the
             running server with prlimit; SIGXFSZ ignored from its start, so
             a write gets EFBIG as on a full disk) for 3-6 s, then lifted

Every kind fires at least once. The checker (tests/fault/sqlite_nemesis_checks.py)
judges by the clients' clock, not the server's (the one the nemesis
steps): holds that overlap, a reporting container seen dead, a claim of a
silent or drained container, the tenants' limits, stale or foreign tokens
honoured, requests unanswered within 15 s while the node was up, 5xx other
than 503. Each of its checks is shown biting by --self-test's histories.

    tests/fault/sqlite_nemesis_test.py --bin build/edgealloc    # ~50 s
    SQLITE_NEMESIS_SECONDS=600 tests/fault/sqlite_nemesis_test.py --bin build/edgealloc
    tests/fault/sqlite_nemesis_test.py --recheck FOLDER/history.json
    tests/fault/sqlite_nemesis_test.py --self-test

ctest: fault/sqlite_nemesis.
"""

import argparse
import collections
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import nemesis_limits  # noqa: E402
from edgealloc_server import die_with_parent  # noqa: E402
from nemesis_common import (ADMIN_KEY, AGENT_KEY, History, log, now, print_counts,  # noqa: E402
                            register_fleet, request)
from nemesis_servers import Node  # noqa: E402
from nemesis_workload import Workload  # noqa: E402
from sqlite_nemesis_checks import SqliteChecker, self_test  # noqa: E402

KINDS = ["pause", "kill9", "clockstep", "diskfull"]


def start_ignoring_sigxfsz():
    die_with_parent()
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # kept across exec: EFBIG, not death


class Nemesis:
    def __init__(self, hist, node, rng):
        self.hist, self.node, self.rng = hist, node, rng
        self.problems = []

    def record(self, kind, t0, detail):
        with self.hist.lock:
            self.hist.actions.append({"kind": kind, "node": 0, "start": t0, "end": now(),
                                      "detail": detail})
        log("%-9s %.1f s  %s" % (kind, now() - t0, detail))

    def act(self, kind):
        node, rng, t0 = self.node, self.rng, now()
        if kind == "pause":
            secs = rng.uniform(3, 8)
            node.pause()
            time.sleep(secs)
            node.resume()
            self.record(kind, t0, "SIGSTOP %.1f s" % secs)
        elif kind == "kill9":
            node.kill()
            if not node.start():
                self.problems.append("the node did not start again (log %s)" % node.log_path)
                return
            self.record(kind, t0, "kill -9, ready again after %.1f s" % (now() - t0))
        elif kind == "clockstep":
            secs = rng.randint(20, 60) * rng.choice([1, -1])
            hold = rng.uniform(5, 10)
            node.set_clock("%+ds" % secs)
            time.sleep(hold)
            node.set_clock("+0")
            self.record(kind, t0, "wall clock stepped %+d s while running, back after %.1f s"
                        % (secs, hold))
        elif kind == "diskfull":
            secs = rng.uniform(3, 6)
            pid = str(node.proc.pid)
            r = subprocess.run(["prlimit", "--pid", pid, "--fsize=4096:"], capture_output=True)
            time.sleep(secs)
            r2 = subprocess.run(["prlimit", "--pid", pid, "--fsize=unlimited:"],
                                capture_output=True)
            if r.returncode or r2.returncode:
                self.problems.append("prlimit: %s %s" % (r.stderr, r2.stderr))
                return
            self.record(kind, t0, "writes past 4 KiB failing (RLIMIT_FSIZE) for %.1f s" % secs)

    def schedule(self, seconds):
        start = now()
        order = list(KINDS)
        self.rng.shuffle(order)
        while order or now() < start + seconds:
            time.sleep(self.rng.uniform(1.0, 2.5))
            self.act(order.pop() if order else self.rng.choice(KINDS))


def poll_containers(hist, nodes, stop):
    rng = random.Random(5)
    while not stop.wait(0.5):
        request(hist, nodes, rng, "poll", "containers", "GET", "/v1/containers?limit=1000",
                ADMIN_KEY, node=0)


def summary(hist, violations, secs):
    print_counts(hist, "sqlite nemesis", KINDS, 15)
    for k, n in sorted(collections.Counter(k for k, _ in violations).items()):
        print('  violations of "%s": %d' % (k, n))
    for k, d in violations[:20]:
        print("sqlite nemesis: VIOLATION %s: %s" % (k, d))
    print("sqlite nemesis: %d operations, %d faults injected, %d violations, %.0f s"
          % (len(hist.ops), len(hist.actions), len(violations), secs), flush=True)


def check(hist, extra):
    c = SqliteChecker(hist, extra["silences"], extra["start"],
                      nodes_down={0: [tuple(d) for d in extra["down"]]},
                      spawns={0: extra["spawns"]})
    return c.check()


def recheck(path):
    with open(path) as f:
        d = json.load(f)
    h = History()
    h.ops, h.actions, h.mono0, h.wall0 = d["ops"], d["actions"], d["mono0"], d["wall0"]
    violations = check(h, d)
    summary(h, violations, 0)
    return 1 if violations else 0


def run(args, tmp):
    hist = History()
    keys = os.path.join(tmp, "keys.txt")
    with open(keys, "w") as f:
        f.write("\n".join(nemesis_limits.keys_file_lines(ADMIN_KEY, AGENT_KEY)) + "\n")
    os.chmod(keys, 0o600)
    node = Node(0, os.path.abspath(args.bin), os.path.join(tmp, "edgealloc.db"), keys, tmp,
                15000, preexec=start_ignoring_sigxfsz)
    violations, work, extra = [], None, {}
    try:
        if not node.start():
            raise RuntimeError("the node did not start: " + open(node.log_path).read()[-2000:])
        register_fleet(hist, [node], random.Random(1))
        nem = Nemesis(hist, node, random.Random(args.seed))
        work = Workload(hist, [node], args.seed, False)
        stop = threading.Event()
        poller = threading.Thread(target=poll_containers, args=(hist, [node], stop), daemon=True)
        start = now()
        work.start()
        poller.start()
        nem.schedule(args.seconds)
        time.sleep(3)
        work.join()
        stop.set()
        poller.join(20)
        extra = {"silences": work.silences, "start": start, "down": node.down,
                 "spawns": node.spawns}
        violations = check(hist, extra)
        fired = {a["kind"] for a in hist.actions}
        violations += [("fault never fired", k) for k in KINDS if k not in fired]
        violations += [("fault not injected or not undone", p) for p in nem.problems]
    except Exception as e:  # noqa: BLE001 - a set-up failure is a failed test
        violations.append(("set-up", "%s: %s" % (type(e).__name__, e)))
    finally:
        node.kill()
    return hist, violations, extra


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--bin", help="path to build/edgealloc")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("SQLITE_NEMESIS_SECONDS", "25")))
    ap.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--recheck", metavar="HISTORY_JSON")
    ap.add_argument("--self-test", action="store_true", help="the checker alone, no server")
    args = ap.parse_args()
    if args.self_test:
        return self_test(History)
    if args.recheck:
        return recheck(args.recheck)
    if not args.bin:
        ap.error("--bin is required")
    log("seed %d, %.0f s of faults" % (args.seed, args.seconds))
    tmp = tempfile.mkdtemp(prefix="sqlite-nemesis-")
    t0 = now()
    hist, violations, extra = run(args, tmp)
    summary(hist, violations, now() - t0)
    print("%d passed, %d failed" % (0 if violations else 1, 1 if violations else 0))
    if args.keep or violations:
        with open(os.path.join(tmp, "history.json"), "w") as f:
            json.dump(dict(extra, ops=hist.ops, actions=hist.actions, mono0=hist.mono0,
                           wall0=hist.wall0), f, default=str)
        print("sqlite nemesis: files kept in %s" % tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
