"""The abuser's connections: asyncio keep-alive HTTP/1.1, one request in
flight each, reconnecting when the server closes. Standard library only."""

import asyncio
import json
import re


class AConn:
    """A minimal HTTP/1.1 client connection (Content-Length bodies, as the
    server answers). A request the server answers before taking its whole
    body (413, 401) is read like any other: its answer, then the close."""

    def __init__(self, port, key):
        self.port, self.key = port, key
        self.r = self.w = None

    async def req(self, method, path, body=b""):
        """(status, body); status 0 when the connection failed or was reset
        before an answer came."""
        try:
            if self.w is None:
                self.r, self.w = await asyncio.open_connection("127.0.0.1", self.port)
            head = ("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                    "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                    % (method, path, self.key, len(body))).encode()
            self.w.write(head + body)
            hdr = await self.r.readuntil(b"\r\n\r\n")
            m = re.search(rb"\r\ncontent-length: *(\d+)", hdr, re.I)
            data = await self.r.readexactly(int(m.group(1))) if m else b""
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            self.close()
            return 0, b""
        if re.search(rb"\r\nconnection: *close", hdr, re.I):
            self.close()
        return int(hdr[9:12]), data

    def close(self):
        if self.w is not None:
            self.w.close()
        self.r = self.w = None


def claim_body(region, pool, **extra):
    return json.dumps(dict(region=region, pool=pool, **extra)).encode()


def status_key(status, body):
    """An answer as counted: its status, and for a refusal its error code (503
    no_capacity and 503 overloaded are different defences)."""
    m = re.search(rb'"code":"([a-z_]+)"', body[:200]) if status >= 400 else None
    return "%d %s" % (status, m.group(1).decode()) if m else str(status)


def refused(status_counts):
    """Answers that refused the abuser: 4xx and 5xx, and 0 (reset or closed
    before an answer). A 429 or 503 is a defence at work, never a failure."""
    return sum(v for k, v in status_counts.items() if k[0] in "045")
