#!/usr/bin/env python3
"""Nodes whose keys files give a tenant different limits say so.

Two `edgealloc serve` nodes on one PostgreSQL database, each with a keys
file of its own. A tenant's quota (max_sessions) is counted by the store
across the nodes, under a lock a node takes only when the tenant has a
quota there; nodes that disagree on it do not share one quota. Two runs:

- mismatch: node A gives tenant acme max_sessions=5, node B 7 (bolt is the
  same on both): both nodes' /metrics say
  edgealloc_tenant_limits_mismatch{tenant="acme"} 1 and bolt 0, and each
  log has a warning naming acme and both nodes, never a key;
- same: identical keys files: every tenant 0, and no such warning.

    tenant_limits_test.py --bin build/edgealloc

Exits 1 naming what failed.
"""

import argparse
import http.client
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import edgealloc_server  # noqa: E402
from edgealloc_server import die_with_parent, free_port  # noqa: E402
from pg_server import DBNAME, PG_USER, PgServer, psql  # noqa: E402

KEYS = "adminkey-0123456789 admin\n%s tenant acme max_sessions=%d\n%s tenant bolt max_sessions=3\n"
ACME_KEY = "acmekey-secret-0123456789"
BOLT_KEY = "boltkey-secret-0123456789"
PUBLISH_MS = 200


def metrics(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/metrics")
        return conn.getresponse().read().decode()
    finally:
        conn.close()


def mismatch(text, tenant):
    m = re.search(r'^edgealloc_tenant_limits_mismatch\{tenant="%s"\} (\S+)$' % tenant, text, re.M)
    return None if m is None else float(m.group(1))


def start_node(binary, db, workdir, name, acme_max):
    keys = os.path.join(workdir, name + ".keys")
    with open(keys, "w") as f:
        f.write(KEYS % (ACME_KEY, acme_max, BOLT_KEY))
    os.chmod(keys, 0o600)
    port = free_port()
    log_path = os.path.join(workdir, name + ".log")
    with open(log_path, "wb") as log:
        proc = edgealloc_server.serve(binary, db, port,
                                      ["--keys", keys, "--claims-publish-ms", str(PUBLISH_MS)],
                                      stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                      preexec_fn=die_with_parent)
    return port, proc, log_path


def one_run(binary, workdir, pg, acme_b):
    """Node A with acme max_sessions=5, node B with acme_b; returns the
    failures."""
    db = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME)
    nodes = []
    failures = []
    try:
        for name, acme in (("a", 5), ("b", acme_b)):
            nodes.append(start_node(binary, db, workdir, name, acme))
            if not edgealloc_server.wait_answers(nodes[-1][0], "/readyz", nodes[-1][1], 60):
                return ["node %s did not start" % name]
        want_acme = 1.0 if acme_b != 5 else 0.0
        # Both nodes have published and read each other's within a few periods.
        deadline = time.monotonic() + 10
        while True:
            seen = [(mismatch(metrics(p), "acme"), mismatch(metrics(p), "bolt"))
                    for p, _, _ in nodes]
            if all(s == (want_acme, 0.0) for s in seen) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        # Several periods more: a mismatch found late would show now.
        time.sleep(5 * PUBLISH_MS / 1000)
        seen = [(mismatch(metrics(p), "acme"), mismatch(metrics(p), "bolt")) for p, _, _ in nodes]
        if any(s != (want_acme, 0.0) for s in seen):
            failures.append("edgealloc_tenant_limits_mismatch (acme, bolt) by node: %s, not (%s, 0)"
                            % (seen, want_acme))
    finally:
        for _, proc, _ in nodes:
            edgealloc_server.stop(proc)
    for name, (_, _, log_path) in zip("ab", nodes):
        with open(log_path, errors="replace") as f:
            text = f.read()
        said = [line for line in text.splitlines() if "has different limits" in line]
        for line in said:
            print("%s: %s" % (name, line))
        if ACME_KEY in text or BOLT_KEY in text:
            failures.append("node %s logged a key" % name)
        if acme_b == 5 and said:
            failures.append("node %s warned of a mismatch with identical keys files" % name)
        if acme_b != 5:
            named = [line for line in said if "tenant acme" in line and "bolt" not in line
                     and line.count("max_sessions=") == 2]
            if not named:
                failures.append("node %s did not warn that acme's limits differ, naming both "
                                "nodes" % name)
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    workdir = tempfile.mkdtemp(prefix="tenant-limits-")
    pg = PgServer(workdir, "pg", fsync=False)
    failures = []
    try:
        pg.init_primary(sync_standby=False)
        for run, acme_b in (("mismatch", 7), ("same", 5)):
            psql(pg.port, "DROP DATABASE IF EXISTS %s WITH (FORCE)" % DBNAME, db="postgres")
            psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
            run_dir = os.path.join(workdir, run)
            os.mkdir(run_dir)
            found = one_run(os.path.abspath(args.bin), run_dir, pg, acme_b)
            print("%s: %s" % (run, "ok" if not found else "; ".join(found)))
            failures += ["%s: %s" % (run, f) for f in found]
    finally:
        pg.stop_immediate()
    if failures:
        print("kept for a look: " + workdir)
        return 1
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
