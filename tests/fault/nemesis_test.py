#!/usr/bin/env python3
"""A Jepsen-style nemesis test of the PostgreSQL multi-node mode.

Sets up a real PostgreSQL 15 primary with a synchronous streaming standby,
three `edgealloc serve` nodes, each reaching the database through its own TCP
proxy (written here: it can pass, stall or drop), and client threads over
HTTP: tenants claiming (idempotency keys, the same key retried from two
threads at once, wait_ms, short leases left to expire), renewing, reading and
releasing, now and then with a stale token or another tenant's key, under
per-tenant limits of the keys file (max_sessions, claims_per_s, max_waiters:
tests/fault/nemesis_limits.py); container agents heartbeating, going silent (so the dead sweep ends
their sessions) and coming back; an admin registering, draining and deleting.
Every request is recorded (start and answer on one monotonic clock, node,
request, status, body). Meanwhile a nemesis, on a schedule:

  kill9     kill -9 a node and restart it
  pause     SIGSTOP a node for longer than the lock timeouts, then SIGCONT
  skew      restart a node with its wall clock tens of seconds ahead or behind
            (libfaketime, monotonic clock left alone), later back to normal
  stall     the node's database proxy stops forwarding (no close), then heals
            (6-12 s in the short run; up to 25 s in a long one, past the bound)
  drop      the node's proxy closes every connection and refuses new ones
  longtxn   a transaction on `containers` held open (like pg_dump) while a
            node restarts
  commitcut the proxy drops a connection exactly when a COMMIT's answer
            comes back (the commit happened, the node never hears of it)
  failover  kill the primary (immediate) and promote the standby longer than
            --dead-after-ms later (once, late)
  outage    stop the database primary (immediate) for longer than
            --dead-after-ms and start it again; nodes and clients go on
  pause_db_restart
            a node paused while the database primary stops and starts again
  clockstep, rowlock, syncrep_cancel, slowfsync
            a node's wall clock stepped while it runs, a containers row
            locked by an outside transaction, a commit's synchronous wait
            cancelled, PostgreSQL's fsync slow (tests/fault/nemesis_faults.py)

Every action is recorded with its start and end; a kind that never fired is a
failure (a sweep whose fault never fired proves nothing). A short run (up to
300 s) draws 8 of the kinds besides the failover with its seed, so as not to
take longer; a long one must fire them all.

The database's own view is read with psql: every few seconds a sample of the
containers and their sessions (with the database's clock), and triggers
(installed by the test) record every session's row made and deleted, and
every container made dead, with clock_timestamp(): when and how each session
began and ended, on the database's clock. Some containers have several slots
(tests/fault/nemesis_slots.py).

The checker (over the history, the samples and that audit) finds:

 1. overlapping holds: two sessions on one slot of a container whose
    acknowledged holds overlap, or a session answered while the container's
    other holds filled its slots (container over its slots), or on a slot it
    does not have. A hold runs from its claim's 201 answer to the earliest of: its
    release being sent, its lease end as acknowledged (database clock,
    converted), a 404/409 answer about it, and its end in the database when
    that end was legitimate (the lease was over, a release had been sent, or
    the container had been silent for --dead-after-ms on the database's clock:
    the lease and silence comparisons the database made itself are strict,
    with no slack). A 201 replayed after its session's hold ended is a hold
    of its own, from its answer to its lease end, a release sent or a
    404/409/410 after it;
 2. acknowledged writes lost: a released session live again; an acknowledged
    session neither released, expired nor legitimately dead that is not live
    with its token (in a sample, at the end, or ended early in the audit); an
    acknowledged claim the database never had; a registration, delete or
    drain not reflected at the end;
 3. a token that did not grow: a claim's token not above every token answered
    for that container before the claim was sent;
 4. a tenant over its quota (live sessions counted by the database, sampled);
 5. one idempotency key yielding two sessions whose holds overlap;
 6. a request not answered within the bound (15 s) by a node that was neither
    paused nor down meanwhile, or answered with a 5xx other than 503;
 7. a death of a reporting container: a container made dead (its session
    ended container_dead, or only its status) while its agent sent
    heartbeats naming it after the death's time less --dead-after-ms (plus
    the clock conversion's slack), whether they got 202 (heard, yet judged
    silent) or 503 or no answer (the server or the database deaf, which is
    no silence of the container's): the clients' own record of who was
    really silent;
 8. a claim of a silent container (no heartbeat or registration naming it
    could have been taken for --dead-after-ms before the claim was sent) or
    of a drained one (an operator's drain answered 200 before the claim was
    sent, no undrain nor delete sent since);
 9. a tenant over its max_sessions (the audit, on the database's clock), its
    claims_per_s (per node, from the clients' record) or its max_waiters (as
    the nodes report it);
10. a session made that no client was answered 201 for, without a claim of
    its tenant answered outcome unknown (503 unavailable, or no answer)
    around it; a keyed retry answered with a new session while the key's
    first one lived (a cut COMMIT's retry must replay it);
11. a stale or foreign token honoured (2xx), or a lease sampled past any
    asked for honestly;
12. a claim or renew acknowledged while the standby could not confirm it
    (syncrep_cancel);
13. an event of the log read twice, out of order, unlike the database's,
    or missed by a reader resuming after the last seq it read
    (nemesis_events.py).

Run it (as root it runs PostgreSQL as the `postgres` user, like
tests/support/pg_server.cc):

    tests/fault/nemesis_test.py --bin build/edgealloc             # short: ~100 s of faults
    NEMESIS_SECONDS=1800 tests/fault/nemesis_test.py --bin build/edgealloc \
        --slow-fsync-lib build/tests/fault/libedgealloc_slow_fsync.so   # long
    (without --slow-fsync-lib, as ctest gives it, slow fsync never fires
    and the run fails naming it)
    tests/fault/nemesis_test.py --self-test                       # the checker alone
    tests/fault/nemesis_test.py --bin /tmp/edgealloc-before --skew-seconds 90 --long-leases
        # a node's clock 90 s ahead and 60-80 s leases: a binary whose reaper
        # uses the node's own clock ends other nodes' sessions early

--seed replays the nemesis's schedule (not the threads' timing); --keep
keeps the folder (node and PostgreSQL logs, history.json, also kept on any
violation); --recheck FOLDER/history.json runs the checker over it again.
The short run takes about 130 s of wall clock on 2 cores (every kind
of fault once takes longer than the 100 s asked).

Prints operations by kind and outcome, nemesis actions by kind, the
violations (at most 20, with details), `nemesis: N operations, F faults
injected, V violations` and `P passed, F failed`; exits 1 on any violation or
any fault kind that did not fire. ctest: fault/nemesis, fault/nemesis_checker.
"""

