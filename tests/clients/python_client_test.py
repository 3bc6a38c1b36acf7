"""The Python client (clients/python) against the real server: a claim's round
trip, the session context manager renewing past a short lease and releasing
at exit, typed errors, idempotent retries, cursor pages, a claim retried
through 503 and 429, and an offline `pip install` of the folder.

    python_client_test.py BINARY [unittest arguments]
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CLIENT_DIR = os.path.join(ROOT, "clients", "python")
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
sys.path.insert(0, CLIENT_DIR)
import edgealloc_server  # noqa: E402
import edgealloc_client as ec  # noqa: E402
from edgealloc_client import errors, retry  # noqa: E402

BINARY = None
ADMIN, ACME, BOLT, SLOW = "k-admin-1", "k-acme-1", "k-bolt-1", "k-slow-1"
KEYS = """\
%s admin
%s tenant acme
%s tenant bolt
%s tenant slow claims_per_s=1
""" % (ADMIN, ACME, BOLT, SLOW)


def unique(prefix):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:8])


class Server:
    """One `edgealloc serve` for the whole file, with a keys file; each test
    registers its own containers in a region of its own."""

    def start(self):
        self.dir = tempfile.mkdtemp(prefix="edgealloc-pyclient.")
        keys = os.path.join(self.dir, "keys")
        with open(keys, "w") as f:
            f.write(KEYS)
        os.chmod(keys, 0o600)
        self.port = edgealloc_server.free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.log = open(os.path.join(self.dir, "server.log"), "w+")
        # Containers registered by a test stay alive for the whole run.
        self.proc = edgealloc_server.serve(
            BINARY, os.path.join(self.dir, "db"), self.port,
            ["--keys", keys, "--dead-after-ms", "600000", "--threads", "4",
             "--backup-region", "py-home=py-backup"],
            stdout=self.log, stderr=subprocess.STDOUT, preexec_fn=edgealloc_server.die_with_parent)
        if not edgealloc_server.wait_answers(self.port, "/readyz", self.proc, timeout=30):
            raise RuntimeError("server did not start:\n" + self.output())

    def output(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        code = edgealloc_server.stop(self.proc)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return code


SERVER = Server()


def client(key=ADMIN, **kw):
    return ec.Client(SERVER.url, key=key, **kw)


def fleet(n, region=None, pool="p"):
    """n containers in a fresh region; the region and their ids."""
    region = region or unique("r")
    ids = ["%s-c%d" % (region, i) for i in range(n)]
    client().containers.register([{"id": i, "region": region, "pool": pool, "latency_ms": 1,
                                   "data": {"endpoint": "ws://%s:9222" % i}} for i in ids])
    return region, ids


class Proxy:
    """A TCP proxy in front of the server. drop_first: on its first
    connection it passes the request on but closes the client's side before
    the answer (the server did the request, the client never heard). cut:
    while set, every connection is closed at once (the server unreachable)."""

    def __init__(self, port, drop_first=False):
        self.port = port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.connections = 0
        self.drop_first = drop_first
        self.cut = False
        self.dropped_answer = b""  # the start of the answer the client never heard
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            if self.cut:
                down.close()
                continue
            up = socket.create_connection(("127.0.0.1", self.port))
            if self.drop_first and self.connections == 1:
                threading.Thread(target=self._drop, args=(down, up), daemon=True).start()
            else:
                threading.Thread(target=self._pipe, args=(down, up), daemon=True).start()
                threading.Thread(target=self._pipe, args=(up, down), daemon=True).start()

    def _drop(self, down, up):
        up.sendall(down.recv(65536))  # the whole small request
        self.dropped_answer = up.recv(12)  # the server has answered: it did the request
        down.close()
        up.close()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.listener.close()


class ErrorsFromReplies(unittest.TestCase):
    """The error classes from replies, including codes this server does not
    answer yet (no server needed)."""

    def test_codes_map_to_classes(self):
        e = errors.from_reply(503, {"Retry-After": "2", "X-Request-Id": "r1"},
                              b'{"error":{"code":"no_capacity","message":"none"}}')
        self.assertIs(type(e), ec.NoCapacity)
        self.assertEqual((e.status, e.code, e.message, e.request_id, e.retry_after), (503, "no_capacity", "none",
                                                                                       "r1", 2.0))
        for code, cls in (("invalid_json", ec.InvalidRequest), ("invalid_field", ec.InvalidRequest),
                          ("invalid_request", ec.InvalidRequest),
                          ("bad_request", ec.InvalidRequest), ("overloaded", ec.Overloaded),
                          ("unavailable", ec.Unavailable), ("rate_limited", ec.RateLimited),
                          ("quota_exceeded", ec.QuotaExceeded), ("conflict", ec.Conflict)):
            self.assertIs(type(errors.from_reply(400, {}, b'{"error":{"code":"%s","message":"m"}}' % code.encode())),
                          cls, code)

    def test_events_expired_says_where_to_resume(self):
        e = errors.from_reply(410, {}, b'{"error":{"code":"events_expired","message":"m",'
                                       b'"resume_after":12,"oldest_seq":13}}')
        self.assertIs(type(e), ec.EventsExpired)
        self.assertEqual((e.resume_after, e.oldest_seq), (12, 13))

    def test_session_ended_carries_why_and_when(self):
        e = errors.from_reply(410, {}, b'{"error":{"code":"session_ended","message":"gone",'
                                       b'"end_reason":"container_dead","ended_at_ms":1790000000000}}')
        self.assertIsInstance(e, ec.SessionEnded)
        self.assertEqual((e.status, e.end_reason, e.ended_at_ms), (410, "container_dead", 1790000000000))

    def test_unknown_code_and_foreign_body(self):
        e = errors.from_reply(418, {}, b'{"error":{"code":"teapot","message":"short and stout"}}')
        self.assertIs(type(e), ec.EdgeallocError)
        self.assertEqual((e.code, e.message), ("teapot", "short and stout"))
        e = errors.from_reply(502, {}, b"<html>Bad Gateway</html>")
        self.assertIs(type(e), ec.EdgeallocError)
        self.assertEqual((e.status, e.code), (502, None))
        self.assertIn("Bad Gateway", e.message)

    def test_retry_after_as_a_date(self):
        self.assertAlmostEqual(errors.parse_retry_after("Thu, 01 Jan 2026 00:00:10 GMT", now=1767225600.0), 10.0)
        self.assertIsNone(errors.parse_retry_after("soon"))


class BackoffRules(unittest.TestCase):
    """When a claim is tried again and how long it waits (a fake clock)."""

    def backoff(self, retries=5, max_total_s=30.0, no_capacity=False, rand=1.0):
        self.now, self.slept = 0.0, []

        def sleep(s):
            self.slept.append(s)
            self.now += s
        return retry.Backoff(retries, max_total_s=max_total_s, no_capacity=no_capacity,
                             clock=lambda: self.now, sleep=sleep, rand=lambda: rand)

    def refusal(self, cls, retry_after=None):
        return cls("m", status=503, code="x", retry_after=retry_after)

    def test_what_is_retried(self):
        b = self.backoff()
        for cls in (ec.Overloaded, ec.Unavailable, ec.RateLimited, ec.ConnectionFailed):
            self.assertTrue(b.retryable(self.refusal(cls)), cls)
        for cls in (ec.NoCapacity, ec.QuotaExceeded, ec.InvalidRequest, ec.StaleToken, ec.EdgeallocError):
            self.assertFalse(b.retryable(self.refusal(cls)), cls)
        self.assertTrue(self.backoff(no_capacity=True).retryable(self.refusal(ec.NoCapacity)))

    def test_retry_after_is_honoured_with_jitter_above_it(self):
        b = self.backoff(rand=0.0)
        self.assertTrue(b.wait_after(self.refusal(ec.RateLimited, retry_after=2.0)))
        self.assertEqual(self.slept, [2.0])
        b = self.backoff(rand=1.0)
        self.assertTrue(b.wait_after(self.refusal(ec.RateLimited, retry_after=2.0)))
        self.assertEqual(self.slept, [2.5])

    def test_bounded_in_attempts_and_time(self):
        b = self.backoff(retries=3)
        while b.wait_after(self.refusal(ec.Overloaded)):
            pass
        self.assertEqual(len(self.slept), 3)
        self.assertEqual(self.slept, sorted(self.slept))  # growing
        b = self.backoff(retries=100, max_total_s=5.0)
        while b.wait_after(self.refusal(ec.Unavailable, retry_after=1.0)):
            pass
        self.assertLessEqual(self.now, 5.0)
        self.assertEqual(len(self.slept), 4)  # 1.25 s each: a fifth would end past 5 s


class AgainstTheServer(unittest.TestCase):

    def test_claim_get_renew_release(self):
        region, ids = fleet(1)
        c = client(ACME)
        s = c.claim(region, "p", lease_ms=5000, labels={"owner": "test"})
        self.assertEqual(s.status, 201)
        self.assertEqual((s["container_id"], s["tenant"], s["labels"]), (ids[0], "acme", {"owner": "test"}))
        self.assertEqual(s["data"], {"endpoint": "ws://%s:9222" % ids[0]})
        self.assertEqual(c.get(s["session_id"])["token"], s["token"])
        renewed = c.renew(s["session_id"], s["token"], lease_ms=60000)
        self.assertGreater(renewed["lease_expires_at_ms"], s["lease_expires_at_ms"])
        self.assertIsNone(c.release(s["session_id"], s["token"]))
        self.assertIsNone(c.release(s["session_id"], s["token"]))  # a retry: still no error
        with self.assertRaises(ec.SessionEnded) as ended:
            c.get(s["session_id"])
        self.assertEqual(ended.exception.end_reason, "released")
        self.assertEqual(client().containers.get(ids[0])["status"], "available")
        self.assertEqual(c.limits()["tenant"], "acme")

    def test_served_by_says_which_region_served(self):
        c = client(ACME)
        s = c.claim(fleet(1)[0], "p")
        self.assertEqual(s.served_by, "home")
        c.release(s["session_id"], s["token"])
        # py-home has nothing: its designated backup (--backup-region) serves.
        fleet(1, region="py-backup", pool="pb")
        with c.session("py-home", "pb", lease_ms=5000) as held:
            self.assertEqual((held.region, held.served_by), ("py-backup", "backup"))

    def test_session_renews_past_a_short_lease_and_releases_at_exit(self):
        region, ids = fleet(1)
        c = client(ACME)
        with c.session(region, "p", lease_ms=1500) as s:
            first = s.lease_expires_at_ms
            time.sleep(4)  # over twice the lease
            s.check()
            self.assertFalse(s.lost)
            self.assertEqual(c.get(s.id)["token"], s.token)
            self.assertGreater(s.lease_expires_at_ms, first + 2000)
            self.assertEqual(s.container_id, ids[0])
            session_id = s.id
            with self.assertRaises(ec.NoCapacity):  # held: the pool's only container
                c.claim(region, "p")
        self.assertEqual(client().containers.get(ids[0])["status"], "available")
        with self.assertRaises(ec.SessionEnded):
            c.get(session_id)

    def test_session_released_when_the_block_raises(self):
        region, ids = fleet(1)
        with self.assertRaises(KeyError):
            with client(ACME).session(region, "p", lease_ms=5000) as s:
                self.assertEqual(s.container_id, ids[0])
                raise KeyError("the block fails")
        self.assertEqual(client().containers.get(ids[0])["status"], "available")

    def test_session_lost_is_seen(self):
        region, _ = fleet(1)
        c = client(ACME)
        seen = []
        with self.assertRaises(ec.SessionLost) as raised:
            with c.session(region, "p", lease_ms=900, on_lost=seen.append) as s:
                c.release(s.id, s.token)  # someone else ends it
                deadline = time.monotonic() + 5
                while not s.lost and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.assertTrue(s.lost)
                self.assertIsInstance(s.lost_error, ec.SessionEnded)
                self.assertEqual(seen, [s.lost_error])
                with self.assertRaises(ec.SessionLost):
                    s.check()
        self.assertIsInstance(raised.exception.cause, ec.SessionEnded)  # at exit, the release was no error

    def test_session_lost_when_no_renew_gets_through(self):
        region, ids = fleet(1)
        proxy = Proxy(SERVER.port)
        try:
            with self.assertRaises(ec.SessionLost) as raised:
                with ec.Client(proxy.url, key=ACME).session(region, "p", lease_ms=1200) as s:
                    proxy.cut = True
                    time.sleep(2)  # past the lease: every renew found no server
                    self.assertTrue(s.lost)
        finally:
            proxy.close()
        self.assertIsInstance(raised.exception.cause, ec.SessionLost)
        self.assertIsInstance(raised.exception.cause.cause, ec.ConnectionFailed)
        # The lease's expiry on the server frees the container.
        deadline = time.monotonic() + 10
        while client().containers.get(ids[0])["status"] != "available" and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(client().containers.get(ids[0])["status"], "available")

    def test_typed_errors(self):
        region, ids = fleet(1)
        acme = client(ACME)
        with self.assertRaises(ec.UnknownPool) as e:
            acme.claim(unique("nowhere"), "p")
        self.assertEqual((e.exception.status, e.exception.code), (404, "unknown_pool"))
        self.assertTrue(e.exception.request_id)
        held = acme.claim(region, "p", lease_ms=30000)
        with self.assertRaises(ec.NoCapacity) as e:
            acme.claim(region, "p")
        self.assertEqual((e.exception.status, e.exception.code), (503, "no_capacity"))
        self.assertGreaterEqual(e.exception.retry_after, 1)
        acme.release(held["session_id"], held["token"])

        s = acme.claim(region, "p", lease_ms=30000)
        with self.assertRaises(ec.StaleToken) as e:
            acme.renew(s["session_id"], s["token"] + 1)
        self.assertEqual((e.exception.status, e.exception.code), (409, "stale_token"))
        with self.assertRaises(ec.StaleToken):
            acme.release(s["session_id"], s["token"] + 1)
        with self.assertRaises(ec.Forbidden):
            client(BOLT).get(s["session_id"])  # another tenant's
        with self.assertRaises(ec.Conflict):
            client().containers.delete(ids[0])  # picked
        acme.release(s["session_id"], s["token"])

        with self.assertRaises(ec.NotFound) as e:
            acme.get("s_00", request_id="pyclient-test-1")
        self.assertEqual((e.exception.status, e.exception.request_id), (404, "pyclient-test-1"))
        with self.assertRaises(ec.NotFound):
            client().containers.get(unique("no-such"))
        with self.assertRaises(ec.InvalidRequest) as e:
            acme.claim(region, "p", lease_ms=0)
        self.assertEqual(e.exception.code, "invalid_field")
        with self.assertRaises(ec.Forbidden):
            next(acme.containers.list())  # a tenant key
        with self.assertRaises(ec.Unauthorized):
            client("not-a-key").get("s_00")
        env = dict(os.environ)
        try:
            os.environ.pop("EDGEALLOC_KEY", None)
            with self.assertRaises(ec.Unauthorized) as e:
                ec.Client(SERVER.url).get("s_00")
            self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))
            os.environ["EDGEALLOC_KEY"] = ACME
            self.assertEqual(ec.Client(SERVER.url).limits()["tenant"], "acme")
        finally:
            os.environ.clear()
            os.environ.update(env)
        with self.assertRaises(ec.ConnectionFailed) as e:
            ec.Client("http://127.0.0.1:%d" % edgealloc_server.free_port(), timeout=2).get("s_00")
        self.assertIsNone(e.exception.status)

    def test_idempotent_claim_replays(self):
        region, _ = fleet(2)
        c = client(ACME)
        key = unique("idem")
        first = c.claim(region, "p", idempotency_key=key)
        again = c.claim(region, "p", idempotency_key=key)
        self.assertFalse(first.replayed)
        self.assertTrue(again.replayed)
        self.assertEqual(again["session_id"], first["session_id"])
        c.release(first["session_id"], first["token"])

    def test_claim_whose_answer_was_lost_is_retried_to_the_same_session(self):
        # The case is a claim the server made and answered 201 while the
        # client never heard; an answer of another status lost (a 429 or 503
        # of a slow, sanitized server) is not it, so the case is set up
        # again, at most three times, and its first answer is shown if never.
        for _ in range(3):
            region, _ = fleet(2)
            proxy = Proxy(SERVER.port, drop_first=True)
            try:
                s = ec.Client(proxy.url, key=ACME).claim(region, "p", retries=3)
            finally:
                proxy.close()
            if proxy.dropped_answer.startswith(b"HTTP/1.1 201"):
                break
            client(ACME).release(s["session_id"], s["token"])
        self.assertTrue(proxy.dropped_answer.startswith(b"HTTP/1.1 201"), proxy.dropped_answer)
        self.assertEqual(proxy.connections, 2)
        self.assertTrue(s.replayed)  # the first attempt's session, not a second one
        sessions = list(client(ACME).list_sessions(region=region))
        self.assertEqual([x["session_id"] for x in sessions], [s["session_id"]])
        client(ACME).release(s["session_id"], s["token"])

    def test_lists_follow_the_cursor(self):
        region, ids = fleet(5)
        c = client(ACME)
        run = unique("run")
        claimed = [c.claim(region, "p", labels={"run": run}) for _ in ids]
        pages = []
        request = c.transport.request

        def counting(method, path, **kw):
            pages.append(path)
            return request(method, path, **kw)

        c.transport.request = counting
        listed = list(c.list_sessions(label="run:" + run, page_size=2))
        self.assertEqual(sorted(x["session_id"] for x in listed), sorted(x["session_id"] for x in claimed))
        self.assertGreaterEqual(len(pages), 3)
        self.assertEqual([x["id"] for x in client().containers.list(region=region, page_size=2)], sorted(ids))
        for s in claimed:
            c.release(s["session_id"], s["token"])
        ended = list(c.list_sessions(label="run:" + run, page_size=2, state="ended"))
        # Newest first: by id from the last (ids made in one ms sort by their random part).
        self.assertEqual([x["session_id"] for x in ended], sorted((x["session_id"] for x in claimed), reverse=True))
        self.assertEqual({x["end_reason"] for x in ended}, {"released"})

    def test_claim_retried_through_no_capacity(self):
        region, ids = fleet(1)
        c = client(ACME)
        held = c.claim(region, "p")
        with self.assertRaises(ec.NoCapacity):  # only when asked
            c.claim(region, "p", retries=5)
        releaser = threading.Timer(1.0, c.release, (held["session_id"], held["token"]))
        releaser.start()
        started = time.monotonic()
        try:
            s = c.claim(region, "p", retries=20, retry_no_capacity=True, max_retry_s=20)
        finally:
            releaser.join()
        self.assertGreaterEqual(time.monotonic() - started, 0.9)
        self.assertEqual(s["container_id"], ids[0])
        self.assertNotEqual(s["session_id"], held["session_id"])
        c.release(s["session_id"], s["token"])

    def test_claim_waits_for_a_release(self):
        region, ids = fleet(1)
        c = client(ACME, timeout=0.5)  # wait_ms lengthens it for the claim
        held = c.claim(region, "p")
        releaser = threading.Timer(1.0, c.release, (held["session_id"], held["token"]))
        releaser.start()
        try:
            # The server holds the request (after an interim 100 Continue) until the release.
            s = c.claim(region, "p", wait_ms=10000)
        finally:
            releaser.join()
        self.assertEqual(s["container_id"], ids[0])
        c.release(s["session_id"], s["token"])

    def test_claim_retried_through_rate_limit(self):
        region, _ = fleet(3)
        c = client(SLOW)  # claims_per_s=1: a bucket of one claim
        first = c.claim(region, "p")
        with self.assertRaises(ec.RateLimited) as e:
            c.claim(region, "p")
        self.assertGreaterEqual(e.exception.retry_after, 1)
        second = c.claim(region, "p", retries=5)
        self.assertNotEqual(second["session_id"], first["session_id"])
        for s in (first, second):
            c.release(s["session_id"], s["token"])

    def test_containers_admin(self):
        region, ids = fleet(2)
        admin = client()
        self.assertEqual(admin.containers.drain(ids[0])["status"], "draining")
        self.assertEqual([x["id"] for x in admin.containers.list(region=region, status="available")], [ids[1]])
        admin.containers.delete(ids[1])
        with self.assertRaises(ec.NotFound):
            admin.containers.get(ids[1])
        with self.assertRaises(ec.NoCapacity):
            client(ACME).claim(region, "p")
        # (A "ready" heartbeat would bring the drained container back.)
        beat = {"container_id": ids[0], "state": "draining", "load": 0.5, "ts_ms": int(time.time() * 1000)}
        self.assertEqual(admin.heartbeats([beat])["accepted"], 1)

    def test_attributes_and_selectors(self):
        region = unique("r")
        admin = client()
        admin.containers.register([
            {"id": region + "-a100", "region": region, "pool": "p", "attributes": {"gpu": "a100", "chrome": "126"}},
            {"id": region + "-t4", "region": region, "pool": "p", "attributes": {"gpu": "t4"}}])
        self.assertEqual(admin.containers.get(region + "-a100")["attributes"], {"chrome": "126", "gpu": "a100"})
        self.assertEqual([x["id"] for x in admin.containers.list(region=region, attribute="gpu:t4")],
                         [region + "-t4"])
        # Re-registered without attributes: kept.
        admin.containers.register([{"id": region + "-t4", "region": region, "pool": "p", "latency_ms": 3}])
        self.assertEqual(admin.containers.get(region + "-t4")["attributes"], {"gpu": "t4"})
        acme = client(ACME)
        s = acme.claim(region, "p", selector={"gpu": "a100", "chrome": ["125", "126"]})
        self.assertEqual(s["container_id"], region + "-a100")
        with self.assertRaises(ec.NoCapacity):  # the only match is held
            acme.claim(region, "p", selector={"gpu": "a100"})
        with self.assertRaises(ec.NoMatch) as e:  # at once, though it may wait
            acme.claim(region, "p", selector={"gpu": "h100"}, wait_ms=20000)
        self.assertEqual((e.exception.status, e.exception.code), (404, "no_match"))
        self.assertIn('{"gpu":["h100"]}', str(e.exception))
        self.assertIsInstance(e.exception, ec.NotFound)
        acme.release(s["session_id"], s["token"])

    def test_pressure(self):
        region = unique("r")
        client().containers.register([{"id": region + "-%d" % i, "region": region, "pool": "p", "slots": 3}
                                      for i in range(2)])
        acme = client(ACME)
        s = acme.claim(region, "p", lease_ms=30000)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                got = acme.pressure(region, "p")
                if got["slots_used"] == 1:
                    break
            except ec.UnknownPool:
                pass  # the mirror has not read it yet
            time.sleep(0.1)
        self.assertEqual((got["region"], got["pool"], got["slots"], got["slots_used"], got["slots_free"]),
                         (region, "p", 6, 1, 5))
        self.assertEqual(got["waiting"], 0)
        self.assertEqual(got["recommended_buffer"], 0)
        with self.assertRaises(ec.UnknownPool):
            acme.pressure(region, "q")
        acme.release(s["session_id"], s["token"])


class Events(unittest.TestCase):

    def test_events_resume_through_a_dropped_connection(self):
        region, ids = fleet(1)
        c = client(ACME)
        s = c.claim(region, "p", lease_ms=60000)
        # The session's own events, the tenant's view: a proxy cut for a
        # while between two of them, the iterator resumes after the first.
        proxy = Proxy(SERVER.port)
        try:
            watcher = ec.Client(proxy.url, key=ACME)
            seen = []
            it = watcher.events(wait_ms=200, retry_s=0.05)
            while not seen or seen[-1].get("session_id") != s["session_id"]:
                seen.append(next(it))
            # Cut while the iterator waits in another thread: its polls end,
            # its reconnects are refused, then the release commits.
            got = []
            reader = threading.Thread(target=lambda: got.append(next(it)), daemon=True)
            proxy.cut = True
            cut_at = proxy.connections
            reader.start()
            time.sleep(0.8)
            c.release(s["session_id"], s["token"])
            time.sleep(0.3)
            self.assertGreater(proxy.connections, cut_at)  # refused tries
            proxy.cut = False
            reader.join(30)
            ended = got[0]
            self.assertEqual((ended["type"], ended["session_id"], ended["end_reason"]),
                             ("session.ended", s["session_id"], "released"))
            self.assertTrue(all(e.get("tenant") == "acme" for e in seen + [ended]))
            seqs = [e["seq"] for e in seen + [ended]]
            self.assertEqual(seqs, sorted(set(seqs)))
        finally:
            proxy.close()

    def test_renew_never_shortens_unless_asked(self):
        region, _ = fleet(1)
        c = client(ACME)
        s = c.claim(region, "p", lease_ms=60000)
        kept = c.renew(s["session_id"], s["token"], lease_ms=1000)
        self.assertEqual(kept["lease_expires_at_ms"], s["lease_expires_at_ms"])
        shorter = c.renew_shorter(s["session_id"], s["token"], lease_ms=1000)
        self.assertLess(shorter["lease_expires_at_ms"], s["lease_expires_at_ms"] - 30000)


class PipInstall(unittest.TestCase):

    def test_installs_offline_into_a_venv_and_works(self):
        """What clients/python/README.md says for a machine without network:
        a venv that sees Debian's setuptools and wheel, pip without build
        isolation (which would fetch them) and without an index."""
        work = tempfile.mkdtemp(prefix="edgealloc-pyclient-pip.")
        try:
            # A copy, so that the build's leftovers (build/, *.egg-info) stay out of the tree.
            source = os.path.join(work, "src")
            shutil.copytree(CLIENT_DIR, source, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
            venv = os.path.join(work, "venv")
            made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                                  capture_output=True, text=True, timeout=120)
            self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
            python = os.path.join(venv, "bin", "python")
            pip = subprocess.run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                                  "--disable-pip-version-check", source],
                                 capture_output=True, text=True, timeout=120)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            region, _ = fleet(1)
            script = ("import edgealloc_client as ec, sys\n"
                      "assert ec.__file__.startswith(sys.argv[1]), ec.__file__\n"
                      "with ec.Client(sys.argv[2], key=sys.argv[3]).session(sys.argv[4], 'p', lease_ms=5000) as s:\n"
                      "    print(s.container_id)\n")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            run = subprocess.run([python, "-c", script, venv, SERVER.url, ACME, region],
                                 capture_output=True, text=True, timeout=60, cwd=work, env=env)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertEqual(run.stdout.strip(), region + "-c0")
        finally:
            shutil.rmtree(work, ignore_errors=True)


def main():
    global BINARY
    BINARY = sys.argv.pop(1)
    SERVER.start()
    try:
        result = unittest.main(exit=False, verbosity=2).result
        if not result.wasSuccessful():
            print("---- the server's output\n" + SERVER.output(), end="")
    finally:
        code = SERVER.stop()
    assert code == 0, "server exit %s" % code
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
