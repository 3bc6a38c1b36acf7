"""One HTTP request and its reply: JSON in, JSON out, a typed error for any
status that is not 2xx (errors.py), ConnectionFailed when no answer came."""

import http.client
import json
import socket
import urllib.parse

from . import errors


class Reply(dict):
    """A decoded JSON reply (a dict; empty for 204) with the status and the
    headers it came with."""

    def __init__(self, body, status, headers):
        super().__init__(body)
        self.status = status
        self.headers = headers

    @property
    def request_id(self):
        return self.headers.get("X-Request-Id")

    @property
    def served_by(self):
        """Of a claim: which of its regions served it, "home" (its own),
        "fallback" (one of its fallback_regions) or "backup" (the server's
        designated backup of its region, --backup-region); reply["region"]
        names it. None for any other reply."""
        return self.get("served_by")

    @property
    def replayed(self):
        """True when a claim was answered from its idempotency key (the
        session of an earlier claim, nothing new claimed)."""
        return self.headers.get("Idempotent-Replayed", "").lower() == "true"


class Transport:
    """Sends requests to one server. A new connection per request: the
    session's renew thread and the caller's threads never share one, and a
    connection the server closed while idle is never reused."""

    def __init__(self, server, key=None, timeout=10.0, user_agent="edgealloc-client-python"):
        url = urllib.parse.urlsplit(server if "://" in server else "http://" + server)
        if url.scheme not in ("http", "https"):
            raise ValueError("server must be an http:// or https:// URL, not %r" % server)
        self.scheme = url.scheme
        self.host = url.hostname or "127.0.0.1"
        self.port = url.port
        self.prefix = url.path.rstrip("/")  # a server behind a proxy under a path
        self.key = key
        self.timeout = timeout
        self.user_agent = user_agent

    def _connection(self, timeout):
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return cls(self.host, self.port, timeout=timeout)

    def request(self, method, path, query=None, body=None, request_id=None, extra_timeout=0.0, timeout=None):
        """method path?query with body as JSON; the Reply, or a raised error.
        timeout replaces the transport's for this request; extra_timeout
        lengthens it for a request the server may hold on purpose (a claim's
        wait_ms)."""
        target = self.prefix + path
        if query:
            pairs = [(k, v) for k, v in query.items() if v is not None]
            if pairs:
                target += "?" + urllib.parse.urlencode(pairs)
        headers = {"Accept": "application/json", "User-Agent": self.user_agent}
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        if request_id:
            headers["X-Request-Id"] = request_id
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            headers["Content-Type"] = "application/json"
        conn = self._connection((self.timeout if timeout is None else timeout) + extra_timeout)
        try:
            conn.request(method, target, body=data, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
            status, reply_headers = resp.status, resp.headers
        except (OSError, socket.timeout, http.client.HTTPException) as e:
            raise errors.ConnectionFailed("%s %s: %s" % (method, path, e or type(e).__name__),
                                          request_id=request_id) from e
        finally:
            conn.close()
        if not 200 <= status < 300:
            raise errors.from_reply(status, reply_headers, raw)
        decoded = {}
        if raw:
            try:
                decoded = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise errors.EdgeallocError("%s %s: the reply is not JSON" % (method, path), status=status,
                                            request_id=reply_headers.get("X-Request-Id")) from e
        return Reply(decoded if isinstance(decoded, dict) else {"value": decoded}, status, reply_headers)
