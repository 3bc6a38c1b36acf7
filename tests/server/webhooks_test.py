"""Webhooks (docs/api.md, "Webhooks") against a receiver written here with
the standard library alone, which checks every Standard Webhooks signature
with hmac.

    python3 tests/server/webhooks_test.py --bin build/edgealloc --case C [--engine E]

Cases (engine sqlite or postgres):
- order: every event GET /v1/events gives the tenant arrives, in order, in
  signed batches, and no other tenant's;
- retry: the receiver answers 500 three times, then 200: the batch comes
  again with the same webhook-id, after backoff, and nothing is lost;
- restart: the receiver fails while the node restarts; the node resumes
  after the last batch answered 200 (nothing before it again, nothing lost);
- hung: the receiver never answers; claims are answered as before, and the
  delivery lag shows on /metrics;
- tls: an https:// receiver with a certificate of a CA made here, given to
  the server by SSL_CERT_FILE; without it the receiver is refused;
- crash: the delivering node is killed while the receiver fails; another
  node takes over once its lease lapses (5 s here) and resumes after the last
  batch answered 200;
- gap: events pruned (--event-retention-ms 1000) while the receiver
  failed are counted in edgealloc_webhook_gaps_total and warned of, and
  delivery goes on from the oldest kept;
- restart_sharded, crash_sharded (sqlite): restart and crash with
  --shards 2 and sessions in both files (the cursor names a seq a file);
- two_nodes (postgres): two nodes with the same keys file deliver each
  event once (one deliverer a tenant).
"""
import base64
import json
import os
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from edgealloc_server import call, free_port, keys_file, kill, stop  # noqa: E402
from webhook_receiver import ACME, ADMIN, BOLT, Setup, event_key, fail  # noqa: E402

# The regions claims go to, in turn. The _sharded cases use two that
# --shards 2 puts in different files (weur in the first, neur the second).
REGIONS = ["weur"]


def fleet():
    return json.dumps({"containers": [{"id": "c-%d" % i, "region": REGIONS[i % len(REGIONS)],
                                       "pool": "chrome"} for i in range(8)]})


FLEET = fleet()


