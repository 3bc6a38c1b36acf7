"""The nemesis checker against hand-made histories, one per kind of violation
(tests/fault/nemesis_test.py --self-test; ctest fault/nemesis_checker)."""

import nemesis_events
import nemesis_faults
import nemesis_limits
from nemesis_checker import Checker
from nemesis_common import BOUND_S, History
from nemesis_limits import DEFAULT_QUOTA as QUOTA

# ---------------------------------------------------------------- self-test

def self_test():
    """Hand-made histories, one per kind of violation; each must be found,
    and a clean history must pass."""
    base_ms = 1_800_000_000_000

    def mk():
        h = History()
        h.mono0, h.wall0, h.db_offset_ms = 0.0, base_ms / 1000.0, 0.0
        return h

    def claim(h, t0, t1, sid, cid, token, lease_s, tenant="acme", key=None, node=0,
              replayed=False, slot=0):
        req = {"region": "r0", "pool": "p"}
        if key:
            req["idempotency_key"] = key
        h.add_op({"kind": "claim", "thread": "t", "node": node, "method": "POST",
                  "path": "/v1/sessions", "req": req, "status": 201, "replayed": replayed,
                  "err": None, "timeout": BOUND_S, "tenant": tenant, "t0": t0, "t1": t1,
                  "resp": {"session_id": sid, "container_id": cid, "token": token, "slot": slot,
                           "lease_expires_at_ms": base_ms + int(lease_s * 1000)}})

    def release(h, t0, t1, sid, status=204):
        h.add_op({"kind": "release", "thread": "t", "node": 1, "method": "DELETE",
                  "path": "/v1/sessions/" + sid, "req": None, "status": status,
                  "replayed": False, "err": None, "timeout": BOUND_S, "sid": sid, "t0": t0,
                  "t1": t1, "resp": None})

    def audit_claim(h, at_s, sid, cid, token, lease_s, tenant="acme", key=None):
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": None,
                        "old_gen": token - 1, "old_lease": None, "old_hb": 0,
                        "old_dead_reported": False, "new_session": sid, "new_gen": token,
                        "new_status": "picked", "new_lease": base_ms + int(lease_s * 1000),
                        "new_tenant": tenant, "new_key": key})

    def audit_end(h, at_s, sid, cid, token, lease_s, status="available", hb_s=None):
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": sid,
                        "old_gen": token, "old_lease": base_ms + int(lease_s * 1000),
                        "old_hb": base_ms + int((at_s if hb_s is None else hb_s) * 1000),
                        "old_dead_reported": False, "new_session": None, "new_gen": token,
                        "new_status": status, "new_lease": None})

    def audit_dead(h, at_s, cid, hb_s):
        """A container without a session made dead."""
        h.audit.append({"at_ms": base_ms + int(at_s * 1000), "id": cid, "old_session": None,
                        "old_gen": 1, "old_lease": None, "old_hb": base_ms + int(hb_s * 1000),
                        "old_dead_reported": False, "new_session": None, "new_gen": 1,
                        "new_status": "dead", "new_lease": None})

    def op(h, kind, t, status, method, path, ids, req=None, sid=None, node=0):
        h.add_op({"kind": kind, "thread": "t", "node": node, "method": method, "path": path,
                  "req": req, "status": status, "replayed": False, "err": None,
                  "timeout": BOUND_S, "sid": sid, "ids": ids, "t0": t, "t1": t + 0.05,
                  "resp": None})

    def hb(h, t, cids, status=202):
        op(h, "heartbeat", t, status, "POST", "/v1/heartbeats", cids,
           {"heartbeats": [{"container_id": c, "state": "ready"} for c in cids]})

    def admin(h, kind, t, cid, status=200):
        op(h, kind, t, status, "POST", "/v1/containers/%s/%s" % (cid, kind), [cid])

    def sample(h, t, rows, quota=None):
        h.samples.append({"a": t, "b": t + 0.01, "db_ms": base_ms + int(t * 1000),
                          "rows": rows, "quota": quota or {}, "offset_ms": 0})

    def row(cid, sid, token, lease_s, tenant="acme"):
        return {"id": cid, "status": "picked" if sid else "available", "generation": token,
                "session_id": sid, "tenant": tenant if sid else None, "idempotency_key": None,
                "lease_expires_at_ms": base_ms + int(lease_s * 1000) if sid else None,
                "last_heartbeat_ms": base_ms, "drain_requested": False}

    def clean():
        """Two sessions on c1 one after the other (release, then a death after
        silence), a key replayed, a lease that expired, all sampled."""
        h = mk()
        op(h, "register", 0.0, 200, "POST", "/v1/containers", ["c1"],
           {"containers": [{"id": "c1"}]})
        for t in (0.5, 2.5, 4.5, 12.5, 14.5, 16.5):  # c1 silent from 4.5 to 12.5
            hb(h, t, ["c1"])
        claim(h, 1.0, 1.1, "s1", "c1", 10, 60, key="k1")
        audit_claim(h, 1.05, "s1", "c1", 10, 60, key="k1")
        claim(h, 1.5, 1.6, "s1", "c1", 10, 60, key="k1", replayed=True)
        sample(h, 2.0, [row("c1", "s1", 10, 60)], {"acme": 1})
        release(h, 3.0, 3.1, "s1")
        audit_end(h, 3.05, "s1", "c1", 10, 60)
        claim(h, 4.0, 4.1, "s2", "c1", 11, 60, key="k1")
        audit_claim(h, 4.05, "s2", "c1", 11, 60, key="k1")
        sample(h, 5.0, [row("c1", "s2", 11, 60)], {"acme": 1})
        audit_end(h, 12.0, "s2", "c1", 11, 60, status="dead", hb_s=5.0)  # silent 7 s
        claim(h, 13.0, 13.1, "s3", "c1", 12, 15.0)
        audit_claim(h, 13.05, "s3", "c1", 12, 15.0)
        audit_end(h, 15.2, "s3", "c1", 12, 15.0)                     # expired
        claim(h, 16.0, 16.1, "s4", "c1", 13, 60)
        audit_claim(h, 16.05, "s4", "c1", 13, 60)
        sample(h, 17.0, [row("c1", "s4", 13, 60)], {"acme": 1})
        return h

    cases = {"clean": (clean(), None)}

    h = clean()  # another node's early end of s4 (no release, lease not over), then s5
    audit_end(h, 18.0, "s4", "c1", 13, 60)
    claim(h, 19.0, 19.1, "s5", "c1", 14, 60, tenant="bravo", node=2)
    audit_claim(h, 19.05, "s5", "c1", 14, 60)
    cases["overlap"] = (h, "overlapping holds")

    h = clean()  # the dead sweep ends s4 though its container spoke 1 s before
    audit_end(h, 18.0, "s4", "c1", 13, 60, status="dead", hb_s=17.0)
    cases["premature death"] = (h, "acknowledged session ended early")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 0, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": 500, "replayed": False, "err": None, "timeout": BOUND_S,
              "sid": "s4", "t0": 18.0, "t1": 18.1, "resp": {"error": {"code": "internal"}}})
    cases["500"] = (h, "5xx other than 503")

    h = clean()
    sample(h, 3.5, [row("c1", "s1", 10, 60)], {"acme": 1})  # released at 3.1, live at 3.5
    cases["release lost"] = (h, "acknowledged release lost")

    h = clean()
    claim(h, 20.0, 20.1, "s6", "c2", 5, 60)               # s6 never in the database
    cases["claim lost"] = (h, "acknowledged session lost")

    h = clean()
    claim(h, 20.0, 20.1, "s6", "c1", 9, 60)  # after s4's token 13 was answered
    audit_claim(h, 20.05, "s6", "c1", 9, 60)
    cases["token down"] = (h, "token did not grow")

    h = clean()
    sample(h, 18.0, [row("c1", "s4", 13, 60)], {"acme": QUOTA + 1})
    cases["quota"] = (h, "quota exceeded")

    h = clean()
    claim(h, 5.0, 5.2, "s9", "c3", 20, 60, key="k1")  # k1 while s2 (k1) lives
    audit_claim(h, 5.1, "s9", "c3", 20, 60)
    cases["one key two sessions"] = (h, "one key two sessions")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 2, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": None, "replayed": False, "err": "timed out",
              "timeout": BOUND_S, "sid": "s4", "t0": 20.0, "t1": 20.0 + BOUND_S, "resp": None})
    cases["unanswered"] = (h, "no answer")

    h = clean()
    h.add_op({"kind": "get", "thread": "t", "node": 2, "method": "GET", "path": "/v1/sessions/s4",
              "req": None, "status": None, "replayed": False, "err": "timed out",
              "timeout": BOUND_S, "sid": "s4", "t0": 20.0, "t1": 20.0 + BOUND_S, "resp": None})
    cases["unanswered, node paused"] = (h, None)

    def on_c2(h, lease_s=25.0):
        hb(h, 18.5, ["c2"])
        claim(h, 19.0, 19.1, "s5", "c2", 3, lease_s)
        audit_claim(h, 19.05, "s5", "c2", 3, lease_s)
        return h

    h = on_c2(clean())  # its lease to 25.0 ended by the database at 24.6
    audit_end(h, 24.6, "s5", "c2", 3, 25.0)
    cases["reaper 0.4 s early"] = (h, "acknowledged session ended early")

    h = on_c2(clean())  # swept dead after 5.6 s of silence on the database's clock
    audit_end(h, 24.1, "s5", "c2", 3, 60, status="dead", hb_s=18.5)
    cases["dead 0.4 s early"] = (h, "acknowledged session ended early")

    h = clean()  # s2's container got 202s at 8 and 10, never written: dead at 12
    hb(h, 8.0, ["c1"])
    hb(h, 10.0, ["c1"])
    cases["reporting, session dead"] = (h, "death of a reporting container")

    h = clean()  # s2's container reporting through an outage (503s): dead at 12
    for t in (7.0, 9.0, 11.0):
        hb(h, t, ["c1"], status=503)
    cases["reporting, server deaf"] = (h, "death of a reporting container")

    h = clean()  # c2, with no session, reporting every second and made dead
    for t in range(18, 24):
        hb(h, float(t), ["c2"])
    audit_dead(h, 24.0, "c2", hb_s=17.0)
    cases["reporting, made dead"] = (h, "death of a reporting container")

    def lost(node):  # c2's reports after 17 lost in node 2 (paused 19 to 30)
        h = clean()
        hb(h, 17.0, ["c2"])
        op(h, "heartbeat", 21.0, None, "POST", "/v1/heartbeats", ["c2"], node=node,
           req={"heartbeats": [{"container_id": "c2", "state": "ready"}]})
        audit_dead(h, 23.5, "c2", hb_s=17.0)
        return h

    cases["reports lost in a paused node"] = (lost(2), None, None, {2: [(19.0, 30.0)]})
    cases["reports unanswered by a node up"] = (lost(1), "death of a reporting container", None,
                                                {2: [(19.0, 30.0)]})

    def silent_then_back(outage=None):
        """c2 silent from 10 to 17 (7 s, more than dead-after), reporting
        again at 17 and 18, made dead at 19 by its old stamp; with an
        outage of the database over part of that silence."""
        h = clean()
        for t in (10.0, 17.0, 18.0):
            hb(h, t, ["c2"])
        if outage:
            h.actions.append({"kind": "outage", "node": None, "start": outage[0],
                              "end": outage[1], "detail": "database primary down"})
        audit_dead(h, 19.0, "c2", hb_s=10.0)
        return h

    paused_then = {2: [(16.0, 25.0)]}  # holds the sweep's hearing back
    cases["silence judged late, a node paused"] = (silent_then_back(), None, None, paused_then)
    cases["silence judged late, no node paused"] = (silent_then_back(),
                                                    "death of a reporting container")
    cases["silence mostly an outage, judged late"] = (
        silent_then_back((10.5, 16.5)), "death of a reporting container", None, paused_then)

    h = clean()  # c2 last heard at 10, claimed at 20
    hb(h, 10.0, ["c2"])
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["claim of silent"] = (h, "claim of a silent container")

    def drained(h):
        hb(h, 19.5, ["c2"])
        admin(h, "drain", 18.0, "c2")
        return h

    h = drained(clean())
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["claim of drained"] = (h, "claim of a drained container")

    h = drained(clean())
    admin(h, "undrain", 19.0, "c2")
    claim(h, 20.0, 20.1, "s7", "c2", 3, 60)
    audit_claim(h, 20.05, "s7", "c2", 3, 60)
    cases["drained, undrained"] = (h, None)

    h = clean()  # s3 (expired at 15.2) replayed at 16.5 saying it lasts to 60
    claim(h, 13.2, 16.5, "s3", "c1", 12, 60, replayed=True)
    cases["replay after the end"] = (h, "overlapping holds")

    h = clean()  # a renew of s4 answered 410: gone, c1 free for s5
    h.add_op({"kind": "renew", "thread": "t", "node": 0, "method": "POST",
              "path": "/v1/sessions/s4/renew", "req": {"token": 13, "lease_ms": 9000},
              "status": 410, "replayed": False, "err": None, "timeout": BOUND_S, "sid": "s4",
              "t0": 17.5, "t1": 17.6, "resp": {"error": {"code": "session_ended"}}})
    claim(h, 18.0, 18.1, "s5", "c1", 14, 60, tenant="bravo")
    audit_claim(h, 18.05, "s5", "c1", 14, 60)
    sample(h, 19.0, [row("c1", "s5", 14, 60, tenant="bravo")], {"bravo": 1})
    cases["410 is gone"] = (h, None)

    def on_two_slots(slots):
        """After clean(): claims of c-r0-1 (2 slots), one a slot of `slots`,
        none released."""
        h = clean()
        two = "c-r0-1"
        hb(h, 16.8, [two])
        for i, slot in enumerate(slots):
            tenant = ("bravo", "corvus")[i % 2]
            claim(h, 17.2 + i * 0.2, 17.3 + i * 0.2, "m%d" % i, two, 20 + i, 60, tenant=tenant,
                  slot=slot)
            audit_claim(h, 17.25 + i * 0.2, "m%d" % i, two, 20 + i, 60, tenant=tenant)
        return h
    cases["two slots, two holds"] = (on_two_slots([0, 1]), None)
    cases["one slot, two holds"] = (on_two_slots([1, 1]), "overlapping holds")
    cases["three on two slots"] = (on_two_slots([0, 1, 0]), "container over its slots")
    cases["a slot it lacks"] = (on_two_slots([2]), "slot out of range")
    paused = {2: [(19.0, 30.0)]}
    helpers = dict(clean=clean, claim=claim, audit_claim=audit_claim, audit_end=audit_end, op=op,
                   hb=hb, sample=sample, row=row, base_ms=base_ms)
    cases.update(nemesis_limits.self_test_cases(helpers))
    cases.update(nemesis_faults.self_test_cases(helpers))

    passed = failed = 0
    for name, (h, want, *extra) in cases.items():
        down = extra[1] if len(extra) > 1 else paused if name == "unanswered, node paused" else None
        c = Checker(h, nodes_down=down, spawns=extra[0] if extra else None)
        found = c.check()
        kinds = {k for k, _ in found}
        ok = (not found) if want is None else (want in kinds)
        if ok:
            passed += 1
        else:
            failed += 1
        print("nemesis self-test: %-24s %s%s" % (name, "ok" if ok else "FAILED",
                                                  "" if ok else ": found %s" % found))
    for name, read, db, want in nemesis_events.self_test_cases():
        kinds = {k for k, _ in nemesis_events.check(read, db)}
        ok = (not kinds) if want is None else (want in kinds)
        passed, failed = passed + ok, failed + (not ok)
        print("nemesis self-test: %-24s %s%s" % (name, "ok" if ok else "FAILED",
                                                  "" if ok else ": found %s" % kinds))
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1
