"""HTTP helpers of the Python benches (lists_and_waits.py, dashboard_reads.py,
noisy_neighbour.py): a free loopback port and a keep-alive JSON client of one
thread, with a bearer key when the server has a keys file. Standard library
only."""

import http.client
import json
import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