def await_true(what, fn, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return
        time.sleep(0.05)
    fail("timed out waiting for " + what)


def expect(port, method, path, key, status, body=None):
    got, data = call(port, method, path, body, key=key, timeout=20)
    if got != status:
        fail("%s %s: %d %r, wanted %d" % (method, path, got, data, status))
    return json.loads(data) if data else None


def churn(port, tenant_key, n):
    """n claims of the tenant, each released: 2n session events."""
    for i in range(n):
        claim = {"region": REGIONS[i % len(REGIONS)], "pool": "chrome", "lease_ms": 60000}
        s = expect(port, "POST", "/v1/sessions", tenant_key, 201, json.dumps(claim))
        expect(port, "DELETE", "/v1/sessions/%s?token=%d" % (s["session_id"], s["token"]),
               tenant_key, 204)


def acme_events(port):
    """Every event GET /v1/events gives acme, in order (a page may hold none
    of acme's and still move next: the end is where next stays)."""
    events, after = [], 0
    while True:
        page = expect(port, "GET", "/v1/events?limit=1000&after=%s" % after, ACME, 200)
        events += page["events"]
        if not page["events"] and str(page["next"]) == str(after):
            return events
        after = page["next"]


def by_file(events):
    """Each file's events, in their order. The docs promise each file's
    commit order, not one across files: with --shards, a read merges the
    files by time, so two reads (the deliverer's pages, one GET from 0) may
    interleave events of the same millisecond differently. Regions and files
    are one to one here (REGIONS)."""
    files = {}
    for e in events:
        files.setdefault(e.get("region"), []).append(e)
    return files


def file_keys(events):
    return {f: [event_key(e) for e in es] for f, es in by_file(events).items()}


def all_delivered(setup, port):
    want = acme_events(port)
    return want and file_keys(setup.receiver.delivered()) == file_keys(want)


def check_delivery(setup, port):
    await_true("every acme event delivered", lambda: all_delivered(setup, port))
    def but_cursor(events):  # a reader's place, not the event's (event_key)
        return [{k: v for k, v in e.items() if k != "cursor"} for e in events]
    got = setup.receiver.delivered()
    want = acme_events(port)
    if len(got) != len(want) or any(but_cursor(es) != but_cursor(by_file(want).get(f, []))
                                     for f, es in by_file(got).items()):
        fail("delivered events differ from GET /v1/events'")
    if any(e.get("tenant") != "acme" for e in got):
        fail("another tenant's event was delivered: %r" % [e for e in got if e.get("tenant") != "acme"])
    if setup.receiver.bad_signatures:
        fail("bad signatures on %r" % setup.receiver.bad_signatures)


def metric(port, sample):
    """The value of `sample` (a name with its labels, as /metrics writes it)."""
    _, text = call(port, "GET", "/metrics", key=ADMIN)
    for line in text.decode().splitlines():
        name, _, value = line.rpartition(" ")
        if name == sample:
            return float(value)
    return None


def case_order(setup):
    _, port = setup.start()
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    churn(port, ACME, 30)
    churn(port, BOLT, 5)
    check_delivery(setup, port)
    if len(setup.receiver.delivered()) != 60:
        fail("expected 60 acme events, got %d" % len(setup.receiver.delivered()))
    if metric(port, 'edgealloc_webhook_deliveries_total{result="delivered"}') < 1:
        fail("no delivered batch on /metrics")
    print("ok every event of acme delivered once, in order, signed; none of bolt's")


def case_behind(setup):
    """acme's events behind more of the log than a page examines (1,200
    registrations): the deliverer goes on past pages without acme's."""
    _, port = setup.start()
    many = json.dumps({"containers": [{"id": "r-%d" % i, "region": "weur", "pool": "other"}
                                      for i in range(1200)]})
    expect(port, "POST", "/v1/containers", ADMIN, 200, many)
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    churn(port, ACME, 5)
    check_delivery(setup, port)
    if len(setup.receiver.delivered()) != 10:
        fail("expected 10 acme events, got %d" % len(setup.receiver.delivered()))
    page = expect(port, "GET", "/v1/events?limit=10&wait_ms=20000", ACME, 200)
    if len(page["events"]) != 10:
        fail("a waiting read from the start answered %r" % page)
    print("ok acme's events behind 1,200 others are delivered, and a waiting read finds them")


def case_retry(setup):
    _, port = setup.start()
    setup.receiver.fail_next = 3
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    churn(port, ACME, 5)
    check_delivery(setup, port)
    posts = setup.receiver.posts
    if [p[0] for p in posts[:4]] != [500, 500, 500, 200] or len({p[1] for p in posts[:4]}) != 1:
        fail("wanted three 500s then a 200 of one webhook-id: %r" % [(p[0], p[1]) for p in posts])
    if metric(port, 'edgealloc_webhook_deliveries_total{result="rejected"}') != 3:
        fail("edgealloc_webhook_deliveries_total{result=rejected} is not 3")
    print("ok a failed batch comes again with its webhook-id until answered 200")


def delivered_then_failing(setup, port):
    """10 claims and releases delivered, then 10 more while the receiver
    fails, until one delivery failed; the count of events delivered before."""
    churn(port, ACME, 10)
    check_delivery(setup, port)
    first = len(setup.receiver.delivered())
    setup.receiver.mode = "fail"
    churn(port, ACME, 10)
    await_true("a failed delivery", lambda: any(p[0] == 500 for p in setup.receiver.posts))
    return first


def check_resumed(setup, before, first, after_what):
    """The first batch answered 200 among the posts from `before` on starts
    with the event after the `first` delivered before the failures."""
    ok_after = [p for p in setup.receiver.posts[before:] if p[0] == 200]
    seqs = [event_key(e) for e in setup.receiver.delivered()]
    if not ok_after or event_key(ok_after[0][2][0]) != seqs[first]:
        fail("after %s delivery did not resume after the last batch answered 200 "
             "(first event %r, wanted %r)" % (after_what, ok_after and ok_after[0][2][0],
                                                  seqs[first]))


def case_restart(setup):
    proc, port = setup.start("a")
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    first = delivered_then_failing(setup, port)
    stop(proc)
    proc, port = setup.start("b")
    before = len(setup.receiver.posts)
    setup.receiver.mode = "ok"
    check_delivery(setup, port)
    check_resumed(setup, before, first, "the restart")
    print("ok a restarted node resumes after the last acknowledged batch, nothing lost")


def case_crash(setup, engine):
    """The node delivering acme is killed while the receiver fails; another
    node (PostgreSQL: one already running; SQLite: one started on the file)
    takes the lease once it lapses and resumes after the last batch
    answered 200."""
    nodes = [setup.start("a")]
    if engine == "postgres":
        nodes.append(setup.start("b"))
    port = nodes[0][1]
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    first = delivered_then_failing(setup, port)
    delivered = 'edgealloc_webhook_deliveries_total{result="delivered"}'
    holder = [n for n in nodes if metric(n[1], delivered) > 0]
    if len(holder) != 1:
        fail("wanted one node delivering acme, not %d" % len(holder))
    kill(holder[0][0])
    if engine == "sqlite":
        nodes.append(setup.start("b"))
    survivor = [n for n in nodes if n is not holder[0]][0][1]
    before = len(setup.receiver.posts)
    setup.receiver.mode = "ok"
    # The dead node's lease lapses within 5 s (--webhook-lease-ms) of its last renewal.
    await_true("acme's events delivered by another node",
               lambda: all_delivered(setup, survivor), timeout=60)
    check_delivery(setup, survivor)
    check_resumed(setup, before, first, "the holder died")
    print("ok the holder killed, another node took acme over and resumed after its last "
          "acknowledged batch")


def case_hung(setup):
    _, port = setup.start()
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    setup.receiver.mode = "hang"
    churn(port, ACME, 1)
    await_true("a hung delivery", lambda: setup.receiver.hanging > 0)
    start = time.monotonic()
    churn(port, ACME, 20)
    spent = time.monotonic() - start
    if setup.receiver.hanging == 0:
        fail("the receiver stopped hanging during the claims")
    await_true("delivery lag on /metrics",
               lambda: metric(port, "edgealloc_webhook_delivery_lag_seconds") > 0)
    print("ok 20 claims and releases answered in %.2f s while the receiver hung" % spent)
    setup.receiver.mode = "ok"
    setup.receiver.release.set()
    check_delivery(setup, port)
    await_true("no lag", lambda: metric(port, "edgealloc_webhook_delivery_lag_seconds") == 0)
    print("ok once the receiver answers, every event arrives and the lag is 0")


def case_gap(setup, engine):
    _, port = setup.start(extra=["--event-retention-ms", "1000"])
    expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
    setup.receiver.mode = "fail"
    churn(port, ACME, 1)
    await_true("a failed delivery", lambda: any(p[0] == 500 for p in setup.receiver.posts))
    # The failed batch is sent again as it was; what came after it is read
    # only once it is delivered, and by then it is pruned: all of it on
    # PostgreSQL, all but the file's newest event on SQLite (its seq is
    # where the next one counts from), which is acme's last.
    first = [e["seq"] for e in setup.receiver.posts[0][2]]
    churn(port, ACME, 3)
    missed = [e["seq"] for e in acme_events(port) if e["seq"] > first[-1]]
    kept = missed[-1:] if engine == "sqlite" else []
    gone = [seq for seq in missed if seq not in kept]
    time.sleep(2.5)  # past the retention: the reaper prunes every 100 ms
    if metric(port, "edgealloc_webhook_gaps_total") != 0:
        fail("a gap counted before delivery could go on")
    setup.receiver.mode = "ok"
    await_true("a gap counted", lambda: metric(port, "edgealloc_webhook_gaps_total") == 1)
    churn(port, ACME, 1)
    want = len(first) + len(kept) + 2
    await_true("the events after the gap delivered",
               lambda: len(setup.receiver.delivered()) >= want)
    got = [e["seq"] for e in setup.receiver.delivered()]
    if got[:len(first)] != first or len(got) != want or set(got) & set(gone) \
            or not set(kept) <= set(got) or got != sorted(got):
        fail("wanted the failed batch %r, the kept %r and the last churn's 2 events, none of "
             "%r: %r" % (first, kept, gone, got))
    log = open(os.path.join(setup.tmp, "a.log")).read()
    if "events were pruned before they were delivered" not in log:
        fail("no warning of the gap in the log")
    print("ok %d events pruned before delivery: the gap counted and warned of, delivery "
          "went on" % len(gone))


def make_ca(tmp):
    """A CA and a certificate for localhost and 127.0.0.1 that it signed."""
    def run(*argv):
        subprocess.run(["openssl"] + list(argv), check=True, capture_output=True, cwd=tmp)
    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
        "-keyout", "ca.key", "-out", "ca.pem")
    run("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", "host.key",
        "-out", "host.csr")
    with open(os.path.join(tmp, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    run("x509", "-req", "-in", "host.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-days", "2", "-extfile", "san.ext", "-out", "host.pem")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(tmp, "host.pem"), os.path.join(tmp, "host.key"))
    return os.path.join(tmp, "ca.pem"), ctx


def case_keys(binary, tmp, db):
    """A webhook that could never be sent or signed stops the start (exit 2)."""
    short = os.path.join(tmp, "short.whsec")
    with open(short, "w") as f:
        f.write("whsec_" + base64.b64encode(b"0123456789").decode())
    good = os.path.join(tmp, "good.whsec")
    with open(good, "w") as f:
        f.write("whsec_" + base64.b64encode(os.urandom(32)).decode())
    for line, says in (
            ("webhook=http://127.0.0.1:9/h", "go together"),
            ("webhook=ftp://h/ webhook_secret_file=" + good, "http:// or https://"),
            ("webhook=http://127.0.0.1:9/h webhook_secret_file=" + short, "16 to 64 bytes"),
            ("webhook=http://127.0.0.1:9/h webhook_secret_file=" + tmp + "/none", "cannot read")):
        keys = keys_file(tmp, "%s admin\n%s tenant acme %s\n" % (ADMIN, ACME, line), 0o600)
        out = subprocess.run([binary, "serve", "--db", db, "--listen", "127.0.0.1:%d" % free_port(),
                              "--keys", keys], capture_output=True, timeout=60)
        err = out.stderr.decode()
        if out.returncode != 2 or says not in err or "SECRET" in err:
            fail("keys line %r: exit %d, %r; wanted 2 saying %r" % (line, out.returncode, err, says))
    print("ok a webhook without a usable URL or secret stops the start, saying why")


def run_case(binary, tmp, case, db, env=None, engine="sqlite"):
    global FLEET
    if case == "keys":
        case_keys(binary, tmp, db)
        return
    if case == "tls":
        ca, ctx = make_ca(tmp)
        # Without the CA the receiver is refused (the peer is verified) ...
        setup = Setup(binary, tmp, db, tls=ctx, url_host="localhost", env=env)
        try:
            _, port = setup.start("untrusted")
            expect(port, "POST", "/v1/containers", ADMIN, 200, FLEET)
            churn(port, ACME, 1)
            await_true("a refused TLS delivery", lambda: (metric(
                port, 'edgealloc_webhook_deliveries_total{result="unanswered"}') or 0) > 0)
            if setup.receiver.posts:
                fail("a receiver whose CA is not trusted was sent a batch")
        finally:
            setup.close()
        print("ok a receiver whose certificate no trusted CA signed gets nothing")
        env = dict(env or os.environ, SSL_CERT_FILE=ca)
        setup = Setup(binary, tmp, db, tls=ctx, url_host="localhost", env=env)
        try:
            _, port = setup.start("trusted")
            churn(port, ACME, 5)
            check_delivery(setup, port)
        finally:
            setup.close()
        print("ok HTTPS delivery to a receiver whose CA SSL_CERT_FILE names")
        return
    setup = Setup(binary, tmp, db, env=env)
    if case.endswith("_sharded"):
        case = case[:-len("_sharded")]
        REGIONS[:] = ["weur", "neur"]
        FLEET = fleet()
        setup.extra = ["--shards", "2"]
    try:
        if case == "two_nodes":
            _, a = setup.start("a")
            _, b = setup.start("b")
            expect(a, "POST", "/v1/containers", ADMIN, 200, FLEET)
            churn(a, ACME, 10)
            churn(b, ACME, 10)
            check_delivery(setup, a)
            seqs = [event_key(e) for p in setup.receiver.posts if p[0] == 200 for e in p[2]]
            if len(seqs) != len(set(seqs)):
                fail("an event was delivered twice by the two nodes")
            sent = sorted(metric(p, 'edgealloc_webhook_deliveries_total{result="delivered"}')
                          for p in (a, b))
            if sent[0] != 0 or sent[1] < 1:
                fail("wanted one node to deliver acme's batches, not %r" % sent)
            print("ok two nodes deliver each of acme's %d events once" % len(seqs))
        else:
            {"order": case_order, "behind": case_behind, "retry": case_retry,
             "restart": case_restart,
             "hung": case_hung, "gap": lambda s: case_gap(s, engine),
             "crash": lambda s: case_crash(s, engine)}[case](setup)
    finally:
        setup.close()


def main():
    import argparse
    import tempfile
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--case", required=True)
    ap.add_argument("--engine", default="sqlite", choices=["sqlite", "postgres"])
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.engine == "sqlite":
            run_case(args.bin, tmp, args.case, os.path.join(tmp, "fleet.db"))
            return
        from pg_server import DBNAME, PG_USER, PgServer, psql
        pg = PgServer(tmp, "pg", fsync=False)
        pg.init_primary(sync_standby=False)
        try:
            psql(pg.port, "CREATE DATABASE " + DBNAME, db="postgres", timeout=120)
            db = "postgresql://%s@127.0.0.1:%d/%s" % (PG_USER, pg.port, DBNAME)
            run_case(args.bin, tmp, args.case, db, engine="postgres")
        finally:
            pg.stop_immediate()


if __name__ == "__main__":
    main()
