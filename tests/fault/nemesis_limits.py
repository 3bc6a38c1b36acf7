"""The nemesis checker's checks of the tenants' limits, of answers whose
outcome is unknown, and of stale and foreign tokens (tests/fault/nemesis_test.py
runs them over its history; each is shown biting by its self-test).

  max_sessions  at each session's start in the database (the audit, with its
                tenant), the tenant's sessions begun before, not ended and
                whose lease was not over then, are at most its max_sessions
                (keys file, else --max-sessions-per-tenant); the database's
                own clock on both sides, no slack;
  claims_per_s  per node and tenant, the claims the node certainly took a
                token for (201 not replayed, as a replay gives its token
                back; 429 quota_exceeded; 503 no_capacity),
                sent at or after a and answered by b, in one life of the node:
                at most burst + rate * (b - a), burst = max(1, rate);
  max_waiters   what each node says (GET /v1/limits, polled) its tenant has
                waiting is at most max_waiters;
  outcome       a session the database began that no 201 named must have a
                claim of its tenant that was answered outcome unknown (503
                unavailable, or no answer) around it; and a claim answered 201
                with a new session while its idempotency key's session lived
                (on the database's clock when the new one is in the audit)
                is a keyed retry that did not replay;
  stale/foreign a renew, release or read with an old fencing token or another
                tenant's key is refused (409/410, 403), never 2xx; and no
                sampled lease reaches past the longest lease ever asked for
                honestly (stale and foreign renews ask for far more).
"""

import collections

TENANTS = {"acme": "ka", "bravo": "kb", "corvus": "kc", "delta": "kd"}  # tenant -> key
DEFAULT_QUOTA = 4          # --max-sessions-per-tenant
# The keys file's limits (docs/api.md "Per-tenant limits"). delta claims in
# the one-container pool WAIT_POOL with wait_ms, so its claims wait.
LIMITS = {
    "acme": {"max_sessions": 4},
    "bravo": {"max_sessions": 3, "claims_per_s": 1},
    "corvus": {"claims_per_s": 0.5},
    "delta": {"max_sessions": 2, "max_waiters": 1},
}
WAIT_POOL = "w"
HONEST_LEASE_MS = 80000    # the longest lease_ms any claim or honest renew asks for
STALE_LEASE_MS = 300000    # what stale and foreign renews ask for
TOL_S = 0.5                # slack when converting between the database's clock and the test's
# A claim answered 503 unavailable while its statement was still queued or
# running (a waiting claim answered at its bound, a handler past its answer
# bound) may still commit after the answer: behind a writer reconnecting
# after an outage, then its statement_timeout. The server releases what such
# an unkeyed claim makes, at once (RELEASED_WITHIN_S).
LATE_COMMIT_S = 20.0
RELEASED_WITHIN_S = 3.0
UNKNOWN = "outcome unknown"


def keys_file_lines(admin_key, agent_key):
    lines = ["%s admin" % admin_key, "%s container" % agent_key]
    for tenant, key in TENANTS.items():
        limits = " ".join("%s=%s" % kv for kv in sorted(LIMITS.get(tenant, {}).items()))
        lines.append(("%s tenant %s %s" % (key, tenant, limits)).rstrip())
    return lines


def max_sessions(tenant):
    return LIMITS.get(tenant, {}).get("max_sessions", DEFAULT_QUOTA)


def code_of(op):
    r = op.get("resp")
    if isinstance(r, dict) and isinstance(r.get("error"), dict):
        return r["error"].get("code")
    return None


def outcome_unknown(op):
    return op["status"] is None or (op["status"] == 503 and code_of(op) == "unavailable")


