"""The nemesis test's checker: a pure function of the recorded history, the
database's samples and its audit (tests/fault/nemesis_test.py lists what it
finds)."""

import collections
import json

import nemesis_faults
import nemesis_limits
import nemesis_slots
from nemesis_common import DEAD_AFTER_MS, TOL_MS
from nemesis_heard import HeardChecks

# ---------------------------------------------------------------- checker

class Checker(HeardChecks):
    """Pure function of the recorded history, the samples and the audit."""

    def __init__(self, hist, dead_after_ms=DEAD_AFTER_MS, nodes_down=None, spawns=None):
        self.h = hist
        self.dead_after_ms = dead_after_ms
        self.spawns = spawns or {}   # node index -> when each of its lives began
        # node index -> [(start, end or None)]: paused or down
        self.nodes_down = nodes_down or {}
        self.violations = []  # (kind, detail)

    def v(self, kind, detail):
        self.violations.append((kind, detail))

    def mono(self, db_ms):
        return self.h.db_to_mono(db_ms)

    def was_down(self, node, t0, t1):
        return any(s <= t1 and (e is None or e >= t0) for s, e in self.nodes_down.get(node, []))

    def granted(self):
        """(op, reply) for each claim answered 201 with a body."""
        for op in self.h.ops:
            if op["kind"] == "claim" and op["status"] == 201 and isinstance(op["resp"], dict):
                yield op, op["resp"]

    def sessions(self):
        """Per acknowledged session: its claims' answers, renews, releases,
        and the earliest moment its hold can have ended, by the client's
        knowledge (release sent, lease end, a 404/409 about it)."""
        ses = {}
        for op, r in self.granted():
            s = ses.setdefault(r["session_id"], {
                "sid": r["session_id"], "cid": r["container_id"], "token": r["token"],
                "slot": r.get("slot", 0), "tenant": op.get("tenant"), "key": op["req"].get("idempotency_key"),
                "start": op["t1"], "answers": [], "releases": [], "renews": [],
                "gone": None, "gone_at": [], "first": op, "claims": []})
            s["claims"].append(op)
            s["start"] = min(s["start"], op["t1"])
            if op["t1"] <= s["first"]["t1"]:
                s["first"] = op
            s["answers"].append((op["t1"], r["lease_expires_at_ms"]))
            if r["container_id"] != s["cid"] or r["token"] != s["token"]:
                self.v("session answered two ways",
                       "session %s answered as %s/%d and %s/%d" % (
                           s["sid"], s["cid"], s["token"], r["container_id"], r["token"]))
        for op in self.h.ops:
            sid = op.get("sid")
            if sid not in ses:
                continue
            s = ses[sid]
            if op["kind"] == "release":
                s["releases"].append(op)
            elif op["kind"] == "renew":
                s["renews"].append(op)
                if op["status"] == 200 and isinstance(op["resp"], dict):
                    s["answers"].append((op["t1"], op["resp"]["lease_expires_at_ms"]))
            elif op["kind"] == "get" and op["status"] == 200 and isinstance(op["resp"], dict):
                s["answers"].append((op["t1"], op["resp"]["lease_expires_at_ms"]))
            if op["kind"] in ("release", "renew", "get") and op["status"] in (404, 409, 410):
                s["gone"] = op["t1"] if s["gone"] is None else min(s["gone"], op["t1"])
                s["gone_at"].append(op["t1"])
        for s in ses.values():
            # The lease as last acknowledged; a renew answered after that
            # (or not at all: it may have committed) may have set it to as
            # little as its send time plus its lease_ms.
            t_last, lease = max(s["answers"])
            end = self.mono(lease)
            for op in s["renews"]:
                if op["t1"] >= t_last and op["status"] in (200, 503, None):
                    end = min(end, op["t0"] + op["req"]["lease_ms"] / 1000.0)
            s["lease_by_client"] = end < self.mono(lease)  # a renew in flight
            s["lease_end"] = end
            s["lease_db_ms"] = lease
            sent = [op["t0"] for op in s["releases"]]
            s["release_sent"] = min(sent) if sent else None
            s["released_ack"] = min((op["t1"] for op in s["releases"] if op["status"] == 204),
                                    default=None)
        return ses

    def audit_timeline(self):
        """From the audit: per session, its start and its end in the database,
        and whether that end was one the rules allow without the client."""
        began, ended = {}, {}
        for a in self.h.audit:
            if a["new_session"]:
                began[a["new_session"]] = a
            if a["old_session"]:
                ended[a["old_session"]] = a
        return began, ended

    def end_ok(self, s, a):
        """Why the database's end `a` of session `s` was allowed, or None."""
        at = a["at_ms"]
        # Silence and lease ends are the database's own comparisons of its
        # own clock (the heartbeat stamp, the lease and the end all are
        # its): no slack. A release is the client's: converted, with slack.
        if a["new_status"] == "dead":
            if a["old_dead_reported"]:
                return "reported dead"
            if at - (a["old_hb"] or 0) >= self.dead_after_ms:
                return "silent %d ms" % (at - (a["old_hb"] or 0))
            return None
        if a["old_lease"] is not None and at >= a["old_lease"]:
            return "lease over"
        if s is not None and s["release_sent"] is not None and \
                s["release_sent"] <= self.mono(at) + TOL_MS / 1000.0:
            return "released"
        return None

    def check(self):
        ses = self.sessions()
        began, ended = self.audit_timeline()
        have_audit = bool(self.h.audit)
        # The hold's end: the client's knowledge, or the database's end when
        # it was a legitimate one the client could not know of (a death, an
        # expiry, a release in flight).
        for s in ses.values():
            ends = [s["lease_end"]]
            if s["release_sent"] is not None:
                ends.append(s["release_sent"])
            if s["gone"] is not None:
                ends.append(s["gone"])
            a = ended.get(s["sid"])
            s["db_end"] = a
            s["db_end_ok"] = self.end_ok(s, a) if a else None
            if a and s["db_end_ok"]:
                ends.append(self.mono(a["at_ms"]))
            s["end"] = min(ends)
        holds = list(ses.values())
        for s in ses.values():
            holds += [self.late_hold(s, op) for op in s["claims"] if op["t1"] > s["end"]]

        # 2. Acknowledged sessions in the database's history.
        if have_audit:
            for s in ses.values():
                b = began.get(s["sid"])
                if b is None:
                    self.v("acknowledged session lost",
                           "claim of %s (%s token %d, answered %.2f on node %s) is not in the "
                           "database's history" % (s["sid"], s["cid"], s["token"],
                                                   s["start"] - self.h.mono0, s["first"]["node"]))
                elif b["id"] != s["cid"] or b["new_gen"] != s["token"]:
                    self.v("acknowledged session lost",
                           "%s answered %s/%d, the database made it %s/%d" % (
                               s["sid"], s["cid"], s["token"], b["id"], b["new_gen"]))
                a = s["db_end"]
                if a and not s["db_end_ok"]:
                    self.v("acknowledged session ended early",
                           "%s on %s (tenant %s, claimed via node %s) ended at %.2f with status "
                           "%s: lease to %.2f (db %d), last heartbeat %d ms before, no release "
                           "sent before%s" % (
                               s["sid"], s["cid"], s["tenant"], s["first"]["node"],
                               self.mono(a["at_ms"]) - self.h.mono0, a["new_status"],
                               self.mono(a["old_lease"]) - self.h.mono0 if a["old_lease"] else -1,
                               a["old_lease"] or -1, a["at_ms"] - (a["old_hb"] or 0),
                               "" if s["release_sent"] is None else " (one sent at %.2f)"
                               % (s["release_sent"] - self.h.mono0)))

        # 1. Overlapping holds, per slot of a container, and no container
        # over its slots (nemesis_slots).
        nemesis_slots.check_holds(self, holds, describe=lambda x, y: (
            "%s slot %d: %s (token %d, held %.2f to %.2f, tenant %s) and %s (token %d, "
            "answered %.2f on node %s); the first's database end: %s" % (
                x["cid"], x.get("slot", 0), x["sid"], x["token"], x["start"] - self.h.mono0,
                x["end"] - self.h.mono0, x["tenant"], y["sid"], y["token"],
                y["start"] - self.h.mono0, y["first"]["node"], self.describe_end(x))))

        # 5. One idempotency key, two sessions live together.
        by_key = collections.defaultdict(list)
        for s in ses.values():
            if s["key"]:
                by_key[(s["tenant"], s["key"])].append(s)
        for (tenant, key), lst in by_key.items():
            lst.sort(key=lambda s: s["start"])
            for i, x in enumerate(lst):
                for y in lst[i + 1:]:
                    if y["start"] < x["end"] - 0.05:
                        self.v("one key two sessions",
                               "tenant %s key %s: %s (answered %.2f, live to %.2f) and %s "
                               "(answered %.2f)" % (
                                   tenant, key, x["sid"], x["start"] - self.h.mono0,
                                   x["end"] - self.h.mono0, y["sid"], y["start"] - self.h.mono0))

        # 3. Tokens grow per container: a claim's token is above every token
        # answered for that container before the claim was sent.
        claims = collections.defaultdict(list)
        for op in self.h.ops:
            if op["kind"] == "claim" and op["status"] == 201 and not op["replayed"] and \
                    isinstance(op["resp"], dict):
                claims[op["resp"]["container_id"]].append(op)
        for cid, lst in claims.items():
            for b in lst:
                for a in lst:
                    if a["t1"] < b["t0"] and a["resp"]["token"] >= b["resp"]["token"] and \
                            a["resp"]["session_id"] != b["resp"]["session_id"]:
                        self.v("token did not grow",
                               "%s: token %d (answered %.2f) then token %d (sent %.2f)" % (
                                   cid, a["resp"]["token"], a["t1"] - self.h.mono0,
                                   b["resp"]["token"], b["t0"] - self.h.mono0))
                        break

        # 2 and 4. The samples of the database; a session lost is told once.
        final_ms = None
        told = set()
        for smp in self.h.samples:
            live = {r["session_id"]: r for r in smp["rows"] if r["session_id"]}
            for tenant, n in smp["quota"].items():
                if n > nemesis_limits.max_sessions(tenant):
                    self.v("quota exceeded", "tenant %s holds %d live sessions (quota %d) at %.2f"
                           % (tenant, n, nemesis_limits.max_sessions(tenant),
                              smp["a"] - self.h.mono0))
            tdb = self.mono(smp["db_ms"])
            for s in ses.values():
                if s["released_ack"] is not None and s["released_ack"] < smp["a"] and \
                        s["sid"] in live:
                    self.v("acknowledged release lost",
                           "%s on %s released (204 at %.2f) is live at %.2f" % (
                               s["sid"], s["cid"], s["released_ack"] - self.h.mono0,
                               smp["a"] - self.h.mono0))
                if s["start"] >= smp["a"] or s["end"] <= smp["b"] + TOL_MS / 1000.0:
                    continue
                if s["lease_db_ms"] <= smp["db_ms"] or (
                        s["lease_by_client"] and s["lease_end"] <= tdb + TOL_MS / 1000.0):
                    continue  # over by the database's clock (or a renew's, in flight)
                r = live.get(s["sid"])
                if (r is None or r["generation"] != s["token"] or r["id"] != s["cid"]) and \
                        s["sid"] not in told:
                    told.add(s["sid"])
                    self.v("acknowledged session lost",
                           "%s (%s token %d, lease to %.2f) is not live with its token at %.2f: %s"
                           % (s["sid"], s["cid"], s["token"], s["lease_end"] - self.h.mono0,
                              smp["a"] - self.h.mono0, "gone" if r is None else
                              "%s/%s" % (r["id"], r["generation"])))
            final_ms = smp
        if final_ms is not None:
            self.check_admin(final_ms)
            for cid, lst in claims.items():
                row = next((r for r in final_ms["rows"] if r["id"] == cid), None)
                top = max(op["resp"]["token"] for op in lst)
                gen = row and row.get("container_generation", row["generation"])
                if row is not None and gen < top:
                    self.v("token did not grow", "%s: generation %d at the end, a token %d was "
                           "answered" % (cid, gen, top))

        # 7 and 8. Deaths and claims against who was heard.
        got, sent, maybe = self.heard()
        self.check_deaths(got, sent, maybe)
        self.check_claims(maybe)
        # 9 to 12. The tenants' limits, outcomes unknown, stale and foreign tokens.
        nemesis_limits.check(self, ses, began, ended, self.spawns)
        # 13. A commit whose synchronous wait was cancelled, acknowledged.
        nemesis_faults.check_not_durable(self)

        # 6. Every request answered within its bound, by a node not down.
        for op in self.h.ops:
            late = op["status"] is None or op["t1"] - op["t0"] > op["timeout"] + 0.5
            if late and not self.was_down(op["node"], op["t0"], op["t1"] + 0.5):
                self.v("no answer",
                       "%s %s to node %d sent %.2f: %s after %.1f s" % (
                           op["method"], op["path"], op["node"], op["t0"] - self.h.mono0,
                           op["err"] or "status %s" % op["status"], op["t1"] - op["t0"]))
            if op["status"] is not None and op["status"] >= 500 and op["status"] != 503:
                self.v("5xx other than 503", "%s %s to node %d at %.2f: %d %s" % (
                    op["method"], op["path"], op["node"], op["t0"] - self.h.mono0, op["status"],
                    json.dumps(op["resp"])[:200]))
        return self.violations

    def late_hold(self, s, op):
        """A 201 answered after its session's hold had ended (a replay that
        came late): the client holds the container again, from that answer
        to the lease it names, a release sent or a 404/409/410 after it."""
        ends = [self.mono(op["resp"]["lease_expires_at_ms"])]
        ends += [r["t0"] for r in s["releases"] if r["t0"] >= op["t1"]]
        ends += [g for g in s["gone_at"] if g >= op["t1"]]
        return dict(s, start=op["t1"], end=min(ends), first=op)

    def ends_by_cause(self):
        """How the database ended sessions (proof that expiry and the dead
        sweep fired): released, expired, swept dead, or not allowed."""
        ses = {s["sid"]: s for s in self.sessions().values()}
        n = collections.Counter()
        for a in self.h.audit:
            if not a["old_session"]:
                continue
            why = self.end_ok(ses.get(a["old_session"]), a)
            if why is None and a["old_session"] not in ses and a["new_status"] != "dead":
                why = "released"  # a session no client saw: nobody to wrong
            n["not allowed" if why is None else why.split(" ")[0]] += 1
        return n

    def describe_end(self, s):
        a = s["db_end"]
        if a is None:
            return "none recorded"
        return "%.2f status %s (%s)" % (self.mono(a["at_ms"]) - self.h.mono0, a["new_status"],
                                        s["db_end_ok"] or "NOT allowed: lease to db %s, last "
                                        "heartbeat %d ms before" % (
                                            a["old_lease"], a["at_ms"] - (a["old_hb"] or 0)))

