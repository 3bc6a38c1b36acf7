#!/usr/bin/env python3
"""Noisy neighbour: does one tenant's abuse reach another's claims? Over HTTP, in one run.

    bench/noisy_neighbour.py --bin build/edgealloc [--before-bin OLD/edgealloc]
                             [--seconds 8] [--b-rate 100] [--a-sessions 20000] [--waiters 2000]
                             [--phases waiters,lists,...] [--no-pin] [--server-nice -10]

One server a binary (`edgealloc serve --sync full --dead-after-ms 3600000`,
SQLite in a temp dir) with a keys file of an admin key, tenant A (`acme`, the
abuser), tenant B (`beta`, the victim), tenant `capped` (A's rate-limited
twin, claims_per_s=10), tenant `heavy` (1,000 sessions of byte-heavy labels),
a container key for A's bulk containers (`bulk-*`) and one scoped to a single
id (`bulk-00000`). The fleet, region `r1`: pool `b` (200 containers, B's),
pool `a` (200, which A holds whole), pool `w` (20, free), pool `heavy`
(1,000, held by tenant heavy, each session with 16 labels at their limits:
keys of 64 and values of 256 emoji, about 20 KB a session) and pool `bulk`
(--a-sessions containers, which A holds). The sessions are claimed on a setup
server without tenant limits, which is then stopped; the measured server
starts on the same database with the limits (--a-limits, --capped-limits,
--b-limits) on the keys file lines. A binary that refuses limits on a keys
file line (older builds) is run without them, and the output says so.
Nothing dies: --dead-after-ms is an hour.

B, measured: claim (`POST /v1/sessions`, pool `b`) then release (`DELETE`),
open loop: --b-rate cycles a second (100) over --b-conns keep-alive
connections (8, one thread each), each cycle timed from when it was due to
the release's 204 (no coordinated omission; bench/noisy/victim.py). Cycles
still unsent 4 s after the last was due are counted "late" (the p99 is then a
lower bound). A refusal is any claim that is not 201 or release that is not
204. B holds at most --b-conns sessions, far within its limits, so the goal
is no refusal at all. For each phase, --seconds of cycles after A's load is
up (bench/noisy/attacks.py says each in full):

    quiet           A does nothing
    waiters         every waiting claim the server lets A hold (up to
                    --waiters): half on made-up regions with 16 made-up
                    fallbacks, half on pool a (full)
    lists           4 connections paging A's 20,000 sessions, 1,000 a page
                    (two with a label filter that matches none)
    flood           16 connections of claims naming made-up pools, no wait
    heartbeats      4 connections of 1,000-heartbeat requests (key bulk-*)
    big_claims      4 connections of 1 MiB claim bodies from tenant capped
    heavy_lists     4 connections paging heavy's 1,000 sessions, 1,000 a
                    page (20 MB a page where pages are not cut by bytes)
    hb_batches      2 connections of 10,000-heartbeat requests (key bulk-*)
    hb_scoped       2 connections of 10,000 heartbeats all naming bulk-00000,
                    from the key scoped to that one id
    unauth_bodies   --unauth-conns connections (200) posting 1 MiB with a key
                    the server does not know
    fallback_waits  --fallback-waiters (400) waiting claims, each its own
                    made-up region with r1 as fallback, pool w: a served one
                    releases at once and waits again
    hangups         8 connections: a claim waiting on pool a, 80 KiB of
                    pipelined requests behind it, then the close

A's load runs in a child process (this script with --attack KIND). A 429 or
503 to A is the defence at work, counted in what A did, never a failure.
Between phases the server is let settle (no waiter, empty heartbeat queue).
Goal, each attack: B's p99 at most 2x its quiet p99, and B never refused.

Cores (bench/noisy/cpu.py): with two cores the server runs on one and both
clients (B's threads, A's generator) on the other; with three or more B and
A each get a core of their own and the server the rest; with one, or
--no-pin, nothing is pinned. B's client runs at nice -10 where it may (A's
generator and the server at the ordinary priority). Pinned, A's generator
never takes the server's CPU, and where it shares a core with B's client,
B's client runs first whenever it has work. The server's core is not kept
from other work on the machine: on a shared machine the quiet p99 already
has other processes' share in it. Each phase also prints where the CPU went over B's measured
seconds: the server's threads by role (read from their stacks with gdb once
the server is up: io threads, readers, group writer, heartbeat lanes, ...),
A's generator, B's client, and how busy the server's and the clients' cores
were (every process's work, other builds' too).

What B waits for, each abuse: measured with these cpu lines on bench/run's
2-core machine while other builds kept both cores busy (the server got 0.2
to 0.9 of its core, and its threads waited 0.2 to 4.6 s a second for it;
B's quiet p99 was 26 to 114 ms against 4 to 11 ms on a quiet machine; one
phase's ratio moved up to 5x between the two halves of one run and 25x
between runs: indicative only). Over quiet's (writer 0.10, io 0.06 cores):

    waiters, flood  the group writer: each claim of A's that its
                    claims_per_s lets through (200 a second) and that finds
                    nothing is a writer job in the queue B's claims and
                    releases are in (writer 0.15-0.24 cores, runnable but
                    waiting for the core about as long again); io 0.05-0.12
                    for A's 429s and 503s
    lists, heavy_lists  the reader pool: its 4 threads take 0.4-0.6 cores
                    building A's pages and, all runnable at once, hold the
                    server's core while B's claims wait behind them (readers
                    runnable but waiting 1.8-3.1 s a second)
    heartbeats, hb_batches, hb_scoped  the io threads: each 1,000- or
                    10,000-item body is parsed on an io thread, also when the
                    full queue then refuses it (io 0.2-0.8 cores; 10,000 items
                    naming one id cost as much as 10,000 ids), and the
                    writer's heartbeat rows
    big_claims, unauth_bodies  the io threads (0.14-0.44 cores): the 413 and
                    401 come before the body is read, but each of A's
                    connections is still accepted, read to its headers,
                    answered and closed, hundreds of times a second
    fallback_waits  the waiting room's thread (0.35-0.49 cores under 400
                    waiting claims and about 150 releases a second of pool
                    w) and the writer (those claims and releases)
    hangups         nothing grows (server CPU as quiet's); the waiting claims
                    end with their connections (1 to 8 left at the end of the
                    phase, not A's 1,000)

Ratios measured (B's p99 over quiet's; the default run twice in one
invocation, then with --server-nice -10): waiters 98 / 69 / 4.0, lists
2.4 / 2.2 / 3.6, flood 11 / 7.6 / 4.6, heartbeats 2.9 / 3.7 / 2.9,
big_claims 3.4 / 2.7 / 3.1, heavy_lists 4.5 / 12 / 5.7, hb_batches
2.5 / 10.5 / 8.9, hb_scoped 2.5 / 2.0 / 4.8, unauth_bodies 13 / 66 / 5.7,
fallback_waits 1.6 / 1.1 / 2.5, hangups 11 / 50 / 1.6. The large ones of
the default runs came with the server's threads waiting longest for its
core: on a shared machine --server-nice -10 keeps other work off it
(bench/run leaves the server at the ordinary priority).

Prints `name value unit` lines (nn_<label>_<phase>_<figure>, the label
`this`, or `before` and `after` with --before-bin), then the table in
markdown (lines starting `|`) and what A did and where the CPU went (lines
starting `- `). With --before-bin both binaries run the same phases in this
one run, the older first, side by side in the table.
"""

