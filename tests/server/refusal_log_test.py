"""Refusals do not flood the log, and a refused waiting claim is told the bound.

Against the real binary: tenant acme may have no claim waiting
(max_waiters=0) and bolt holds the only container, so each claim of acme's
with wait_ms is refused 503 overloaded at once. 300 of them on one keep-alive
connection:
- each answer names the bound (acme's max_waiters in the keys file) and the
  caller's own tenant, never the other tenant;
- the log holds at most one line about them within the 10 s period, and the
  first line after it says how many were not logged.

    python3 tests/server/refusal_log_test.py --bin build/edgealloc
"""
import http.client
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import free_port, keys_file, main_with_bin, serve, stop, wait_answers  # noqa: E402

ADMIN, ACME, BOLT = "adm-R1", "acme-R2", "bolt-R3"
REFUSED = 300
WAIT_CLAIM = '{"region":"weur","pool":"chrome","wait_ms":5000}'


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def post(conn, path, key, body):
    conn.request("POST", path, body=body,
                 headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    r = conn.getresponse()
    return r.status, r.read()


def refusal_lines(log_path):
    """The log's lines about refused waiting claims (before the fix, every
    refusal logged a `storage busy` line)."""
    with open(log_path) as f:
        return [l for l in f if "refused 503 overloaded" in l or "storage busy" in l]


def check_refusal(status, body):
    if status != 503:
        fail("a waiting claim past acme's max_waiters: %d %r" % (status, body[:300]))
    err = json.loads(body)["error"]
    if err["code"] != "overloaded":
        fail("refusal code %r" % err)
    msg = err["message"]
    if "tenant acme" not in msg or "max_waiters in the keys file" not in msg:
        fail("the refusal does not name acme's bound: %r" % msg)
    if "bolt" in msg:
        fail("the refusal names another tenant: %r" % msg)
    return msg


def run(binary, tmp):
    keys = keys_file(tmp, "%s admin\n%s tenant acme max_waiters=0\n%s tenant bolt\n"
                     % (ADMIN, ACME, BOLT), mode=0o600)
    port = free_port()
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "w")
    proc = serve(binary, os.path.join(tmp, "pool.db"), port, ["--keys", keys], stdout=log, stderr=log)
    try:
        if not wait_answers(port, "/readyz", proc=proc, timeout=20):
            fail("the server did not start:\n" + open(log_path).read())
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        fleet = json.dumps({"containers": [{"id": "only-1", "region": "weur", "pool": "chrome"}]})
        if post(conn, "/v1/containers", ADMIN, fleet)[0] != 200:
            fail("register")
        if post(conn, "/v1/sessions", BOLT, '{"region":"weur","pool":"chrome"}')[0] != 201:
            fail("bolt's claim of the only container")
        started = time.monotonic()
        for _ in range(REFUSED):
            msg = check_refusal(*post(conn, "/v1/sessions", ACME, WAIT_CLAIM))
        took = time.monotonic() - started
        print("ok %d refusals in %.1f s, each naming the bound: %r" % (REFUSED, took, msg))
        lines = refusal_lines(log_path)
        # One line a 10 s period: the first, and one more if the loop took that long.
        if len(lines) > 1 + int(took // 10):
            fail("%d log lines for %d refusals in %.1f s:\n%s"
                 % (len(lines), REFUSED, took, "".join(lines[:5])))
        print("ok %d log line(s) for them" % len(lines))
        # Past the period the next refusal is logged, with the count of the rest.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            check_refusal(*post(conn, "/v1/sessions", ACME, WAIT_CLAIM))
            counted = [l for l in refusal_lines(log_path) if re.search(r"and \d+ more since", l)]
            if counted:
                held = int(re.search(r"and (\d+) more since", counted[0]).group(1))
                if held < REFUSED - len(lines):
                    fail("the line after the period counts %d held back, fewer than %d: %s"
                         % (held, REFUSED - len(lines), counted[0]))
                print("ok after the period: %s" % counted[0].strip())
                break
            time.sleep(0.5)
        else:
            fail("no line with the count of refusals held back within 30 s:\n"
                 + "".join(refusal_lines(log_path)))
        conn.close()
    finally:
        code = stop(proc, timeout=30)
        log.close()
    if code != 0:
        fail("exit %d after SIGTERM" % code)


if __name__ == "__main__":
    main_with_bin(run)