def check_max_sessions(c, began, ended):
    """At each start of a session of a tenant, its live sessions then."""
    last_lease = {}
    for smp in c.h.samples:
        for r in smp["rows"]:
            if r.get("session_id"):
                last_lease[r["session_id"]] = r["lease_expires_at_ms"]
    by_tenant = collections.defaultdict(list)
    for sid, b in began.items():
        if not b.get("new_tenant"):
            continue
        e = ended.get(sid)
        lease = e["old_lease"] if e else last_lease.get(sid, b["new_lease"])
        by_tenant[b["new_tenant"]].append(
            (b["at_ms"], e["at_ms"] if e else float("inf"), lease or 0, sid))
    for tenant, lst in by_tenant.items():
        cap = max_sessions(tenant)
        for at, _, _, sid in lst:
            live = [x for x in lst if x[0] <= at < x[1] and x[2] > at]
            if len(live) > cap:
                c.v("tenant over max_sessions",
                    "%s began %s at %.2f with %d live sessions (max_sessions %d): %s" % (
                        tenant, sid, c.mono(at) - c.h.mono0, len(live), cap,
                        ", ".join(x[3] for x in live)))
                break


def rate_counted(op):
    """The node took a token for this claim, certainly: a new session, or a
    refusal only the store could give (a 503 unavailable may come from a
    node starting or stopping, before any token)."""
    if op["kind"] != "claim" or op["replayed"]:
        return False
    return op["status"] == 201 or (op["status"], code_of(op)) in (
        (429, "quota_exceeded"), (503, "no_capacity"))


def check_claim_rate(c, spawns, window_s=30.0):
    by = collections.defaultdict(list)
    for op in c.h.ops:
        rate = LIMITS.get(op.get("tenant"), {}).get("claims_per_s")
        if rate and rate_counted(op):
            by[(op["tenant"], op["node"])].append(op)
    for (tenant, node), lst in by.items():
        rate = LIMITS[tenant]["claims_per_s"]
        burst = max(1.0, rate)
        lst.sort(key=lambda o: o["t0"])
        lives = sorted(spawns.get(node, []))
        for i, first in enumerate(lst):
            a = first["t0"]
            ends = sorted(o["t1"] for o in lst[i:] if o["t0"] < a + window_s)
            for n, b in enumerate(ends, 1):
                if any(a <= s <= b for s in lives):
                    break  # a new life of the node: a full bucket
                if n > burst + rate * (b - a) + 1e-6:
                    c.v("tenant over claims_per_s",
                        "%s on node %d: %d claims sent from %.2f and answered by %.2f (%.2f s), "
                        "at most %.1f + %.1f/s allowed" % (tenant, node, n, a - c.h.mono0,
                                                            b - c.h.mono0, b - a, burst, rate))
                    return


def check_waiters(c):
    for op in c.h.ops:
        if op["kind"] != "limits" or op["status"] != 200 or not isinstance(op["resp"], dict):
            continue
        r = op["resp"]
        cap = LIMITS.get(r.get("tenant"), {}).get("max_waiters")
        if cap is not None and (r.get("waiting") or 0) > cap:
            c.v("tenant over max_waiters",
                "node %d says %s has %s claims waiting at %.2f (max_waiters %d)" % (
                    op["node"], r["tenant"], r["waiting"], op["t1"] - c.h.mono0, cap))


def held_until(c, end):
    """When a session that ended was last held: its end, or its lease's end
    if that came first (the reaper ended it after its lease)."""
    at = c.mono(end["at_ms"])
    return min(at, c.mono(end["old_lease"])) if end.get("old_lease") else at


