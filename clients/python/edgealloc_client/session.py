"""A claimed session held for the length of a `with` block: claimed at entry,
renewed by a background thread well before its lease runs out, released at
exit whatever way the block ends."""

import threading
import time

from . import errors
from .retry import Backoff

# The lease a session asks for when none is given: the server's own default
# (--lease-ms), said explicitly so that the renew thread knows the lease.
DEFAULT_LEASE_MS = 60000


class Session:
    """What `client.session(...)` returns. Inside the block: id, token,
    container_id, data, labels, region, pool, tenant, lease_expires_at_ms (the
    latest reply's), served_by (the claim's: "home", "fallback" or "backup"),
    reply (that reply whole), lost and lost_error, check().

    A renew refused for good (any 4xx but 429: stale_token, not_found,
    session_ended, forbidden, ...), or no renew succeeding before the lease
    runs out (the server unreachable or refusing with 503),
    marks the session lost: lost becomes True, on_lost(error) is called from
    the renew thread, check() raises SessionLost, and so does the end of the
    block when nothing else is raised there: work done after the loss was
    done without holding the container."""

    def __init__(self, client, region, pool=None, lease_ms=None, retries=3, renew_fraction=1 / 3,
                 on_lost=None, claim_args=None):
        if not 0 < renew_fraction < 1:
            raise ValueError("renew_fraction must be between 0 and 1")
        self._client = client
        self._claim = dict(claim_args or {}, region=region, pool=pool, retries=retries,
                           lease_ms=lease_ms or DEFAULT_LEASE_MS)
        self._lease_s = self._claim["lease_ms"] / 1000.0
        self._interval_s = self._lease_s * renew_fraction
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self._released = False
        self.reply = None
        self._served_by = None
        self.lost = False
        self.lost_error = None

    # ---- what the block reads ----

    def _field(self, name):
        with self._lock:
            return self.reply[name]

    id = property(lambda self: self._field("session_id"))
    session_id = id
    token = property(lambda self: self._field("token"))
    container_id = property(lambda self: self._field("container_id"))
    data = property(lambda self: self._field("data"))
    labels = property(lambda self: self._field("labels"))
    region = property(lambda self: self._field("region"))
    pool = property(lambda self: self._field("pool"))
    tenant = property(lambda self: self._field("tenant"))
    lease_expires_at_ms = property(lambda self: self._field("lease_expires_at_ms"))
    served_by = property(lambda self: self._served_by)

    def check(self):
        """Raises SessionLost once the session is no longer held."""
        if self.lost:
            raise errors.SessionLost("session %s is no longer held: %s" % (self.id, self.lost_error),
                                     cause=self.lost_error)

    # ---- the block ----

    def __enter__(self):
        sent = time.monotonic()
        self.reply = self._client.claim(**self._claim)
        self._served_by = self.reply.get("served_by")  # a renew's reply has none
        self._expires = sent + self._lease_s  # measured from before the claim: never late
        self._thread = threading.Thread(target=self._renew_loop, name="edgealloc-renew %s" % self.id,
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.release()
        except errors.EdgeallocError:
            if exc_type is None and not self.lost:
                raise
            # Already failing (or lost): the original error is the one to see,
            # and the lease ends the session on the server anyway.
        if exc_type is None:
            self.check()
        return False

    def release(self):
        """Stops renewing and releases the session (once; at the end of the
        block it is done for you). A session already gone is not an error."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        if self._released:
            return
        self._released = True
        backoff = Backoff(2, max_total_s=5.0)
        while True:
            try:
                self._client.release(self.id, self.token)
                return
            except errors.SESSION_GONE:
                return
            except errors.EdgeallocError as e:
                if not backoff.wait_after(e):
                    raise

    # ---- the renew thread ----

    def _mark_lost(self, error):
        self.lost_error = error
        self.lost = True
        if self._on_lost is not None:
            self._on_lost(error)

    def _renew_loop(self):
        next_at = time.monotonic() + self._interval_s
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            sent = time.monotonic()
            # A renew answered after the lease ran out is of no use: wait no longer.
            timeout = min(self._client.transport.timeout, max(0.2, self._expires - sent))
            try:
                reply = self._client.renew(self.id, self.token, lease_ms=self._claim["lease_ms"], timeout=timeout)
            except errors.EdgeallocError as e:
                if e.status is not None and 400 <= e.status < 500 and e.status != 429:
                    self._mark_lost(e)  # the session is gone or not ours: retrying cannot help
                    return
                now = time.monotonic()
                if now >= self._expires:
                    self._mark_lost(errors.SessionLost("no renew succeeded before the lease ran out; last: %s" % e,
                                                       cause=e))
                    return
                # Try again soon, but within what is left of the lease.
                next_at = now + min(e.retry_after or 0.5, max(0.05, (self._expires - now) / 3))
                continue
            with self._lock:
                self.reply = reply
            self._expires = sent + self._lease_s
            next_at = sent + self._interval_s
