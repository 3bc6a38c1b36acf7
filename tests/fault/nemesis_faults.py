"""The nemesis' faults on a running node's clock and on the database's
inside (tests/fault/nemesis_test.py schedules them), and the check that goes
with the cancelled synchronous wait:

  clockstep   a node's wall clock stepped 20-60 s ahead or behind while it
              runs (libfaketime re-reading its timestamp file), and back
  rowlock     an outside transaction holds one containers row (FOR UPDATE)
              for 3-6 s, as an operator's open psql would
  syncrep_cancel
              the primary's walsender stopped (SIGSTOP), so that commits
              wait for the synchronous standby, and every backend seen
              waiting (wait_event SyncRep) cancelled with pg_cancel_backend:
              its COMMIT succeeds with only a WARNING, committed on the
              primary alone; then the walsender goes on
  slowfsync   fsync and fdatasync in both PostgreSQL servers take 200-800 ms
              for 4-8 s (tests/fault/slow_fsync.cc, preloaded)

check_not_durable: while the walsender was stopped, no commit could be
confirmed by the standby; a claim (201, not a replay) or a renew (200) sent
after the stop and answered before the walsender went on was acknowledged
without it (a cancelled wait taken as durable).
"""

import os
import signal
import subprocess
import time

from edgealloc_server import die_with_parent
from pg_server import DBNAME, PG_USER, clean_env, psql

NEW_KINDS = ["clockstep", "rowlock", "syncrep_cancel", "slowfsync"]


def clock_step(nem, i, node, t0):
    secs = nem.rng.randint(20, 60) * nem.rng.choice([1, -1])
    node.set_clock("%+ds" % secs)
    hold = nem.rng.uniform(5, 10)
    time.sleep(hold)
    node.set_clock("+0")
    nem.record("clockstep", i, t0, "wall clock stepped %+d s while running, back after %.1f s"
               % (secs, hold))


def row_lock(nem, i, cid, t0):
    secs = nem.rng.uniform(3, 6)
    sql = ("BEGIN; SELECT 1 FROM containers WHERE id = '%s' FOR UPDATE; SELECT pg_sleep(%.1f); "
           "COMMIT;" % (cid, secs))
    p = subprocess.Popen(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                          str(nem.db_port), "-U", PG_USER, "-d", DBNAME, "-c", sql],
                         env=clean_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         preexec_fn=die_with_parent)
    time.sleep(1)
    held = p.poll() is None
    try:
        p.wait(secs + 15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
    if held and p.returncode == 0:
        nem.record("rowlock", None, t0, "row %s locked FOR UPDATE by an outside transaction "
                   "%.1f s" % (cid, secs))
    else:
        nem.problems.append("rowlock: psql ended at once or failed (exit %s)" % p.returncode)


def syncrep_cancel(nem, t0):
    """Needs the standby: before the failover only (after it, does not fire)."""
    if nem.failed_over:
        return
    port = nem.primary.port
    # After an outage the standby takes a while to stream again: wait for
    # it; without it the fault does not fire (the schedule tries later).
    deadline = time.monotonic() + 10
    out = []
    while time.monotonic() < deadline:
        out = psql(port, "SELECT pid FROM pg_stat_replication WHERE sync_state = 'sync'",
                   db="postgres").split()
        if len(out) == 1:
            break
        time.sleep(0.2)
    if len(out) != 1:
        return
    walsender = int(out[0])
    os.kill(walsender, signal.SIGSTOP)
    stopped = time.monotonic()
    cancelled = set()
    deadline = stopped + 4.0
    try:
        while time.monotonic() < deadline and not (cancelled and
                                                   time.monotonic() > stopped + 2.0):
            rows = psql(port, "SELECT pid, pg_cancel_backend(pid) FROM pg_stat_activity "
                              "WHERE wait_event = 'SyncRep'", db="postgres").split()
            cancelled.update(r.split("|")[0] for r in rows if r.endswith("|t"))
            time.sleep(0.1)
    finally:
        os.kill(walsender, signal.SIGCONT)
    resumed = time.monotonic()
    if cancelled:
        nem.record("syncrep_cancel", None, t0, "walsender stopped %.1f s; %d backends' "
                   "synchronous waits cancelled" % (resumed - stopped, len(cancelled)),
                   stopped=stopped, resumed=resumed)


def slow_fsync(nem, t0):
    if not nem.fsync_file:
        return
    ms = nem.rng.randint(200, 800)
    secs = nem.rng.uniform(4, 8)
    write_delay(nem.fsync_file, ms)
    time.sleep(secs)
    write_delay(nem.fsync_file, 0)
    nem.record("slowfsync", None, t0, "fsync and fdatasync %d ms each in PostgreSQL for %.1f s"
               % (ms, secs))


def write_delay(path, ms):
    tmp = path + ".new"
    with open(tmp, "w") as f:
        f.write("%d\n" % ms)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def check_not_durable(c):
    for a in c.h.actions:
        if a["kind"] != "syncrep_cancel" or "stopped" not in a:
            continue
        for op in c.h.ops:
            write = (op["kind"] == "claim" and op["status"] == 201 and not op["replayed"]) or \
                (op["kind"] == "renew" and op["status"] == 200)
            if write and op["t0"] > a["stopped"] and op["t1"] < a["resumed"]:
                c.v("acknowledged without the standby",
                    "%s %s to node %d sent %.2f, answered %d at %.2f, while the walsender was "
                    "stopped (%.2f to %.2f): its commit's synchronous wait was cancelled" % (
                        op["method"], op["path"], op["node"], op["t0"] - c.h.mono0,
                        op["status"], op["t1"] - c.h.mono0, a["stopped"] - c.h.mono0,
                        a["resumed"] - c.h.mono0))


def self_test_cases(t):
    clean, claim, audit_claim, hb = t["clean"], t["claim"], t["audit_claim"], t["hb"]
    cases = {}

    def cancelled(answered_at):
        h = clean()
        h.actions.append({"kind": "syncrep_cancel", "node": None, "start": 19.5, "end": 23.0,
                          "detail": "", "stopped": 20.0, "resumed": 23.0})
        hb(h, 19.8, ["c9"])
        claim(h, 20.5, answered_at, "s9", "c9", 1, 60)
        audit_claim(h, 20.6, "s9", "c9", 1, 60)
        return h

    cases["201 while the walsender stopped"] = (cancelled(21.0), "acknowledged without the standby")
    cases["201 once it went on"] = (cancelled(23.2), None)
    return cases