def check_outcomes(c, ses, began, ended):
    """Sessions no client was told of, and keyed retries."""
    claims = [op for op in c.h.ops if op["kind"] == "claim"]
    for sid, b in began.items():
        if sid in ses or not b.get("new_tenant"):
            continue
        at = c.mono(b["at_ms"])
        unknown = [op for op in claims
                   if op.get("tenant") == b["new_tenant"] and outcome_unknown(op)]
        if any(op["t0"] - TOL_S <= at <= c.taken_by(op) + TOL_S for op in unknown):
            continue
        late = [op for op in unknown
                if op["t0"] - TOL_S <= at <= c.taken_by(op) + LATE_COMMIT_S]
        if not late:
            c.v("session made, no outcome-unknown answer",
                "%s on %s (tenant %s, key %s) began at %.2f; no claim of the tenant around it "
                "was answered 201 naming it, 503 unavailable or not at all" % (
                    sid, b["id"], b["new_tenant"], b.get("new_key"), at - c.h.mono0))
            continue
        # Made after its claim was answered: unkeyed, nobody can have it,
        # and the server must give the container back at once: released, or
        # its lease over (a release that failed until then leaves it to the
        # reaper, whose lag under slow writes is no hold of anyone's).
        end = ended.get(sid)
        if not b.get("new_key") and (end is None or
                                     held_until(c, end) - at > RELEASED_WITHIN_S):
            c.v("session made after its claim's answer, not released",
                "%s on %s (tenant %s) began at %.2f, after a claim of the tenant was answered "
                "outcome unknown (sent %.2f, answered %.2f); %s" % (
                    sid, b["id"], b["new_tenant"], at - c.h.mono0,
                    late[-1]["t0"] - c.h.mono0, late[-1]["t1"] - c.h.mono0,
                    "it never ended" if end is None else
                    "it ended %.2f s later" % (c.mono(end["at_ms"]) - at)))
    by_key = collections.defaultdict(list)
    for sid, b in began.items():
        if b.get("new_key"):
            by_key[(b["new_tenant"], b["new_key"])].append(b)
    last_lease = {r["session_id"]: r["lease_expires_at_ms"] for smp in c.h.samples
                  for r in smp["rows"] if r.get("session_id")}
    for op in claims:
        if op["status"] != 201 or not isinstance(op["resp"], dict):
            continue
        key = (op.get("tenant"), (op["req"] or {}).get("idempotency_key"))
        x = began.get(op["resp"]["session_id"])
        for b in by_key.get(key, []):
            y = b["new_session"]
            e = ended.get(y)
            lease = e["old_lease"] if e else last_lease.get(y)
            if y == op["resp"]["session_id"] or lease is None:
                continue
            if x is not None:  # when the database made X, Y (its key's) was live: its clock
                live = b["at_ms"] < x["at_ms"] < min(lease, e["at_ms"] if e else lease + 1)
            else:
                live = c.mono(b["at_ms"]) < op["t0"] - TOL_S and c.mono(lease) > op["t1"] + TOL_S \
                    and (e is None or c.mono(e["at_ms"]) > op["t1"] + TOL_S)
            if live:
                c.v("keyed retry not replayed",
                    "claim with key %s (tenant %s) sent %.2f answered %s, but %s of that key "
                    "began at %.2f and still lived" % (
                        key[1], key[0], op["t0"] - c.h.mono0, op["resp"]["session_id"], y,
                        c.mono(b["at_ms"]) - c.h.mono0))


def unknown_replayed(c, began):
    """How many claims answered outcome unknown made a session that a keyed
    retry then got (replayed): the cut COMMIT's path, counted."""
    made = {}
    for sid, b in began.items():
        if b.get("new_key"):
            made[(b["new_tenant"], b["new_key"])] = sid
    replays = collections.defaultdict(list)   # (tenant, session) -> replayed 201s' sends
    for o in c.h.ops:
        if o["kind"] == "claim" and o["status"] == 201 and o["replayed"]:
            replays[(o.get("tenant"), o["resp"]["session_id"])].append(o["t0"])
    unknown = replayed = 0
    for op in c.h.ops:
        if op["kind"] != "claim" or not outcome_unknown(op):
            continue
        key = (op.get("tenant"), (op["req"] or {}).get("idempotency_key"))
        unknown += 1
        sid = made.get(key)
        if sid and any(t > op["t0"] for t in replays.get((key[0], sid), [])):
            replayed += 1
    return unknown, replayed


STALE_KINDS = ("stale_renew", "stale_release", "foreign_renew", "foreign_release", "foreign_get")


