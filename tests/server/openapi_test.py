"""docs/openapi.json against the real binary (#15).

1. GET /openapi.json serves the document in the repository, byte for byte.
2. Every route and every documented error is driven once or more (keys of
   every role, bad bodies, unknown ids, stale tokens, an exhausted pool, a
   quota, a body over the limit, unknown paths and methods, HEAD), and every
   response is validated against the document (tests/server/openapi_validator.py):
   one the document does not describe fails the test.

    /usr/bin/python3 tests/server/openapi_test.py --bin build/edgealloc
"""
import argparse
import http.client
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import free_port, serve, stop, wait_answers  # noqa: E402
from openapi_validator import DOC, OpenApiValidator  # noqa: E402

ADMIN, ACME, BOLT, BOX = "adm-key", "acme-key", "bolt-key", "box-key"
RATE = "rate-key"  # a tenant with claims_per_s=1


class Client:
    def __init__(self, port, validator):
        self.port = port
        self.v = validator

    def __call__(self, method, target, key=None, body=None, want=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        h = dict(headers or {})
        if key:
            h["Authorization"] = "Bearer " + key
        data = body if body is None or isinstance(body, (str, bytes)) else json.dumps(body)
        if data:
            h.setdefault("Content-Type", "application/json")
        conn.request(method, target, body=data, headers=h)
        r = conn.getresponse()
        raw = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        conn.close()
        self.v.check(method, target, r.status, hdrs, raw)
        if want is not None and r.status != want:
            raise AssertionError("%s %s: %d, want %d: %r" % (method, target, r.status, want, raw[:300]))
        return r.status, hdrs, raw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    v = OpenApiValidator()
    with tempfile.TemporaryDirectory() as tmp:
        keys = os.path.join(tmp, "keys")
        with open(keys, "w") as f:
            f.write("%s admin\n%s tenant acme\n%s tenant bolt\n%s container w-*\n" % (ADMIN, ACME, BOLT, BOX))
            f.write("%s tenant slow claims_per_s=1 max_sessions=5 max_waiters=3\n" % RATE)
        port = free_port()
        log = open(os.path.join(tmp, "server.log"), "w")
        proc = serve(args.bin, os.path.join(tmp, "x.db"), port,
                     ["--keys", keys, "--max-sessions-per-tenant", "2", "--max-body-bytes", "4096",
                      "--mirror-refresh-ms", "50", "--history-interval-ms", "100",
                      "--backup-region", "weur=eeur"],
                     stdout=log, stderr=log)
        try:
            wait_answers(port, "/healthz", timeout=5)
            run(Client(port, v))
        finally:
            stop(proc, timeout=30)
            log.close()
    print("ok " + v.summary())


def run(c):
    # Operations, and HEAD on them.
    for path in ("/healthz", "/readyz", "/metrics", "/dashboard", "/openapi.json"):
        c("GET", path, want=200)
        c("HEAD", path, want=200)
    _, _, raw = c("GET", "/openapi.json", want=200)
    with open(DOC, "rb") as f:
        if raw != f.read():
            raise AssertionError("GET /openapi.json is not docs/openapi.json")
    # Containers (admin).
    fleet = {"containers": [{"id": "w-1", "region": "weur", "pool": "chrome", "latency_ms": 3,
                             "data": {"endpoint": "ws://w1"}},
                            {"id": "w-2", "region": "weur", "pool": "chrome"},
                            {"id": "w-3", "region": "weur", "pool": "chrome"}]}
    c("POST", "/v1/containers", ADMIN, fleet, want=200)
    c("POST", "/v1/containers", None, fleet, want=401)
    c("POST", "/v1/containers", "nobody", fleet, want=401)
    c("POST", "/v1/containers", ACME, fleet, want=403)
    c("POST", "/v1/containers", ADMIN, "{not json", want=400)
    c("POST", "/v1/containers", ADMIN, {"containers": [{"region": "weur"}]}, want=400)
    c("POST", "/v1/containers", ADMIN, {"containers": [{"id": "d", "region": "weur"}, {"id": "d", "region": "weur"}]}, want=400)
    c("POST", "/v1/containers", ADMIN, "x" * 5000, want=413)
    c("GET", "/v1/containers/w-1", ADMIN, want=200)
    c("HEAD", "/v1/containers/w-1", ADMIN, want=200)
    c("GET", "/v1/containers/nope", ADMIN, want=404)
    c("GET", "/v1/containers/w-1", ACME, want=403)
    c("POST", "/v1/containers/nope/drain", ADMIN, want=404)
    c("POST", "/v1/containers/nope/undrain", ADMIN, want=404)
    c("POST", "/v1/containers/w-1/undrain", ACME, want=403)
    # Sessions (tenant).
    claim = {"region": "weur", "pool": "chrome", "lease_ms": 60000}
    _, _, raw = c("POST", "/v1/sessions", ACME, dict(claim, idempotency_key="k-1"), want=201)
    s1 = json.loads(raw)
    _, hdrs, _ = c("POST", "/v1/sessions", ACME, dict(claim, idempotency_key="k-1"), want=201)
    assert hdrs.get("idempotent-replayed") == "true"
    _, _, raw = c("POST", "/v1/sessions", ACME, claim, want=201)
    s2 = json.loads(raw)
    c("POST", "/v1/sessions", ACME, claim, want=429)  # quota of 2
    _, _, raw = c("POST", "/v1/sessions", BOLT, dict(claim, labels={"owner": "ci-42"}), want=201)
    s3 = json.loads(raw)
    assert s3["labels"] == {"owner": "ci-42"}, s3
    _, _, raw = c("GET", "/v1/sessions?label=owner:ci-42", BOLT, want=200)
    assert [s["session_id"] for s in json.loads(raw)["sessions"]] == [s3["session_id"]], raw
    c("POST", "/v1/sessions", BOLT, claim, want=503)  # no capacity left
    c("POST", "/v1/sessions", BOLT, {"pool": "chrome"}, want=400)
    c("POST", "/v1/sessions", BOLT, {"region": "weur", "lease_ms": -1}, want=400)
    c("POST", "/v1/sessions", BOLT, "[1,", want=400)
    c("POST", "/v1/sessions", BOX, claim, want=403)
    # Past its claims_per_s: 429 rate_limited with Retry-After (the 503 before
    # it cost its token too).
    c("POST", "/v1/sessions", RATE, claim, want=503)
    _, hdrs, raw = c("POST", "/v1/sessions", RATE, claim, want=429)
    assert json.loads(raw)["error"]["code"] == "rate_limited", raw
    assert int(hdrs["retry-after"]) >= 1, hdrs
    _, _, raw = c("GET", "/v1/limits", RATE, want=200)
    assert json.loads(raw)["claims_per_s"] == 1 and json.loads(raw)["max_sessions"] == 5, raw
    c("POST", "/v1/sessions", None, claim, want=401)
    sid = "/v1/sessions/" + s1["session_id"]
    c("GET", sid, ACME, want=200)
    c("HEAD", sid, ACME, want=200)
    c("GET", sid, BOLT, want=403)
    c("GET", "/v1/sessions/s_00ffffffffffffffffffffffffffffffff", ACME, want=404)
    c("POST", sid + "/renew", ACME, {"token": s1["token"], "lease_ms": 30000}, want=200)
    c("POST", sid + "/renew", ACME, {"token": s1["token"] + 100}, want=409)
    c("POST", sid + "/renew", ACME, {"lease_ms": 5}, want=400)
    c("GET", "/v1/limits", ACME, want=200)
    c("GET", "/v1/limits?tenant=bolt", ACME, want=403)
    c("GET", "/v1/limits", ADMIN, want=200)  # its own tenant, default
    c("GET", "/v1/limits?tenant=acme", ADMIN, want=200)
    # Lists, labels.
    _, _, raw = c("GET", "/v1/sessions?limit=1", ACME, want=200)
    page = json.loads(raw)
    assert len(page["sessions"]) == 1 and page["next_cursor"], page
    c("GET", "/v1/sessions?limit=1&cursor=" + page["next_cursor"], ACME, want=200)
    c("GET", "/v1/sessions?region=weur&cursor=" + page["next_cursor"], ACME, want=400)
    c("GET", "/v1/sessions?limit=0", ACME, want=400)
    c("GET", "/v1/sessions?tenant=bolt", ACME, want=403)
    c("GET", "/v1/sessions", None, want=401)
    c("GET", "/v1/sessions?tenant=bolt", ADMIN, want=200)
    c("HEAD", "/v1/sessions", ADMIN, want=200)
    c("GET", "/v1/sessions?label=owner:nobody", ACME, want=200)
    c("GET", "/v1/sessions?label=owner", ACME, want=400)
    c("GET", "/v1/containers?limit=2", ADMIN, want=200)
    c("GET", "/v1/containers?status=picked&region=weur&pool=chrome", ADMIN, want=200)
    c("GET", "/v1/containers?status=sleepy", ADMIN, want=400)
    c("GET", "/v1/containers", ACME, want=403)
    c("POST", "/v1/sessions", BOLT, dict(claim, labels={"k": 1}), want=400)
    c("POST", "/v1/containers/%s/drain" % s2["container_id"], ADMIN, want=200)
    # An operator's drain holds: ended here, so that the heartbeat reply
    # below names only w-9 whichever container s2 picked.
    c("POST", "/v1/containers/%s/undrain" % s2["container_id"], ADMIN, want=200)
    c("DELETE", "/v1/containers/%s" % s2["container_id"], ADMIN, want=409)  # picked
    c("DELETE", sid + "?token=%d" % (s1["token"] + 100), ACME, want=409)
    c("DELETE", sid, ACME, want=400)  # no token
    c("DELETE", sid + "?token=abc", ACME, want=400)
    c("DELETE", sid + "?token=%d" % s1["token"], ACME, want=204)
    c("DELETE", sid + "?token=%d" % s1["token"], ACME, want=204)  # a repeat: idempotent
    # An ended session: 410 session_ended with its end_reason and ended_at_ms.
    c("DELETE", sid + "?token=%d" % (s1["token"] + 100), ACME, want=410)
    c("GET", sid, ACME, want=410)
    c("POST", sid + "/renew", ACME, {"token": s1["token"]}, want=410)
    _, _, raw = c("GET", "/v1/sessions?state=ended", ACME, want=200)
    assert json.loads(raw)["sessions"][0]["end_reason"] == "released", raw
    c("GET", "/v1/sessions?state=ended&limit=1&tenant=acme", ADMIN, want=200)
    c("GET", "/v1/sessions?state=gone", ACME, want=400)
    c("DELETE", "/v1/sessions/s_01a0c4506c0000bd2e0d1f739d2954e162d92e5b91399f?token=1", ACME, want=404)
    c("DELETE", "/v1/sessions/%s?token=%d" % (s2["session_id"], s2["token"]), ACME, want=204)
    c("DELETE", "/v1/sessions/%s?token=%d" % (s3["session_id"], s3["token"]), ADMIN, want=204)
    c("DELETE", "/v1/containers/%s" % s1["container_id"], ADMIN, want=204)
    c("DELETE", "/v1/containers/%s" % s1["container_id"], ADMIN, want=404)
    # Heartbeats (container); the reply names the drained ones once the
    # mirror (refreshed every 50 ms) has read the drain.
    c("POST", "/v1/heartbeats", BOX, {"heartbeats": [{"container_id": "w-2", "state": "ready", "load": 0.5, "ts_ms": 1}]}, want=202)
    c("POST", "/v1/containers", ADMIN, {"containers": [{"id": "w-9", "region": "weur", "pool": "chrome"}]}, want=200)
    c("POST", "/v1/containers/w-9/drain", ADMIN, want=200)
    time.sleep(0.3)
    _, _, raw = c("POST", "/v1/heartbeats", BOX, {"heartbeats": [{"container_id": "w-9", "state": "ready"},
                                                                 {"container_id": "w-2"}]}, want=202)
    # w-2 is unknown if the session s1 took it (its container was deleted
    # above), once a write has found it so.
    reply = json.loads(raw)
    maybe_unknown = ([], ["w-2"]) if s1["container_id"] == "w-2" else ([],)
    if reply.get("accepted") != 2 or reply.get("drain") != ["w-9"] or \
            reply.get("unknown") not in maybe_unknown:
        raise AssertionError("heartbeat reply: %r" % raw)
    time.sleep(0.2)
    c("GET", "/v1/capacity", ACME, want=200)  # drained: 1
    c("POST", "/v1/containers/w-9/undrain", ADMIN, want=200)
    c("POST", "/v1/heartbeats", BOX, {"heartbeats": [{"container_id": "other-1"}]}, want=403)
    c("POST", "/v1/heartbeats", BOX, {"heartbeats": []}, want=400)
    c("POST", "/v1/heartbeats", BOX, {"heartbeats": [{"container_id": "w-2", "state": "sleepy"}]}, want=400)
    c("POST", "/v1/heartbeats", BOX, {"heartbeats": [{"container_id": "w-2", "ts_ms": 2 ** 62}]}, want=400)
    c("POST", "/v1/heartbeats", ACME, {"heartbeats": [{"container_id": "w-2"}]}, want=403)
    # Capacity.
    time.sleep(0.2)
    c("GET", "/v1/capacity", ACME, want=200)
    c("GET", "/v1/capacity", BOX, want=403)
    c("GET", "/v1/capacity/history", ACME, want=200)
    c("GET", "/v1/capacity/history", BOX, want=403)
    c("GET", "/v1/capacity/deaths", ACME, want=200)
    c("GET", "/v1/capacity/deaths", BOX, want=403)
    _, _, raw = c("GET", "/v1/capacity/regions", ACME, want=200)
    regions = {r["region"]: r for r in json.loads(raw)["regions"]}
    assert regions["weur"]["backup"] == "eeur" and regions["eeur"]["backup"] is None, raw
    c("GET", "/v1/capacity/regions", BOX, want=403)
    c("GET", "/v1/pressure?region=weur&pool=chrome", ACME, want=200)
    c("GET", "/v1/pressure?region=weur&pool=chorme", ACME, want=404)
    c("GET", "/v1/pressure?pool=chrome", ACME, want=400)
    c("GET", "/v1/pressure?region=weur&pool=chrome", BOX, want=403)
    # Unknown paths and methods, malformed targets.
    c("GET", "/v1/nowhere", ACME, want=404)
    c("PUT", "/v1/sessions", ACME, want=405)
    c("PATCH", "/v1/containers/w-1", ADMIN, want=405)
    c("GET", "/v1/sessions/%zz", ACME, want=400)


if __name__ == "__main__":
    main()
