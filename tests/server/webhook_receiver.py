"""The webhook receiver of tests/server/webhooks_test.py, written with the
standard library alone (it checks each Standard Webhooks signature with
hmac), and the setup around it: a secret, a keys file naming acme's webhook,
and the nodes started on it."""
import base64
import hashlib
import hmac
import http.server
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from edgealloc_server import die_with_parent, free_port, keys_file, serve, stop, wait_answers  # noqa: E402

ADMIN, ACME, BOLT = "adm-K1", "acme-K2", "bolt-K3"


def fail(msg):
    print("FAIL " + msg, file=sys.stderr)
    sys.exit(1)


def event_key(e):
    """What names an event: its seq, and with --shards its region too (one
    log a shard file, the region's, so two files' events can share a seq;
    the event's cursor names the reader's place in every file, and differs
    between readers that started at different times)."""
    return (e["region"], e["seq"]) if "cursor" in e else e["seq"]


class Receiver:
    """An HTTP(S) server that records each POST, checks its signature, and
    answers as `mode` says: "ok" (200), "fail" (500) or "hang" (never, until
    released)."""

    def __init__(self, key, tls_context=None):
        self.key = key
        self.lock = threading.Lock()
        self.posts = []  # (answer status, webhook-id, events) in arrival order
        self.mode = "ok"
        self.fail_next = 0
        self.hanging = 0
        self.release = threading.Event()
        self.bad_signatures = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.check(self.headers, body)
                status = receiver.answer()
                if status is None:
                    with receiver.lock:
                        receiver.hanging += 1
                    receiver.release.wait(120)
                    with receiver.lock:
                        receiver.hanging -= 1
                    return
                with receiver.lock:
                    receiver.posts.append((status, self.headers["webhook-id"],
                                           json.loads(body)["events"]))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls_context is not None:
            self.server.socket = tls_context.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def check(self, headers, body):
        """Standard Webhooks: v1,base64(HMAC-SHA256(key, id.timestamp.body))."""
        signed = ("%s.%s." % (headers["webhook-id"], headers["webhook-timestamp"])).encode() + body
        want = base64.b64encode(hmac.new(self.key, signed, hashlib.sha256).digest()).decode()
        given = [s.split(",", 1)[1] for s in headers.get("webhook-signature", "").split()
                 if s.startswith("v1,")]
        age = abs(time.time() - int(headers["webhook-timestamp"]))
        if not any(hmac.compare_digest(want, g) for g in given) or age > 300:
            with self.lock:
                self.bad_signatures.append(headers["webhook-id"])

    def answer(self):
        with self.lock:
            if self.fail_next > 0:
                self.fail_next -= 1
                return 500
            return {"ok": 200, "fail": 500, "hang": None}[self.mode]

    def delivered(self):
        """The events of the batches answered 200, repeats dropped, in order."""
        seen, out = set(), []
        with self.lock:
            for status, _, events in self.posts:
                for e in events if status == 200 else []:
                    if event_key(e) not in seen:
                        seen.add(event_key(e))
                        out.append(e)
        return out

    def close(self):
        self.release.set()
        self.server.shutdown()


class Setup:
    """A receiver, a secret, a keys file naming acme's webhook, and nodes."""

    def __init__(self, binary, tmp, db, tls=None, url_host="127.0.0.1", env=None):
        self.binary, self.tmp, self.db, self.env = binary, tmp, db, env
        raw = os.urandom(32)
        self.receiver = Receiver(raw, tls)
        secret = os.path.join(tmp, "acme.whsec")
        with open(secret, "w") as f:
            f.write("whsec_" + base64.b64encode(raw).decode() + "\n")
        os.chmod(secret, 0o600)
        scheme = "https" if tls is not None else "http"
        url = "%s://%s:%d/hooks/edgealloc" % (scheme, url_host, self.receiver.port)
        self.keys = keys_file(tmp, "%s admin\n%s tenant acme webhook=%s webhook_secret_file=%s\n"
                              "%s tenant bolt\n" % (ADMIN, ACME, url, secret, BOLT), 0o600)
        self.nodes = []
        self.extra = []  # flags every node of this setup is started with

    def start(self, name="a", extra=()):
        port = free_port()
        log = open(os.path.join(self.tmp, name + ".log"), "ab")
        # A dead node's lease lapses after 5 s here (30 s by default), so the
        # crash cases wait 5 s for the survivor, not 30.
        proc = serve(self.binary, self.db, port, ["--keys", self.keys, "--webhook-lease-ms", "5000"] + self.extra + list(extra),
                     stdout=log, stderr=log,
                     stdin=subprocess.DEVNULL, preexec_fn=die_with_parent, env=self.env)
        if not wait_answers(port, "/readyz", proc, 60):
            fail("node %s not ready:\n%s" % (name, open(os.path.join(self.tmp, name + ".log")).read()))
        self.nodes.append((proc, log))
        return proc, port

    def close(self):
        for proc, log in self.nodes:
            stop(proc, timeout=30, kill_late=True)
            log.close()
        self.receiver.close()
