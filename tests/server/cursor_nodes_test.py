"""List cursors across PostgreSQL nodes: signed, and shared by a secret file.

Three `edgealloc serve` nodes on one PostgreSQL database: A and B given the
same --cursor-secret-file, C none (a random key of its own). A lists the
containers two at a time:
- B follows A's cursor (200, the page after A's), and A follows B's;
- C refuses it (400 invalid_field naming cursor): not a cursor it made;
- A cursor altered to start elsewhere, or made by hand, is 400 on A.

    python3 tests/server/cursor_nodes_test.py --bin build/edgealloc
"""
import json
import os
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import (call, die_with_parent, free_port, main_with_bin, serve, stop,  # noqa: E402
                              wait_answers)
from pg_server import DBNAME, PG_USER, PgServer, psql  # noqa: E402

IDS = ["w-%d" % i for i in range(7)]


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def page(port, cursor=None):
    path = "/v1/containers?limit=2"
    if cursor is not None:
        path += "&cursor=" + urllib.parse.quote(cursor, safe="")
    status, data = call(port, "GET", path, timeout=20)
    return status, json.loads(data)


def ids_of(body):
    return [c["id"] for c in body["containers"]]


def refused(port, cursor, what):
    status, body = page(port, cursor)
    if status != 400 or body["error"]["code"] != "invalid_field" or \
            not body["error"]["message"].startswith("cursor"):
        fail("%s: %d %r, wanted 400 invalid_field naming cursor" % (what, status, body))


def run(binary, tmp):
    pg = PgServer(tmp, "pg", fsync=False)
    pg.init_primary(sync_standby=False)
    procs = []
    try:
        psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
        db = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME)
        secret = os.path.join(tmp, "cursor-secret")
        with open(secret, "wb") as f:
            f.write(os.urandom(32).hex().encode() + b"\n")
        os.chmod(secret, 0o600)
        ports = {}
        for name, extra in (("a", ["--cursor-secret-file", secret]),
                            ("b", ["--cursor-secret-file", secret]), ("c", [])):
            ports[name] = free_port()
            log = open(os.path.join(tmp, name + ".log"), "wb")
            procs.append((serve(binary, db, ports[name], extra, stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, preexec_fn=die_with_parent), log))
        for name, (proc, _) in zip("abc", procs):
            if not wait_answers(ports[name], "/readyz", proc, 60):
                fail("node %s did not get ready:\n%s" % (name, open(os.path.join(tmp, name + ".log")).read()))
        fleet = json.dumps({"containers": [{"id": i, "region": "weur", "pool": "chrome"} for i in IDS]})
        status, _ = call(ports["a"], "POST", "/v1/containers", fleet, timeout=20)
        if status != 200:
            fail("register: %d" % status)

        status, first = page(ports["a"])
        if status != 200 or ids_of(first) != IDS[:2] or not first["next_cursor"]:
            fail("A's first page: %d %r" % (status, first))
        status, second = page(ports["b"], first["next_cursor"])
        if status != 200 or ids_of(second) != IDS[2:4]:
            fail("B following A's cursor: %d %r" % (status, second))
        status, third = page(ports["a"], second["next_cursor"])
        if status != 200 or ids_of(third) != IDS[4:6]:
            fail("A following B's cursor: %d %r" % (status, third))
        print("ok nodes sharing a secret file follow each other's cursors")

        refused(ports["c"], first["next_cursor"], "C (a key of its own) given A's cursor")
        print("ok a node with another key refuses the cursor")

        # "c2." + fingerprint + "." + the key's hex + "." + signature: the same
        # cursor starting after w-5 (hex 772d35) instead of w-1.
        parts = first["next_cursor"].split(".")
        if len(parts) != 4 or parts[2] != "w-1".encode().hex():
            fail("the cursor is not c2.FP.KEY.TAG after w-1: %r" % first["next_cursor"])
        refused(ports["a"], ".".join(parts[:2] + ["w-5".encode().hex()] + parts[3:]),
                "A given its cursor altered to start after w-5")
        refused(ports["a"], ".".join(parts[:3] + ["0" * len(parts[3])]),
                "A given a cursor made by hand")
        print("ok an altered or hand-made cursor is 400")
    finally:
        for proc, log in procs:
            stop(proc, timeout=30, kill_late=True)
            log.close()
        pg.stop_immediate()


if __name__ == "__main__":
    main_with_bin(run)
