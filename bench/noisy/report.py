"""What noisy_neighbour.py prints: `name value unit` figures, then the table
(lines starting `|`) and what A did and where the CPU went (lines starting
`- `), which bench/run copies into RESULTS.md as they are."""

import json
import os

from noisy.aconn import refused
from noisy.cpu import describe

GOAL_RATIO = 2.0


def _rate(a, key):
    return a.get(key, 0) / (a.get("seconds") or 1)


def _statuses(a):
    return json.dumps(a.get("status", {}))


def _waiters(a):
    return "the server's waiting claims %s at start, %s at end" % (
        _int(a.get("waiters_at_ready")), _int(a.get("waiters_at_end")))


def _int(v):
    return "-" if v is None else "%d" % v


def a_did(phase, p, args):
    """What the abuser did in a phase, from its own counts."""
    a = p["a"] or {}
    st = a.get("status", {})
    total = sum(st.values())
    per_s = total / (a.get("seconds") or 1)
    if phase == "waiters":
        return "held waiting claims (%s; --waiters %d tried), %d answers: %s" % (
            _waiters(a), args.waiters, total, _statuses(a))
    if phase in ("lists", "heavy_lists"):
        return "%.0f pages/s, %.0f sessions listed/s, %.1f MB/s of pages (statuses %s)" % (
            _rate(a, "pages"), _rate(a, "sessions"), _rate(a, "mb") * 1.048576, _statuses(a))
    if phase == "flood":
        return "%.0f claims/s, %d of them refused (statuses %s)" % (per_s, refused(st), _statuses(a))
    if phase in ("heartbeats", "hb_batches", "hb_scoped"):
        return "%.0f requests/s, %.0f heartbeats accepted/s, %d requests refused (statuses %s)" % (
            per_s, _rate(a, "heartbeats_accepted"), refused(st), _statuses(a))
    if phase in ("big_claims", "unauth_bodies"):
        return "%.0f requests/s of 1 MiB, %d refused (statuses %s); server RSS %s MB before, %s after" % (
            per_s, refused(st), _statuses(a), p["rss_mb"][0], p["rss_mb"][1])
    if phase == "hangups":
        return "%.0f hang-ups/s (%s; statuses %s)" % (_rate(a, "hangups"), _waiters(a), _statuses(a))
    if phase == "fallback_waits":
        failed = p.get("wait_claims_failed")
        return ("%d waiters, %.0f releases/s of pool w (%s; waiter claims that got nothing: %s; statuses %s)" % (
            args.fallback_waiters, _rate(a, "releases"), _waiters(a),
            "not exported by this build" if failed is None else "%d" % failed, _statuses(a)))
    return ""


def figures(r, attacks):
    q = r["quiet"]["p99"] or 1e-9
    for phase in ["quiet"] + attacks:
        p = r[phase]
        pre = "nn_%s_%s" % (r["label"], phase)
        print("%s_p50_ms %.2f ms" % (pre, p["p50"]))
        print("%s_p99_ms %.2f ms" % (pre, p["p99"]))
        print("%s_refused %d count" % (pre, p["refused"]))
        print("%s_server_cores %.2f cores" % (pre, p["cpu"]["server"]))
        if phase != "quiet":
            p["ratio"] = p["p99"] / q
            p["met"] = p["ratio"] <= GOAL_RATIO and p["refused"] == 0
            print("%s_p99_ratio %.2f x" % (pre, p["ratio"]))
    print("nn_%s_goals_met %d count (of %d attacks)" % (r["label"], sum(r[ph]["met"] for ph in attacks), len(attacks)))
    print("nn_%s_worst_p99_ratio %.2f x" % (r["label"], max(r[ph]["ratio"] for ph in attacks)))
    print("nn_%s_refused %d count (B's refusals, every attack)" % (
        r["label"], sum(r[ph]["refused"] for ph in attacks)))


def table(runs, attacks):
    print("| phase |" + "".join(" %s p50 ms | %s p99 ms | %s p99 / quiet | %s refused | %s goal | %s server cores |"
                                  % ((r["label"],) * 6) for r in runs))
    print("|---|" + "---|---|---|---|---|---|" * len(runs))
    for phase in ["quiet"] + attacks:
        row = "| %s |" % phase
        for r in runs:
            p = r[phase]
            if phase == "quiet":
                row += " %.2f | %.2f | 1 | %d | - |" % (p["p50"], p["p99"], p["refused"])
            else:
                row += " %.2f | %.2f%s | %.2f | %d%s | %s |" % (
                    p["p50"], p["p99"], " (at least: %d cycles late)" % p["late"] if p["late"] else "",
                    p["ratio"], p["refused"],
                    " (%s)" % ", ".join("%s: %d" % kv for kv in sorted(p["why"].items())) if p["why"] else "",
                    "met" if p["met"] else "not met")
            row += " %.2f |" % p["cpu"]["server"]
        print(row)


def report(runs, attacks, args, placement):
    for r in runs:
        figures(r, attacks)
    print()
    table(runs, attacks)
    print()
    print("- cores: %s. Server cores in the table: the server's CPU (user + system, all its threads, "
          "/proc) over B's measured seconds." % placement.describe())
    for r in runs:
        print("- %s (`%s`, %s): tenant limits %s; setup (fleet, A's %d sessions, heavy's 1,000) %.1f s; "
              "B %d cycles a phase at %g/s on %d connections; server threads by role: %s." % (
                  r["label"], shown_path(r["binary"]), r["version"],
                  "on its keys file lines: A `%s`, capped `%s`, B `%s`" % (
                      r["limits"]["a"], r["limits"]["capped"], r["limits"]["b"]) if r["limits"]
                  else "none (this binary refuses them on a keys file line, or --no-limits)",
                  args.a_sessions, r["setup_s"], r["quiet"]["n"], args.b_rate, args.b_conns,
                  r["roles_seen"] or "unknown (no gdb, or a binary without symbols)"))
        for phase in ["quiet"] + attacks:
            p = r[phase]
            did = "" if phase == "quiet" else "A " + a_did(phase, p, args) + "; "
            print("  - %s: %scpu: %s" % (phase, did, describe(p["cpu"])))


def shown_path(binary):
    """A binary as RESULTS.md names it: a path in the repo, never a scratch
    path of the machine that ran it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.abspath(binary)
    if path.startswith(root + os.sep):
        return os.path.relpath(path, root)
    return "an older build, outside the repo"
