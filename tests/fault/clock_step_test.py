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

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from clock_step_checks import DEAD_AFTER_MS, clock_step_main, request, step_scenario  # noqa: E402
from pg_server import FAKETIME_LIB  # noqa: E402


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


def scenario(port, clock):
    """The steps under a lease and heartbeats; returns the violations."""
    violations, watch, _ = step_scenario((port, port), clock.set)
    if watch is None:
        return violations
    _, metrics = request(port, "GET", "/metrics")
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
                return ["the server did not start"]
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
    return violations


def show_log(workdir):
    with open(os.path.join(workdir, "server.log"), "rb") as f:
        sys.stdout.write(f.read().decode(errors="replace")[-3000:])


def main():
    return clock_step_main("clock-step", __doc__.split("\n")[0], FAKETIME_LIB, run, show_log)


if __name__ == "__main__":
    sys.exit(main())
