"""The log, end to end, against the real binary (#15: levels, formats,
request ids, the access log, and never a key).

Starts `edgealloc serve` with a keys file twice (--log-format json, then
text), sends requests with good, wrong and no keys, with and without
X-Request-Id, stops it with SIGTERM and reads its stderr:
- every line is a record of the format asked for, with a timestamp and level;
- each request is answered with an X-Request-Id: the client's own when sane,
  else one of 16 hex digits; the access log line carries the same id;
- no line holds any key (good or wrong), whatever the level;
- a write failing in storage (a file size limit the database reaches) is
  503 unavailable, and its error line carries the request's id.

    python3 tests/server/logging_test.py --bin build/edgealloc
"""
import argparse
import resource
import json
import os
import re
import signal
import sys
import tempfile
import http.client

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import free_port, keys_file, serve, stop, wait_answers  # noqa: E402

KEYS = {"admin": "adm-SECRET-6d1f0a", "tenant": "acme-SECRET-93be77", "wrong": "WRONG-SECRET-55aa01"}
FLEET = json.dumps({"containers": [{"id": "c-%d" % i, "region": "weur", "pool": "chrome"} for i in range(3)]})


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def request(port, method, path, key=None, body=None, request_id=None, timeout=10):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if key:
        headers["Authorization"] = "Bearer " + key
    if request_id is not None:
        headers["X-Request-Id"] = request_id
    if body:
        headers["Content-Type"] = "application/json"
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    data = r.read()
    conn.close()
    return r.status, r.getheader("X-Request-Id"), data


# Bytes a file may grow to: the migration of a new database leaves about
# 400 KB of WAL, and the requests before the big registration add little;
# the big registration's 800 KB of data alone is more than the limit, even
# into a WAL a checkpoint has just reset.
FILE_LIMIT = 768 * 1024


def limit_files():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an ignored signal stays ignored across exec
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))


def run(binary, fmt, tmp, storage_fault=False):
    keys = keys_file(tmp, "%s admin\n%s tenant acme\n" % (KEYS["admin"], KEYS["tenant"]))
    port = free_port()
    log_path = os.path.join(tmp, "server-%s.log" % fmt)
    log = open(log_path, "w")
    proc = serve(binary, os.path.join(tmp, fmt + ".db"), port,
                 ["--keys", keys, "--access-log", "--log-format", fmt, "--log-level", "debug"],
                 stdout=log, stderr=log, preexec_fn=limit_files if storage_fault else None)
    try:
        wait_answers(port, "/healthz", timeout=5)
        status, rid, _ = request(port, "POST", "/v1/containers", KEYS["admin"], FLEET, "fleet-1")
        if status != 200 or rid != "fleet-1":
            fail("register: %d, X-Request-Id %r" % (status, rid))
        status, rid, body = request(port, "POST", "/v1/sessions", KEYS["tenant"],
                                    '{"region":"weur","pool":"chrome"}', "claim-42")
        if status != 201 or rid != "claim-42":
            fail("claim: %d, X-Request-Id %r" % (status, rid))
        session = json.loads(body)
        status, rid, _ = request(port, "GET", "/v1/sessions/" + session["session_id"], KEYS["wrong"])
        if status != 401 or not re.fullmatch(r"[0-9a-f]{16}", rid or ""):
            fail("wrong key: %d, made X-Request-Id %r" % (status, rid))
        status, rid, _ = request(port, "GET", "/v1/limits", KEYS["tenant"], request_id="bad id with spaces")
        if status != 200 or not re.fullmatch(r"[0-9a-f]{16}", rid or ""):
            fail("an insane X-Request-Id was not replaced: %d %r" % (status, rid))
        status, rid, _ = request(port, "DELETE", "/v1/sessions/%s?token=%d" % (session["session_id"], session["token"]),
                                 KEYS["tenant"], request_id="release-7")
        if status != 204 or rid != "release-7":
            fail("release: %d, X-Request-Id %r" % (status, rid))
        if storage_fault:
            # The server may not grow a file past FILE_LIMIT (RLIMIT_FSIZE,
            # SIGXFSZ ignored: write() fails with EFBIG): a registration that
            # needs more fails in storage, 503 unavailable, and the error line
            # names the request.
            big = json.dumps({"containers": [{"id": "big-%d" % i, "region": "weur", "pool": "chrome",
                                              "data": {"blob": "x" * 4000}} for i in range(200)]})
            status, rid, body = request(port, "POST", "/v1/containers", KEYS["admin"], big, "big-9",
                                        timeout=60)
            if status != 503 or rid != "big-9" or json.loads(body)["error"]["code"] != "unavailable":
                fail("registration past the file size limit: %d %r %r" % (status, rid, body[:300]))
    finally:
        code = stop(proc, timeout=30)
        log.close()
    if code != 0:
        fail("exit %d after SIGTERM" % code)
    lines = open(log_path).read().splitlines()
    if not lines:
        fail("no log lines")
    for line in lines:
        for name, key in KEYS.items():
            if key in line:
                fail("the %s key is in the log: %s" % (name, line))
    access = []
    for line in lines:
        if fmt == "json":
            try:
                rec = json.loads(line)
            except ValueError:
                fail("not a JSON record: %r" % line)
            if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", rec.get("ts", "")):
                fail("no UTC ts: %r" % line)
            if rec.get("level") not in ("debug", "info", "warning", "error"):
                fail("no level: %r" % line)
            if rec.get("msg") == "access":
                access.append((rec["method"], rec["path"], rec["status"], rec["request_id"]))
        else:
            m = re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (debug|info|warning|error) (.*)$", line)
            if not m:
                fail("not a text record: %r" % line)
            a = re.match(r'access (\S+) "([^"]*)" (\d+) \d+B \d+us request_id=(\S+)$', m.group(2))
            if a:
                access.append((a.group(1), a.group(2), int(a.group(3)), a.group(4)))
    want = [("POST", "/v1/containers", 200, "fleet-1"), ("POST", "/v1/sessions", 201, "claim-42"),
            ("DELETE", "/v1/sessions/" + session["session_id"], 204, "release-7")]
    for w in want:
        if w not in access:
            fail("no access line %r in %r" % (w, access))
    if not any(a[2] == 401 for a in access):
        fail("no access line for the 401")
    if any("?" in a[1] for a in access):
        fail("a query (token) reached the access log")
    if storage_fault:
        errors = [l for l in lines if "storage error (request_id big-9)" in l and
                  ('"level":"error"' in l or " error " in l)]
        if not errors:
            fail("no error line naming request big-9 in %r" % lines)
        if ("POST", "/v1/containers", 503, "big-9") not in access:
            fail("no access line for the 503 of big-9")
    print("ok %s: %d lines, %d access lines, request ids echoed and logged, no key" %
          (fmt, len(lines), len(access)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args.bin, "json", tmp)
        run(args.bin, "text", tmp, storage_fault=True)


if __name__ == "__main__":
    main()
