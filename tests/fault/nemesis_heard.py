"""The nemesis checker's checks against who was heard and what the admin
did: deaths of reporting containers, claims of silent or drained ones, the
end state of registrations, deletes and drains."""

import collections

from nemesis_common import TOL_MS


class HeardChecks:
    """Mixed into nemesis_checker.Checker (self.h, self.v, self.mono,
    self.dead_after_ms, self.nodes_down)."""

    def heard(self):
        """The clients' own record of who was heard: per container, the
        heartbeat requests naming it that got 202 (certainly taken), those
        sent and not refused with a 4xx (its agent was reporting, whether
        the server could hear or not), and every heartbeat or registration
        naming it not refused with a 4xx (it may have been taken)."""
        got = collections.defaultdict(list)
        sent = collections.defaultdict(list)
        maybe = collections.defaultdict(list)
        for op in self.h.ops:
            body = op["req"] if isinstance(op["req"], dict) else {}
            if op["kind"] == "heartbeat":
                ids = op.get("ids") or [i["container_id"] for i in body.get("heartbeats", [])]
            elif op["kind"] == "register":
                ids = [c["id"] for c in body.get("containers", [])]
            else:
                continue
            if op["status"] is not None and 400 <= op["status"] < 500:
                continue
            for cid in ids:
                maybe[cid].append(op)
                if op["kind"] == "heartbeat":
                    sent[cid].append(op)
                if op["kind"] == "heartbeat" and op["status"] == 202:
                    got[cid].append(op)
        return got, sent, maybe

    def check_deaths(self, got, sent, maybe):
        """7. A container made dead while its agent was reporting within the
        last dead-after: heartbeats naming it sent after the death less
        dead-after and before the death (converted from the database's
        clock, so with slack both ways), whether they got 202 (heard and
        still judged silent) or 503 or no answer (the server deaf: a node
        or the database down is no silence of the container's). But a
        report sent to a node paused or down could be taken only when that
        spell ended: if that was after the death, no node could have heard
        it (the others heard nothing, as from a silent container). And a
        real silence may be judged late (judged_late)."""
        tol = TOL_MS / 1000.0
        for a in self.h.audit:
            if a["new_status"] != "dead" or a["old_dead_reported"]:
                continue
            d = self.mono(a["at_ms"])
            since = d - self.dead_after_ms / 1000.0 + tol
            taken = [op for op in got.get(a["id"], []) if op["t0"] > since and op["t1"] < d - tol]
            tried = [op for op in sent.get(a["id"], []) if since < op["t0"] < d - tol and
                     self.first_take(op) < d - tol]
            if tried and not self.judged_late(maybe.get(a["id"], []), d):
                last = max(tried, key=lambda o: o["t0"])
                self.v("death of a reporting container",
                       "%s made dead at %.2f (session %s; its last heartbeat stamped %d ms "
                       "before); in the %.1f s before, %d heartbeats naming it were sent "
                       "(answers %s), %d of them got 202 and were answered before; the last "
                       "sent %.2f to node %d" % (
                           a["id"], d - self.h.mono0, a["old_session"],
                           a["at_ms"] - (a["old_hb"] or 0), self.dead_after_ms / 1000.0,
                           len(tried), dict(collections.Counter(str(o["status"]) for o in tried)),
                           len(taken), last["t0"] - self.h.mono0, last["node"]))

    # Faults that leave the whole fleet unable to write a heartbeat: time in
    # them is no silence of anyone's.
    FLEET_DEAF = ("outage", "failover", "pause_db_restart")

    def judged_late(self, sends, d):
        """True when a death at d judges a real silence that ended less than
        dead-after before it: between two of the container's reports (every
        heartbeat or registration naming it, at the earliest each could be
        taken) a gap of at least dead-after less the time the fleet could
        not write (FLEET_DEAF faults), and a node paused or down between
        that gap's end and d. The sweep judges silence only up to every live
        node's backlog, so a paused node holds every judgement back until it
        leaves the live set; the judgement then made is of that silence,
        though the container has spoken since (seen: silent 16 s through an
        outage's end, reporting again 2.1 s before a node paused 9 s left
        the live set and the sweep ran). Without the paused node, a report
        taken within dead-after still makes the death a violation."""
        dead_after = self.dead_after_ms / 1000.0
        takes = sorted(t for t in (self.first_take(o) for o in sends) if t < d)
        for a, b in reversed(list(zip(takes, takes[1:]))):
            if d - b > dead_after:
                return False
            if b - a - self.fleet_deaf(a, b) >= dead_after and self.node_down_within(b, d):
                return True
        return False

    def fleet_deaf(self, t0, t1):
        """Seconds of t0..t1 inside a FLEET_DEAF fault."""
        return sum(max(0.0, min(t1, x["end"]) - max(t0, x["start"]))
                   for x in self.h.actions if x["kind"] in self.FLEET_DEAF)

    def node_down_within(self, t0, t1):
        """A node paused or down at some time of t0..t1."""
        return any(s <= t1 and (e is None or e >= t0)
                   for spells in self.nodes_down.values() for s, e in spells)

    def first_take(self, o):
        """The earliest a request may have been taken: its send, or, sent
        to a node paused or down meanwhile, the end of that spell."""
        return self.after_spells(o["node"], o["t0"], o["t0"])

    def taken_by(self, o):
        """The latest a request may have been taken: its answer; one the
        client gave up on (no answer) sent to a node that was paused or down
        meanwhile, also the end of that spell, since a paused node reads the
        request still in its socket when it resumes (seen: a heartbeat timed
        out at 32.5 s, taken at 36.4 s when its node resumed, its container
        rightly claimed at 40.9 s)."""
        if o["status"] is not None:
            return o["t1"]
        return self.after_spells(o["node"], o["t0"], o["t1"])

    def after_spells(self, node, t0, t1):
        """t1, or the end of the latest spell the node was paused or down
        that overlaps t0..t1 when later (never, for a spell not ended)."""
        t = t1
        for s, e in self.nodes_down.get(node, []):
            if s <= t1 and (e is None or e >= t0):
                t = max(t, e if e is not None else float("inf"))
        return t

    def check_claims(self, maybe):
        """8. A claim (201, not a replay) of a container that could not have
        been heard for dead-after before the claim was sent, or that an
        operator drained (200 before the claim was sent) with no undrain nor
        delete sent since."""
        tol = TOL_MS / 1000.0
        admin = collections.defaultdict(list)
        for op in self.h.ops:
            if op["kind"] in ("drain", "undrain", "delete"):
                for cid in op.get("ids", []):
                    admin[cid].append(op)
        for op in self.h.ops:
            if op["kind"] != "claim" or op["status"] != 201 or op["replayed"] or \
                    not isinstance(op["resp"], dict):
                continue
            cid = op["resp"]["container_id"]
            last = max((min(self.taken_by(o), op["t1"]) for o in maybe.get(cid, [])
                        if o["t0"] < op["t1"]), default=None)
            if last is None or op["t0"] - last > self.dead_after_ms / 1000.0 + tol:
                self.v("claim of a silent container",
                       "%s claimed (%s, sent %.2f to node %d) though last heard %s" % (
                           cid, op["resp"]["session_id"], op["t0"] - self.h.mono0, op["node"],
                           "never" if last is None else "at %.2f at the latest"
                           % (last - self.h.mono0)))
            drains = [o for o in admin[cid] if o["kind"] == "drain" and o["status"] == 200
                      and o["t1"] < op["t0"]]
            if not drains:
                continue
            dr = max(drains, key=lambda o: o["t1"])
            if not any(o["kind"] in ("undrain", "delete") and o["t1"] > dr["t0"] and
                       o["t0"] < op["t1"] for o in admin[cid]):
                self.v("claim of a drained container",
                       "%s claimed (%s, sent %.2f to node %d), drained (200 at %.2f) and not "
                       "undrained" % (cid, op["resp"]["session_id"], op["t0"] - self.h.mono0,
                                      op["node"], dr["t1"] - self.h.mono0))

    def check_admin(self, smp):
        """Registrations, deletes, drains: the last one sent for an id, if
        acknowledged, is what the end state shows."""
        last = {}
        for op in sorted((o for o in self.h.ops
                          if o["kind"] in ("register", "drain", "undrain", "delete")),
                         key=lambda o: o["t0"]):
            for cid in op.get("ids", []):
                last[cid] = op
        rows = {r["id"]: r for r in smp["rows"]}
        for cid, op in last.items():
            if op["t1"] > smp["a"]:
                continue
            r = rows.get(cid)
            if op["kind"] == "register" and op["status"] == 200 and r is None:
                self.v("acknowledged registration lost", "%s registered at %.2f, absent at end"
                       % (cid, op["t1"] - self.h.mono0))
            if op["kind"] == "delete" and op["status"] == 204 and r is not None:
                self.v("acknowledged delete lost", "%s deleted at %.2f, present at end" % (
                    cid, op["t1"] - self.h.mono0))
            if op["kind"] == "drain" and op["status"] == 200 and r is not None and not (
                    r["status"] in ("draining", "dead") or
                    (r["status"] == "picked" and r["drain_requested"])):
                self.v("acknowledged drain lost", "%s drained at %.2f, %s at end" % (
                    cid, op["t1"] - self.h.mono0, r["status"]))
            if op["kind"] == "undrain" and op["status"] == 200 and r is not None and \
                    r["drain_requested"]:
                self.v("acknowledged undrain lost", "%s undrained at %.2f, still drained at end"
                       % (cid, op["t1"] - self.h.mono0))
