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

import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from pg_server import DBNAME, FAKETIME_LIB, PG_USER, PgServer, psql  # noqa: E402
from clock_step_checks import (DEAD_AFTER_MS, STEP_S, clock_step_main, metric_sum,  # noqa: E402
                              step_scenario)


def scenario(a, b, pg):
    """The steps under a lease and heartbeats; returns the violations."""
    violations, watch, want = step_scenario((a, b), pg.step_clock)
    if watch is None:
        return violations
    each = metric_sum((a, b), rb"^edgealloc_clock_steps_total (\d+)$")[1]
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


def show_node_logs(workdir):
    for name in ("a", "b"):
        path = os.path.join(workdir, name + ".log")
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                sys.stdout.write("--- node %s log (last 30 lines)\n" % name +
                                 "".join(f.readlines()[-30:]))


def main():
    return clock_step_main("db-clock-step", __doc__.split("\n")[0], FAKETIME_LIB, run,
                           show_node_logs)


if __name__ == "__main__":
    sys.exit(main())