def check_stale(c):
    for op in c.h.ops:
        if op["kind"] not in STALE_KINDS or op["status"] is None:
            continue
        st = op["status"]
        wrong = 200 <= st < 300 or (op["kind"].startswith("foreign") and 400 <= st < 500 and
                                    st != 403) or \
            (op["kind"].startswith("stale") and 400 <= st < 500 and st not in (409, 410))
        if wrong:
            c.v("stale or foreign token honoured",
                "%s %s (session %s, node %d, sent %.2f) answered %d %s" % (
                    op["method"], op["path"], op.get("sid"), op["node"], op["t0"] - c.h.mono0,
                    st, code_of(op) or ""))
    for smp in c.h.samples:
        for r in smp["rows"]:
            lease = r.get("lease_expires_at_ms")
            if r.get("session_id") and lease and \
                    lease - smp["db_ms"] > HONEST_LEASE_MS + TOL_S * 1000:
                c.v("lease past any asked for",
                    "%s on %s: lease %.1f s ahead at %.2f (at most %d s asked honestly)" % (
                        r["session_id"], r["id"], (lease - smp["db_ms"]) / 1000.0,
                        smp["a"] - c.h.mono0, HONEST_LEASE_MS // 1000))


def check(c, ses, began, ended, spawns):
    check_max_sessions(c, began, ended)
    check_claim_rate(c, spawns)
    check_waiters(c)
    check_outcomes(c, ses, began, ended)
    check_stale(c)


# ---------------------------------------------------------------- self-test

def raw_op(h, kind, t0, t1, status, node=0, tenant="acme", req=None, resp=None, sid=None,
           replayed=False, path="/v1/sessions", method="POST"):
    h.add_op({"kind": kind, "thread": "t", "node": node, "method": method, "path": path,
              "req": req if req is not None else {}, "status": status, "replayed": replayed,
              "err": None if status else "timed out", "timeout": 15.0, "tenant": tenant,
              "sid": sid, "t0": t0, "t1": t1, "resp": resp})


def error(code):
    return {"error": {"code": code}}


def self_test_cases(t):
    """Hand-made histories for these checks, each a case of the nemesis'
    self-test: (history, the violation it must find or None[, spawns])."""
    clean, claim, audit_claim, audit_end = t["clean"], t["claim"], t["audit_claim"], t["audit_end"]
    hb, sample, row = t["hb"], t["sample"], t["row"]
    cases = {}

    def many(h, n, lease_s, first_lease_s=None):
        for i in range(n):
            cid = "m%d" % i
            hb(h, 19.5, [cid])
            ls = first_lease_s if (i == 0 and first_lease_s) else lease_s
            claim(h, 20.0 + i * 0.2, 20.1 + i * 0.2, "sm%d" % i, cid, 1, ls)
            audit_claim(h, 20.05 + i * 0.2, "sm%d" % i, cid, 1, ls)
        return h

    cases["acme's 5th session"] = (many(clean(), max_sessions("acme"), 60),
                                   "tenant over max_sessions")
    # s4 (clean's, live to 60) and 4 more: one over; with the first of the
    # new ones over at 20.5, the last (20.85) is the 4th live.
    cases["5th, one expired"] = (many(clean(), max_sessions("acme"), 60, first_lease_s=20.5),
                                 None)

    def bravo(h, times):
        for i, t0 in enumerate(times):
            raw_op(h, "claim", t0, t0 + 0.1, 429, tenant="bravo", resp=error("quota_exceeded"))
        raw_op(h, "claim", 20.05, 20.1, 429, tenant="bravo", resp=error("rate_limited"))
        return h

    cases["bravo 2 claims in 0.4 s"] = (bravo(clean(), [20.0, 20.3]), "tenant over claims_per_s")
    cases["bravo 2 claims, node restarted"] = (bravo(clean(), [20.0, 20.3]), None, {0: [20.2]})
    cases["bravo 2 claims in 1.1 s"] = (bravo(clean(), [20.0, 21.0]), None)

    h = clean()
    raw_op(h, "limits", 20.0, 20.1, 200, tenant=None, method="GET", path="/v1/limits",
           resp={"tenant": "delta", "max_waiters": 1, "waiting": 2})
    cases["delta 2 waiting"] = (h, "tenant over max_waiters")

    def made(h, status, code, retry=None):
        hb(h, 19.5, ["c9"])
        raw_op(h, "claim", 20.0, 20.3, status, req={"idempotency_key": "k9"},
               resp=error(code) if code else None)
        audit_claim(h, 20.1, "s20", "c9", 1, 60, key="k9")
        if retry:
            cid = "c9" if retry[0] == "s20" else "c8"
            hb(h, 20.4, [cid])
            raw_op(h, "claim", 20.8, 20.9, 201, req={"idempotency_key": "k9"}, replayed=retry[1],
                   resp={"session_id": retry[0], "container_id": cid, "token": 1,
                         "lease_expires_at_ms": t["base_ms"] + 60000})
            if retry[0] != "s20":
                audit_claim(h, 20.85, retry[0], "c8", 1, 60, key="k9")
        rows = [row("c1", "s4", 13, 60), row("c9", "s20", 1, 60)]
        if retry and retry[0] != "s20":
            rows.append(row("c8", retry[0], 1, 60))
        sample(h, 21.0, rows)
        return h

    cases["made, answered no_capacity"] = (made(clean(), 503, "no_capacity"),
                                           "session made, no outcome-unknown answer")
    cases["made, answered 503 unavailable"] = (made(clean(), 503, "unavailable"), None)

    def made_late(h, released_s, key=None, lease_end=60):
        """An unkeyed claim answered 503 unavailable at 20.3 whose statement
        commits at 23.0, after the answer, its lease to lease_end; ended
        released_s later."""
        hb(h, 19.5, ["c9"])
        raw_op(h, "claim", 20.0, 20.3, 503, req={"idempotency_key": key} if key else {},
               resp=error("unavailable"))
        audit_claim(h, 23.0, "s20", "c9", 1, lease_end, key=key)
        if released_s is not None:
            audit_end(h, 23.0 + released_s, "s20", "c9", 1, lease_end)
        return h

    cases["made after its answer, released"] = (made_late(clean(), 0.7), None)
    cases["made after its answer, kept"] = (made_late(clean(), None),
                                            "session made after its claim's answer, not released")
    cases["made after its answer, released late"] = (
        made_late(clean(), 8.0), "session made after its claim's answer, not released")
    cases["made after its answer, keyed"] = (made_late(clean(), None, key="k9"), None)
    # A lease of 1.7 s, reaped 5.7 s after it ended (slow fsync): held 1.7 s.
    cases["made after its answer, reaped late"] = (made_late(clean(), 7.4, lease_end=24.7), None)
    cases["made, no answer"] = (made(clean(), None, None), None, None, {0: [(19.9, 20.5)]})
    cases["made, keyed retry replayed"] = (made(clean(), 503, "unavailable", ("s20", True)), None)
    cases["made, keyed retry a new one"] = (made(clean(), 503, "unavailable", ("s21", False)),
                                            "keyed retry not replayed")

    def stale(h, kind, status, code=None):
        raw_op(h, kind, 18.0, 18.1, status, sid="s4", resp=error(code) if code else None,
               method="DELETE", path="/v1/sessions/s4?token=12")
        return h

    cases["stale release 409, foreign 403"] = (
        stale(stale(clean(), "stale_release", 409, "stale_token"), "foreign_renew", 403,
              "forbidden"), None)
    cases["stale release 204"] = (stale(clean(), "stale_release", 204),
                                  "stale or foreign token honoured")
    h = stale(clean(), "stale_release", 409, "stale_token")
    audit_end(h, 18.05, "s4", "c1", 13, 60)  # answered 409, yet it ended s4
    cases["stale release 409, ended it"] = (h, "acknowledged session ended early")
    cases["foreign renew 404"] = (stale(clean(), "foreign_renew", 404, "not_found"),
                                  "stale or foreign token honoured")
    h = clean()  # a stale renew answered 409, and s4's lease 300 s ahead after it
    stale(h, "stale_renew", 409, "stale_token")
    sample(h, 19.0, [row("c1", "s4", 13, 19.0 + STALE_LEASE_MS / 1000.0)])
    cases["stale renew moved the lease"] = (h, "lease past any asked for")
    return cases