import argparse
import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from noisy import cpu  # noqa: E402
from noisy.attacks import ATTACKS, attack  # noqa: E402
from noisy.fleet import Server, metric, setup, write_keys  # noqa: E402
from noisy.report import report  # noqa: E402
from noisy.victim import B, pct  # noqa: E402

ORDER = ["waiters", "lists", "flood", "heartbeats", "big_claims", "heavy_lists", "hb_batches", "hb_scoped",
         "unauth_bodies", "fallback_waits", "hangups"]  # hangups last: an old build keeps its claims waiting


def settle(server, limit_s=15):
    """Until no claim waits and the heartbeat queue is empty."""
    t = time.monotonic()
    while time.monotonic() - t < limit_s:
        m = server.metrics()
        if not metric(m, "edgealloc_claim_waiters") and not metric(m, "edgealloc_heartbeat_queue_depth"):
            break
        time.sleep(0.2)
    time.sleep(0.5)
    return round(time.monotonic() - t, 1)


def start_server(binary, work, limits, placement):
    keys = os.path.join(work, "keys")
    write_keys(keys, limits)
    s = Server(binary, work, keys, placement.server_preexec())
    if not s.alive() and limits:
        # An older build: "keys:2: 6 fields; expected 'key role [tenant or ids]'".
        limits = None
        write_keys(keys, None)
        s = Server(binary, work, keys, placement.server_preexec())
    if not s.alive():
        raise RuntimeError("server exited %s (see %s/server.log)" % (s.proc.returncode, work))
    return s, limits


def phase(s, b, kind, roles, placement, args):
    """B's cycles while A does `kind` (None: quiet), and what it cost."""
    child = None
    if kind:
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--attack", kind,
                                  "--port", str(s.port)] + args.passed,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                 preexec_fn=placement.preexec(placement.attacker))
        line = child.stdout.readline()
        assert line.strip() == "ready", "attack %s: %r" % (kind, line)
    failed0 = metric(s.metrics(), "edgealloc_claim_wait_claims_failed_total")
    rss0 = cpu.rss_mb(s.proc.pid)
    b.reconnect()  # the server may have closed B's idle connections during A's ramp
    b.cycles(0.3)  # unmeasured: the connections up
    before = cpu.Sample(s.proc.pid, child.pid if child else None)
    m = b.cycles(args.seconds)
    after = cpu.Sample(s.proc.pid, child.pid if child else None)
    out = {"rss_mb": (rss0, cpu.rss_mb(s.proc.pid)), "cpu": after.since(before, roles, placement)}
    out["cpu"]["victim_client_waited"] = round(m["waited_ms"] / 1000 / args.seconds, 3)
    failed1 = metric(s.metrics(), "edgealloc_claim_wait_claims_failed_total")
    if failed0 is not None and failed1 is not None:
        out["wait_claims_failed"] = failed1 - failed0
    a_stats = None
    if child:
        child.stdin.close()
        a_stats = json.loads(child.stdout.readline() or "{}")
        child.wait(30)
    out.update({"p50": pct(m["lat"], 0.5), "p99": pct(m["lat"], 0.99), "n": len(m["lat"]),
                "refused": m["refused"], "why": m["why"], "late": m["late"], "a": a_stats,
                "settle_s": settle(s), "server_alive": s.alive()})
    return out