import argparse
import collections
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import nemesis_faults  # noqa: E402
import nemesis_limits  # noqa: E402
from nemesis_checker import Checker  # noqa: E402
from nemesis_common import (ADMIN_KEY, AGENT_KEY, KINDS, NODES, SHORT_KINDS, History,  # noqa: E402
                            log, now, print_counts, register_fleet, request)
from nemesis_schedule import AUDIT_SQL, Nemesis, Sampler, read_audit, take_sample  # noqa: E402
from nemesis_servers import Node, Proxy  # noqa: E402
from nemesis_workload import Workload  # noqa: E402
import nemesis_events  # noqa: E402
from nemesis_self_test import self_test  # noqa: E402
from pg_server import DBNAME, PG_USER, PgServer, psql  # noqa: E402


def recheck(path):
    """The checker over a kept run's history (to study or change it)."""
    with open(path) as f:
        d = json.load(f)
    h = History()
    h.ops, h.actions, h.audit, h.samples = d["ops"], d["actions"], d["audit"], d["samples"]
    h.db_offset_ms, h.mono0, h.wall0 = d["db_offset_ms"], d["mono0"], d["wall0"]
    down = {int(k): [tuple(x) for x in v] for k, v in d["nodes_down"].items()}
    spawns = {int(k): v for k, v in d.get("spawns", {}).items()}
    c = Checker(h, nodes_down=down, spawns=spawns)
    violations = c.check()
    print("nemesis: sessions ended in the database: " +
          ", ".join("%s %d" % kv for kv in sorted(c.ends_by_cause().items())))
    for k, n in sorted(collections.Counter(k for k, _ in violations).items()):
        print('  violations of "%s": %d' % (k, n))
    for k, d in violations[:20]:
        print("nemesis: VIOLATION %s: %s" % (k, d))
    print("nemesis: %d operations, %d faults injected, %d violations"
          % (len(h.ops), len(h.actions), len(violations)))
    return 1 if violations else 0


# ---------------------------------------------------------------- main

