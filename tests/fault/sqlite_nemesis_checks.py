"""The SQLite nemesis' checker (tests/fault/sqlite_nemesis_test.py): the
PostgreSQL nemesis' checks that need only the clients' record (claims of
silent or drained containers, the claim rate, waiters and stale or foreign
tokens, unanswered requests and 5xx), and, instead of the database's audit,
which on SQLite would be stamped by the very clock the nemesis steps:

  holds by the client's clock: a session's hold lasts from its 201 to the
      latest lease granted as the client measures it (the acknowledged
      claim's or renew's send time plus its lease_ms; a renew unanswered
      after it may have shortened it), its release sent, or a 404/409/410
      about it. Another session's 201 on that container's slot inside it,
      or one while the container's slots are all held, is a violation,
      unless the container may have been silent for --dead-after-ms
      meanwhile (the clients' record of what was sent);
  deaths seen: a container listed dead (GET /v1/containers, polled) while
      its agent kept sending heartbeats naming it for two dead-afters before,
      with no planned silence, is a reporting container made dead;
  max_sessions as the node reports it (GET /v1/limits, polled).
"""

import collections

import nemesis_limits
import nemesis_slots
from nemesis_checker import Checker


class SqliteChecker(Checker):
    def __init__(self, hist, silences, start, **kw):
        super().__init__(hist, **kw)
        self.silences = silences   # (container, start, end) each agent planned
        self.start = start         # the workload's start

    def check(self):
        ses = self.sessions_by_client()
        self.check_holds(ses)
        _, _, maybe = self.heard()
        self.check_claims(maybe)
        self.check_seen_dead()
        nemesis_limits.check_claim_rate(self, self.spawns)
        nemesis_limits.check_waiters(self)
        nemesis_limits.check_stale(self)
        self.check_limits_sessions()
        self.check_answers()
        return self.violations

    def sessions_by_client(self):
        """A replay extends no lease: its grant is from the first claim of
        its key sent (the session was made no earlier)."""
        first_sent = {}
        for op in self.h.ops:
            key = (op.get("tenant"), (op["req"] or {}).get("idempotency_key"))
            if op["kind"] == "claim" and key[1]:
                first_sent[key] = min(first_sent.get(key, op["t0"]), op["t0"])
        ses = {}
        for op, r in self.granted():
            s = ses.setdefault(r["session_id"], {
                "sid": r["session_id"], "cid": r["container_id"], "slot": r.get("slot", 0),
                "start": op["t1"], "grants": [], "inflight": [], "ends": [], "first": op})
            s["start"] = min(s["start"], op["t1"])
            sent = op["t0"]
            if op["replayed"]:
                sent = first_sent.get((op.get("tenant"), op["req"].get("idempotency_key")),
                                      float("-inf"))
            s["grants"].append((op["t1"], sent + op["req"]["lease_ms"] / 1000.0))
        for op in self.h.ops:
            s = ses.get(op.get("sid"))
            if s is None:
                continue
            if op["kind"] == "renew":
                end = op["t0"] + op["req"]["lease_ms"] / 1000.0
                if op["status"] == 200:
                    s["grants"].append((op["t1"], end))
                elif op["status"] in (503, None):
                    s["inflight"].append((op["t0"], end))
            if op["kind"] == "release":
                s["ends"].append(op["t0"])
            if op["kind"] in ("release", "renew", "get") and op["status"] in (404, 409, 410):
                s["ends"].append(op["t1"])
        for s in ses.values():
            t_last, end = max(s["grants"])
            end = min([end] + [e for t0, e in s["inflight"] if t0 >= t_last - 1e-9])
            s["end"] = min([end] + s["ends"])
        return ses

    def maybe_silent(self, cid, t0, t1, maybe):
        """Could the server have judged cid silent (dead-after without a
        report taken) at some time in [t0, t1]? Leniently: a report taken at
        the earliest (its send), the next at the latest it may have been."""
        need = self.dead_after_ms / 1000.0 - 0.5
        ops = sorted((o for o in maybe.get(cid, []) if o["t0"] <= t1), key=lambda o: o["t0"])
        if not ops:
            return True
        for a, b in zip(ops, ops[1:] + [None]):
            last_take = self.taken_by(b) if b is not None else float("inf")
            if a["t0"] + need <= min(t1, last_take) and last_take >= t0:
                return True
        return False

    def check_holds(self, ses):
        """No slot held twice, no container over its slots (nemesis_slots),
        unless the container may have been judged silent meanwhile."""
        _, _, maybe = self.heard()
        nemesis_slots.check_holds(
            self, ses.values(),
            excused=lambda x, y: self.maybe_silent(x["cid"], x["start"], y["start"], maybe))

    def check_seen_dead(self):
        sent = collections.defaultdict(list)
        for op in self.h.ops:
            if op["kind"] == "heartbeat" and not (op["status"] and 400 <= op["status"] < 500):
                for cid in op.get("ids", []):
                    sent[cid].append(op["t0"])
        span = 2 * self.dead_after_ms / 1000.0
        told = set()
        for op in self.h.ops:
            if op["kind"] != "containers" or op["status"] != 200 or op["t0"] < self.start + span:
                continue
            for c in op["resp"].get("containers", []):
                cid = c["id"]
                if c["status"] != "dead" or cid in told:
                    continue
                if any(s < op["t1"] and e > op["t0"] - span - 5 for s_cid, s, e in self.silences
                       if s_cid == cid):
                    continue
                times = sorted(t for t in sent.get(cid, []) if op["t0"] - span <= t < op["t0"])
                gaps = [b - a for a, b in zip([op["t0"] - span] + times, times + [op["t0"]])]
                if times and max(gaps) < 3.0:
                    told.add(cid)
                    self.v("death of a reporting container",
                           "%s listed dead at %.2f; its agent sent %d heartbeats naming it in "
                           "the %.0f s before (largest gap %.1f s)" % (
                               cid, op["t0"] - self.h.mono0, len(times), span, max(gaps)))

    def check_limits_sessions(self):
        for op in self.h.ops:
            if op["kind"] == "limits" and op["status"] == 200 and isinstance(op["resp"], dict):
                r = op["resp"]
                if (r.get("sessions") or 0) > nemesis_limits.max_sessions(r.get("tenant")):
                    self.v("tenant over max_sessions", "node says %s holds %s sessions at %.2f"
                           % (r.get("tenant"), r.get("sessions"), op["t1"] - self.h.mono0))

    def check_answers(self):
        for op in self.h.ops:
            late = op["status"] is None or op["t1"] - op["t0"] > op["timeout"] + 0.5
            if late and not self.was_down(op["node"], op["t0"], op["t1"] + 0.5):
                self.v("no answer", "%s %s sent %.2f: %s after %.1f s" % (
                    op["method"], op["path"], op["t0"] - self.h.mono0,
                    op["err"] or "status %s" % op["status"], op["t1"] - op["t0"]))
            if op["status"] is not None and op["status"] >= 500 and op["status"] != 503:
                self.v("5xx other than 503", "%s %s at %.2f: %d %s" % (
                    op["method"], op["path"], op["t0"] - self.h.mono0, op["status"],
                    str(op["resp"])[:200]))