def run_binary(label, binary, args, placement):
    work = tempfile.mkdtemp(prefix="edgealloc-nn-%s-" % label)
    out = {"label": label, "binary": binary,
           "version": subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()}
    try:
        t = time.monotonic()
        setup(binary, work, args.a_sessions)
        out["setup_s"] = round(time.monotonic() - t, 1)
        limits = None if args.no_limits else {"a": args.a_limits, "b": args.b_limits, "capped": args.capped_limits}
        s, out["limits"] = start_server(binary, work, limits, placement)
        try:
            placement.pin_self()  # B's threads, started from here, inherit it
            b = B(s.port, args.b_rate, args.b_conns)
            b.cycles(1)  # warm: connection, statement cache
            roles = cpu.thread_roles(s.proc.pid)
            seen = {}
            for role in roles.values():
                seen[role] = seen.get(role, 0) + 1
            out["roles_seen"] = ", ".join("%s %d" % kv for kv in sorted(seen.items()))
            for kind in [None] + args.attacks:
                p = out[kind or "quiet"] = phase(s, b, kind, roles, placement, args)
                print("# %s %s: p50 %.2f ms p99 %.2f ms refused %d %s late %d; settled in %.1f s; %s; A %s" % (
                    label, kind or "quiet", p["p50"], p["p99"], p["refused"], p["why"] or "", p["late"],
                    p["settle_s"], cpu.describe(p["cpu"]), json.dumps(p["a"]) if p["a"] else "-"),
                      file=sys.stderr, flush=True)
        finally:
            placement.unpin_self()
            s.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default="build/edgealloc")
    ap.add_argument("--before-bin", default="", help="an older build, run first with the same phases")
    ap.add_argument("--seconds", type=float, default=8, help="B's measured cycles, each phase")
    ap.add_argument("--b-rate", type=float, default=100, help="B's claim+release cycles a second (open loop)")
    ap.add_argument("--b-conns", type=int, default=8, help="B's keep-alive connections")
    ap.add_argument("--phases", default=",".join(ORDER), help="the attacks, in this order")
    ap.add_argument("--no-pin", action="store_true", help="leave the server and the clients unpinned")
    ap.add_argument("--server-nice", type=int, default=0,
                    help="the server's priority (e.g. -10: ahead of other work on a shared machine)")
    ap.add_argument("--a-limits", default="max_sessions=25000 claims_per_s=200 max_waiters=1000")
    ap.add_argument("--capped-limits", default="claims_per_s=10 max_sessions=20 max_waiters=50")
    ap.add_argument("--b-limits", default="max_sessions=50 claims_per_s=500 max_waiters=100")
    ap.add_argument("--no-limits", action="store_true", help="keys file without tenant limits")
    # Passed on to the attacks (--attack KIND).
    passed = [("--a-sessions", 20000, "A's bulk sessions"),
              ("--waiters", 2000, "waiting claims A tries to hold at most"),
              ("--unauth-conns", 200, "connections posting 1 MiB with an unknown key"),
              ("--fallback-waiters", 400, "waiting claims with a made-up region and a real fallback")]
    for name, default, text in passed:
        ap.add_argument(name, type=int, default=default, help=text)
    ap.add_argument("--attack", choices=sorted(ATTACKS), help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.passed = [x for name, _, _ in passed for x in (name, str(getattr(args, name[2:].replace("-", "_"))))]
    args.attacks = [k for k in args.phases.split(",") if k]
    unknown = [k for k in args.attacks if k not in ATTACKS]
    if unknown:
        ap.error("unknown phases: %s (known: %s)" % (", ".join(unknown), ", ".join(ORDER)))
    # bench/run's timeout sends SIGTERM: unwind, so that the servers are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    if args.attack:
        asyncio.run(attack(args.attack, args.port, args))
        return
    placement = cpu.Placement(pin=not args.no_pin, server_nice=args.server_nice)
    runs = []
    if args.before_bin:
        runs.append(run_binary("before", os.path.abspath(args.before_bin), args, placement))
    runs.append(run_binary("after" if args.before_bin else "this", os.path.abspath(args.bin), args, placement))
    report(runs, args.attacks, args, placement)


if __name__ == "__main__":
    main()
