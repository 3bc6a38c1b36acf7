"""SIGHUP rereads the keys file, against the real binary.

Starts `edgealloc serve --keys FILE` (acme with max_sessions=1 and
claims_per_s=50, bolt, an admin), claims, then rewrites the file and sends
SIGHUP:
- a good file serves at once: its new key works, the removed key is 401, and
  acme's changed limits apply (a second session, the new rate in /v1/limits);
  the session of bolt, whose key is gone, is not ended;
- a bad file (a malformed line 3) keeps the keys in use, and the log names
  the file and line 3;
- a file others may write is taken with a warning on loopback; beyond
  loopback the server refuses to start with it (exit 2, naming the mode);
- edgealloc_keys_reloads_total counts each by result; the server lives on
  through every SIGHUP and stops with exit 0 at SIGTERM.

    python3 tests/server/keys_reload_test.py --bin build/edgealloc
"""
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import call, free_port, main_with_bin, serve, stop, wait_answers  # noqa: E402

ADMIN, ACME, BOLT, CRAY = "adm-K1", "acme-K2", "bolt-K3", "cray-K4"
FLEET = json.dumps({"containers": [{"id": "c-%d" % i, "region": "weur", "pool": "chrome"}
                                   for i in range(6)]})
CLAIM = '{"region":"weur","pool":"chrome"}'


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def write_keys(path, text, mode=0o600):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