def summary(hist, violations, missing, nem, proxies, nodes, sampler, secs, ends=None,
            notes=()):
    print_counts(hist, "nemesis", KINDS, 10)
    print("nemesis: proxy drops %d, connections cut with a statement in flight %d, with a COMMIT "
          "in flight %d; COMMIT answers cut (commitcut): %d; node start attempts that exited: %d; "
          "samples %d (%d failed); audit rows %d; %.0f s" % (
              sum(p.drops for p in proxies), sum(p.drops_inflight for p in proxies),
              sum(p.drops_inflight_commit for p in proxies),
              sum(p.commit_cuts for p in proxies), sum(n.start_failures for n in nodes),
              len(hist.samples), sampler.errors, len(hist.audit), secs))
    if ends:
        print("nemesis: sessions ended in the database: " +
              ", ".join("%s %d" % kv for kv in sorted(ends.items())))
    for line in notes:
        print("nemesis: " + line)
    vk = collections.Counter(k for k, _ in violations)
    for k, n in sorted(vk.items()):
        print('  violations of "%s": %d' % (k, n))
    # At most 20 printed, the first few of each kind.
    each = max(2, 20 // max(1, len(vk)))
    shown = collections.Counter()
    printed = 0
    for k, d in violations:
        if shown[k] < each and printed < 20:
            shown[k] += 1
            printed += 1
            print("nemesis: VIOLATION %s: %s" % (k, d))
    for k in missing:
        print("nemesis: FAULT NEVER FIRED: " + k)


def slow_fsync_env(args, tmp):
    """The shim copied where the postgres user may read it, and its delay
    file; PostgreSQL's fsync is then on and each call passes through the
    shim (really syncing only with --fsync)."""
    if not args.slow_fsync_lib:
        return {}, None
    lib = os.path.join(tmp, "slow_fsync.so")
    shutil.copy(args.slow_fsync_lib, lib)
    os.chmod(lib, 0o755)
    delay = os.path.join(tmp, "fsync_delay_ms")
    nemesis_faults.write_delay(delay, 0)
    return {"LD_PRELOAD": lib, "EDGEALLOC_SLOW_FSYNC_FILE": delay,
            "EDGEALLOC_SLOW_FSYNC_REAL": "1" if args.fsync else "0"}, delay


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", help="path to build/edgealloc")
    ap.add_argument("--self-test", action="store_true", help="check the checker, no servers")
    ap.add_argument("--seconds", type=float,
                    default=float(os.environ.get("NEMESIS_SECONDS", "100")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get(
        "NEMESIS_SEED", str(random.randrange(1 << 30)))))
    ap.add_argument("--skew-seconds", type=int, default=40,
                    help="how far a skewed node's wall clock is off (ahead or behind; from 60 "
                         "on, always ahead)")
    ap.add_argument("--skew-hold", type=float, default=15.0,
                    help="how long a skewed node runs before its normal restart")
    ap.add_argument("--long-leases", action="store_true",
                    help="claims and renews ask for 60-80 s leases (the pre-fix clock check)")
    ap.add_argument("--stall", type=float, nargs=2, default=None, dest="stall_range",
                    metavar=("MIN", "MAX"),
                    help="proxy stall duration range, seconds (default 6 12 in a short run, "
                         "6 25 in a long one: past the answer bound)")
    ap.add_argument("--fsync", action="store_true", help="PostgreSQL with fsync on")
    ap.add_argument("--slow-fsync-lib", metavar="SO",
                    help="tests/fault/slow_fsync.cc built (the slowfsync fault preloads it into "
                         "PostgreSQL; without it that fault does not fire)")
    ap.add_argument("--kinds", help="the faults to inject, comma-separated (default: all in a "
                                     "long run, %d drawn in a short one; failover always)"
                    % SHORT_KINDS)
    ap.add_argument("--strip-notices", action="store_true",
                    help="the proxies drop the database's warnings (to show that a COMMIT "
                         "whose synchronous wait was cancelled, taken as durable, is found)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--recheck", metavar="HISTORY_JSON",
                    help="run the checker again over a kept run's history.json")
    args = ap.parse_args()
    if args.self_test:
        return self_test()
    if args.recheck:
        return recheck(args.recheck)
    if not args.bin:
        ap.error("--bin is required (or --self-test)")
    binary = os.path.abspath(args.bin)
    if args.stall_range is None:
        args.stall_range = [6.0, 12.0] if args.seconds <= 300 else [6.0, 25.0]
    rng = random.Random(args.seed)
    log("seed %d (--seed %d to replay the schedule), %.0f s of faults, binary %s"
        % (args.seed, args.seed, args.seconds, binary))
    tmp = tempfile.mkdtemp(prefix="nemesis-")
    hist = History()
    primary = standby = None
    nodes, proxies = [], []
    sampler = None
    nem = None
    t_start = now()
    violations, missing, ends, notes = [], [], None, []
    try:
        pg_env, fsync_file = slow_fsync_env(args, tmp)
        primary = PgServer(tmp, "primary", args.fsync or bool(pg_env), env=pg_env)
        primary.init_primary()
        standby = PgServer(tmp, "standby", args.fsync or bool(pg_env), env=pg_env)
        standby.init_standby(primary)
        # The standby is synchronous before the first write.
        for _ in range(300):
            if psql(primary.port, "SELECT sync_state FROM pg_stat_replication",
                    db="postgres").strip() == "sync":
                break
            time.sleep(0.1)
        else:
            raise RuntimeError("the standby did not become synchronous")
        psql(primary.port, "CREATE DATABASE " + DBNAME, db="postgres")
        log("PostgreSQL primary :%d, synchronous standby :%d (%.1f s)"
            % (primary.port, standby.port, now() - t_start))

        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as f:
            f.write("\n".join(nemesis_limits.keys_file_lines(ADMIN_KEY, AGENT_KEY)) + "\n")
        lease_ms = 70000 if args.long_leases else 15000
        for i in range(NODES):
            p = Proxy("node%d" % i, [primary.port, standby.port], args.strip_notices)
            proxies.append(p)
            uri = ("postgresql://%s@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write"
                   % (PG_USER, p.ports[0], p.ports[1], DBNAME))
            nodes.append(Node(i, binary, uri, keys, tmp, lease_ms))
        for n in nodes:
            if not n.start():
                raise RuntimeError("node %d did not start; log %s:\n%s" % (
                    n.idx, n.log_path, open(n.log_path, errors="replace").read()[-2000:]))
        psql(primary.port, AUDIT_SQL)
        register_fleet(hist, nodes, rng)
        log("3 nodes up on :%s (%.1f s)" % (",".join(str(n.port) for n in nodes),
                                            now() - t_start))

        nem = Nemesis(hist, nodes, proxies, primary, standby, rng, args)
        nem.fsync_file = fsync_file
        sampler = Sampler(hist, nem)
        take_sample(hist, primary.port)
        sampler.start()
        work = Workload(hist, nodes, args.seed, args.long_leases)
        work.start()
        events = nemesis_events.EventReader(hist, nodes, args.seed)
        events.start()
        nem.schedule(args.seconds)
        time.sleep(5)  # quiet: the last faults' requests finish, short leases expire
        work.join()
        sampler.stop.set()
        sampler.join(15)
        for _ in range(20):
            try:
                take_sample(hist, nem.db_port)
                hist.audit = read_audit(nem.db_port)
                break
            except (RuntimeError, subprocess.TimeoutExpired, ValueError):
                time.sleep(1)
        offs = sorted(s["offset_ms"] for s in hist.samples)
        hist.db_offset_ms = offs[len(offs) // 2] if offs else 0.0
        down = {n.idx: [tuple(d) for d in n.down] for n in nodes}
        checker = Checker(hist, nodes_down=down, spawns={n.idx: n.spawns for n in nodes})
        violations = checker.check()
        violations += nemesis_events.check(events.read, events.finish(nem.db_port))
        ends = checker.ends_by_cause()
        unknown, replayed = nemesis_limits.unknown_replayed(checker, checker.audit_timeline()[0])
        notes = ["kinds this run had to fire: " + ", ".join(nem.required + ["failover"]),
                 "claims answered outcome unknown (503 unavailable or none): %d; of them made, "
                 "then replayed to a keyed retry: %d" % (unknown, replayed),
                 "events read by a resuming reader: %d in %d pages"
                 % (len(events.read), events.pages)]
        fired = {a["kind"] for a in hist.actions}
        missing = [k for k in nem.required + ["failover"] if k not in fired]
        violations += [("fault not injected or not undone", p) for p in nem.problems]
    except Exception as e:  # noqa: BLE001 - a set-up failure is a failed test
        violations.append(("set-up", "%s: %s" % (type(e).__name__, e)))
    finally:
        for n in nodes:
            n.kill()
        for p in proxies:
            p.close()
        for pg in (standby, primary):
            if pg is not None:
                pg.stop_immediate()
    secs = now() - t_start
    if nem is not None and sampler is not None:
        summary(hist, violations, missing, nem, proxies, nodes, sampler, secs, ends, notes)
    else:
        for k, d in violations:
            print("nemesis: VIOLATION %s: %s" % (k, d))
    if violations and nodes:
        for n in nodes:
            with open(n.log_path, errors="replace") as f:
                lines = [l for l in f.read().splitlines() if "serving on" not in l]
            print("node %d log (tail):\n  %s" % (n.idx, "\n  ".join(lines[-8:])))
    faults = len(hist.actions)
    print("nemesis: %d operations, %d faults injected, %d violations"
          % (len(hist.ops), faults, len(violations)), flush=True)
    failed = len(violations) + len(missing)
    print("%d passed, %d failed" % (0 if failed else 1, 1 if failed else 0))
    if args.keep or violations:
        with open(os.path.join(tmp, "history.json"), "w") as f:
            json.dump({"ops": hist.ops, "actions": hist.actions, "audit": hist.audit,
                       "db_offset_ms": hist.db_offset_ms, "mono0": hist.mono0,
                       "wall0": hist.wall0, "samples": hist.samples,
                       "nodes_down": {n.idx: n.down for n in nodes},
                       "spawns": {n.idx: n.spawns for n in nodes}}, f, default=str)
        print("nemesis: files kept in %s (--recheck %s/history.json checks it again)"
              % (tmp, tmp))
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