def self_test(history_class):
    """Hand-made histories: each check finds its violation, and the
    clean ones pass."""
    def mk(hb_times, silences=(), cid="c1"):
        h = history_class()
        h.mono0 = h.wall0 = 0.0
        for t in hb_times:
            add(h, "heartbeat", t, 202, ids=[cid], req={"heartbeats": []})
        return h, list(silences)

    def add(h, kind, t, status, **kw):
        op = {"kind": kind, "thread": "t", "node": 0, "method": "POST", "path": "/", "req": {},
              "status": status, "replayed": False, "err": None, "timeout": 15.0, "t0": t,
              "t1": t + 0.1, "resp": None}
        op.update(kw)
        h.add_op(op)

    def claim(h, t, sid, lease_s, cid="c1", slot=0):
        add(h, "claim", t, 201, tenant="acme", req={"lease_ms": int(lease_s * 1000)},
            resp={"session_id": sid, "container_id": cid, "token": 1, "slot": slot})

    every = [i * 0.5 for i in range(50)]
    cases = {}
    h, sil = mk(every)
    claim(h, 1.0, "x", 5.0)
    claim(h, 7.0, "y", 5.0)
    cases["one after the other"] = (h, sil, None)
    h, sil = mk(every)
    claim(h, 1.0, "x", 5.0)
    claim(h, 4.0, "y", 5.0)
    cases["overlap by the client's clock"] = (h, sil, "overlapping holds")
    h, sil = mk([0.5, 1.0, 1.5, 7.9, 8.4], [("c1", 1.6, 7.8)])
    claim(h, 1.0, "x", 20.0)
    claim(h, 8.0, "y", 5.0)
    cases["overlap after a silence"] = (h, sil, None)
    two = "c-r0-1"  # 2 slots (nemesis_slots.FLEET_SLOTS)
    h, sil = mk(every, cid=two)
    claim(h, 1.0, "x", 5.0, two, 0)
    claim(h, 2.0, "y", 5.0, two, 1)
    cases["two slots, two holds"] = (h, sil, None)
    h, sil = mk(every, cid=two)
    claim(h, 1.0, "x", 5.0, two, 1)
    claim(h, 2.0, "y", 5.0, two, 1)
    cases["one slot, two holds"] = (h, sil, "overlapping holds")
    h, sil = mk(every, cid=two)
    claim(h, 1.0, "x", 5.0, two, 0)
    claim(h, 2.0, "y", 5.0, two, 1)
    claim(h, 3.0, "z", 5.0, two, 2)
    cases["three holds on two slots"] = (h, sil, "container over its slots")
    h, sil = mk(every, cid=two)
    claim(h, 1.0, "x", 5.0, two, 2)
    cases["a slot it does not have"] = (h, sil, "slot out of range")
    h, sil = mk(every)
    add(h, "containers", 20.0, 200, resp={"containers": [{"id": "c1", "status": "dead"}]})
    cases["reporting, seen dead"] = (h, sil, "death of a reporting container")
    h, sil = mk(every, [("c1", 10.0, 17.0)])
    add(h, "containers", 20.0, 200, resp={"containers": [{"id": "c1", "status": "dead"}]})
    cases["silent, seen dead"] = (h, sil, None)
    h, sil = mk(every)
    add(h, "limits", 5.0, 200, resp={"tenant": "delta", "sessions": 3, "waiting": 0})
    cases["delta's 3 sessions"] = (h, sil, "tenant over max_sessions")
    failed = 0
    for name, (h, sil, want) in cases.items():
        kinds = {k for k, _ in SqliteChecker(h, sil, 0.0).check()}
        ok = not kinds if want is None else want in kinds
        failed += not ok
        print("sqlite nemesis self-test: %-30s %s" % (name, "ok" if ok else "FAILED: %s" % kinds))
    print("%d passed, %d failed" % (len(cases) - failed, failed))
    return 1 if failed else 0