def wait_log(log_path, needle, count, proc, timeout=20.0):
    """The log's text once it holds `needle` `count` times; fails if the
    server exits first or it does not within timeout seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = open(log_path).read()
        if text.count(needle) >= count:
            return text
        if proc.poll() is not None:
            fail("the server exited (%s) waiting for %r; log:\n%s" % (proc.returncode, needle, text))
        time.sleep(0.05)
    fail("no %r (x%d) in the log within %.0f s:\n%s" % (needle, count, timeout, open(log_path).read()))


def hup(proc, log_path, needle, count):
    proc.send_signal(signal.SIGHUP)
    return wait_log(log_path, needle, count, proc)


def expect(port, method, path, key, want, what, body=None):
    status, data = call(port, method, path, body, key=key)
    if status != want:
        fail("%s: %d, wanted %d: %r" % (what, status, want, data[:300]))
    return data


def reloads(port):
    _, data = call(port, "GET", "/metrics", key=ADMIN)
    counts = {}
    for line in data.decode().splitlines():
        for result in ("ok", "failed"):
            if line.startswith('edgealloc_keys_reloads_total{result="%s"}' % result):
                counts[result] = int(float(line.split()[-1]))
    return counts


def run(binary, tmp):
    keys = os.path.join(tmp, "keys")
    write_keys(keys, "%s admin\n%s tenant acme max_sessions=1 claims_per_s=50\n%s tenant bolt\n"
               % (ADMIN, ACME, BOLT))
    port = free_port()
    log_path = os.path.join(tmp, "server.log")
    log = open(log_path, "w")
    proc = serve(binary, os.path.join(tmp, "pool.db"), port, ["--keys", keys],
                 stdout=log, stderr=log)
    try:
        if not wait_answers(port, "/readyz", proc=proc, timeout=20):
            fail("the server did not start:\n" + open(log_path).read())
        expect(port, "POST", "/v1/containers", ADMIN, 200, "register", FLEET)
        expect(port, "POST", "/v1/sessions", ACME, 201, "acme's first claim", CLAIM)
        expect(port, "POST", "/v1/sessions", ACME, 429, "acme's second claim (max_sessions=1)", CLAIM)
        bolt = json.loads(expect(port, "POST", "/v1/sessions", BOLT, 201, "bolt's claim", CLAIM))
        expect(port, "GET", "/v1/sessions", CRAY, 401, "cray's key before it is in the file")

        # A good file: cray added, bolt removed, acme's limits changed.
        write_keys(keys, "%s admin\n%s tenant acme max_sessions=2 claims_per_s=7\n%s tenant cray\n"
                   % (ADMIN, ACME, CRAY))
        text = hup(proc, log_path, " reloaded: ", 1)
        if "no longer named: bolt" not in text:
            fail("the reload line does not name bolt as gone:\n" + text)
        expect(port, "GET", "/v1/sessions", CRAY, 200, "cray's new key")
        expect(port, "GET", "/v1/sessions", BOLT, 401, "bolt's removed key")
        expect(port, "POST", "/v1/sessions", ACME, 201, "acme's second claim (max_sessions=2)", CLAIM)
        limits = json.loads(expect(port, "GET", "/v1/limits", ACME, 200, "acme's limits"))
        if limits.get("max_sessions") != 2 or limits.get("claims_per_s") != 7:
            fail("acme's limits after the reload: %r" % limits)
        got = json.loads(expect(port, "GET", "/v1/sessions/" + bolt["session_id"], ADMIN, 200,
                                "bolt's session after its key went"))
        if got.get("tenant") != "bolt":
            fail("bolt's session: %r" % got)
        print("ok a good file: new key 200, removed key 401, acme's new limits, bolt's session kept")

        # A bad file: line 3 has no role. The keys in use stay.
        write_keys(keys, "%s admin\n%s tenant acme\nlonely\n" % (ADMIN, BOLT))
        text = hup(proc, log_path, "was not reloaded", 1)
        if keys + ":3:" not in text:
            fail("the refusal does not name %s:3:\n%s" % (keys, text))
        expect(port, "GET", "/v1/sessions", CRAY, 200, "cray's key after a bad file")
        expect(port, "GET", "/v1/sessions", BOLT, 401, "bolt's key after a bad file")
        print("ok a bad file keeps the keys in use, and the log names its line 3")

        # On loopback a file others may write is taken, with a warning.
        write_keys(keys, "%s admin\n%s tenant acme\n%s tenant bolt\n" % (ADMIN, ACME, BOLT), 0o622)
        text = hup(proc, log_path, " reloaded: ", 2)
        if "may be written by every user" not in text:
            fail("no warning for a file every user may write:\n" + text)
        expect(port, "GET", "/v1/sessions", BOLT, 200, "bolt's key, back")
        expect(port, "GET", "/v1/sessions", CRAY, 401, "cray's key, gone")
        counts = reloads(port)
        if counts != {"ok": 2, "failed": 1}:
            fail("edgealloc_keys_reloads_total: %r, wanted ok 2, failed 1" % counts)
        print("ok edgealloc_keys_reloads_total: %r" % counts)
    finally:
        code = stop(proc, timeout=30)
        log.close()
    if code != 0:
        fail("exit %d after SIGTERM; log:\n%s" % (code, open(log_path).read()))
    for key in (ADMIN, ACME, BOLT, CRAY):
        if key in open(log_path).read():
            fail("a key is in the log")
    print("ok the server lived through three SIGHUPs and stopped with exit 0")


def refused_beyond_loopback(binary, tmp):
    keys = os.path.join(tmp, "open-keys")
    for mode, who in ((0o602, "every user"), (0o620, "its group")):
        write_keys(keys, "%s admin\n" % ADMIN, mode)
        try:
            r = subprocess.run([binary, "serve", "--db", os.path.join(tmp, "refused.db"), "--listen",
                                "0.0.0.0:%d" % free_port(), "--keys", keys],
                               capture_output=True, text=True, timeout=20)
        except subprocess.TimeoutExpired:
            fail("beyond loopback with a keys file of mode %o the server served (still running "
                 "after 20 s) instead of refusing to start" % mode)
        if r.returncode != 2 or "may be written by " + who not in r.stderr or "chmod 600" not in r.stderr:
            fail("serving beyond loopback with a keys file of mode %o: exit %d, stderr %r"
                 % (mode, r.returncode, r.stderr))
    print("ok beyond loopback, a keys file its group or every user may write is refused at start")


if __name__ == "__main__":
    main_with_bin(refused_beyond_loopback, run)
