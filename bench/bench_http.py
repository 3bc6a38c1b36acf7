"""HTTP helpers of the Python benches (lists_and_waits.py, dashboard_reads.py,
tenant_lists.py, noisy_neighbour.py): starting and stopping the server (the
tests' tests/support/edgealloc_server.py, passed on) and a keep-alive JSON
client of one thread, with a bearer key when the server has a keys file.
Standard library only."""

import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "support"))
from edgealloc_server import free_port, serve, stop, wait_answers  # noqa: E402

__all__ = ["Client", "free_port", "serve", "stop", "wait_answers"]


class Client:
    def __init__(self, port, key=None, timeout=60):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        self.auth = {"Authorization": "Bearer " + key} if key else {}

    def raw(self, method, path, body=None):
        """(status, body bytes)."""
        data = None if body is None else json.dumps(body)
        headers = dict(self.auth)
        if data:
            headers["Content-Type"] = "application/json"
        self.conn.request(method, path, body=data, headers=headers)
        r = self.conn.getresponse()
        return r.status, r.read()

    def call(self, method, path, body=None):
        """(status, the body's JSON, or None for an empty body)."""
        status, raw = self.raw(method, path, body)
        return status, (json.loads(raw) if raw else None)

    def text(self, path):
        return self.raw("GET", path)[1].decode()
