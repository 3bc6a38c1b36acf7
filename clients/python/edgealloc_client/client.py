"""The API's operations as methods (docs/api.md): sessions on Client itself,
containers under Client.containers. Each returns the decoded reply (a Reply:
a dict with .status and .headers) or raises an error of errors.py."""

import os
import time
import urllib.parse
import uuid

from . import errors
from .retry import Backoff
from .session import Session
from .transport import Transport

DEFAULT_SERVER = "http://127.0.0.1:8080"


def _quoted(value):
    return urllib.parse.quote(str(value), safe="")


def _pages(transport, path, field, query, request_id):
    """Every item of a cursor-paginated list. A page may be short or empty yet
    carry a cursor, so only a null next_cursor ends the listing."""
    query = dict(query)
    while True:
        page = transport.request("GET", path, query=query, request_id=request_id)
        for item in page.get(field) or []:
            yield item
        cursor = page.get("next_cursor")
        if not cursor:
            return
        query["cursor"] = cursor


class Client:
    """A client of one edgealloc server.

    key: the bearer key; EDGEALLOC_KEY when not given; none (an open server)
    when neither is set. timeout: seconds for each request (a claim's wait_ms
    is added to it)."""

    def __init__(self, server=DEFAULT_SERVER, key=None, timeout=10.0):
        if key is None:
            key = os.environ.get("EDGEALLOC_KEY") or None
        self.transport = Transport(server, key=key, timeout=timeout)
        self.containers = Containers(self.transport)

    # ---- sessions ----

    def claim(self, region, pool=None, lease_ms=None, wait_ms=None, fallback_regions=None, labels=None,
              idempotency_key=None, retries=0, retry_no_capacity=False, max_retry_s=30.0, request_id=None,
              placement=None, selector=None):
        """Claims a container: the session (session_id, token, container_id,
        data, lease_expires_at_ms, ...). With retries > 0, tries again after
        overloaded, unavailable, rate_limited and connection failures (and
        no_capacity when retry_no_capacity), honouring Retry-After, for at most
        max_retry_s; every attempt carries one idempotency key (a new uuid4
        when none is given), so a claim whose answer was lost comes back as
        the same session (reply.replayed) instead of a second one. placement:
        "fittest", "packed" or "distributed" (None: the server's --placement);
        the session says which slot of its container it holds (reply["slot"]).
        selector: {"gpu": "a100", "chrome": ["125", "126"]}, only containers
        whose attributes match every key (a list: one of its values); NoMatch
        when no registered container matches, at once (never retried)."""
        if retries > 0 and idempotency_key is None:
            idempotency_key = "py-" + uuid.uuid4().hex
        body = {"region": region}
        for name, value in (("pool", pool), ("lease_ms", lease_ms), ("wait_ms", wait_ms),
                            ("fallback_regions", fallback_regions), ("labels", labels),
                            ("idempotency_key", idempotency_key), ("placement", placement),
                            ("selector", selector)):
            if value is not None:
                body[name] = list(value) if name == "fallback_regions" else value
        extra = (wait_ms or 0) / 1000.0
        backoff = Backoff(retries, max_total_s=max_retry_s, no_capacity=retry_no_capacity)
        while True:
            try:
                return self.transport.request("POST", "/v1/sessions", body=body, request_id=request_id,
                                              extra_timeout=extra)
            except errors.EdgeallocError as e:
                if not backoff.wait_after(e):
                    raise

    def get(self, session_id, request_id=None):
        """The session, as the claim answered it (with its current lease)."""
        return self.transport.request("GET", "/v1/sessions/" + _quoted(session_id), request_id=request_id)

    def renew(self, session_id, token, lease_ms=None, request_id=None, timeout=None):
        """Extends the lease (to lease_ms from now, else the server's default);
        the session with its new lease_expires_at_ms. timeout: seconds for
        this request, when the client's is longer than what is left of the
        lease."""
        body = {"token": token}
        if lease_ms is not None:
            body["lease_ms"] = lease_ms
        return self.transport.request("POST", "/v1/sessions/%s/renew" % _quoted(session_id), body=body,
                                      request_id=request_id, timeout=timeout)

    def release(self, session_id, token, request_id=None):
        """Ends the session; its container is available again."""
        self.transport.request("DELETE", "/v1/sessions/" + _quoted(session_id), query={"token": token},
                               request_id=request_id)

    def list_sessions(self, region=None, pool=None, label=None, tenant=None, page_size=None, request_id=None,
                      state=None):
        """Iterates over the live sessions, fetching page after page as it
        goes. label is "KEY:VALUE"; tenant is for an admin key; page_size
        is each page's ?limit= (the server's default when None); state
        "ended" lists the ended sessions the server keeps instead, newest
        first, each with its end_reason and ended_at_ms."""
        query = {"region": region, "pool": pool, "label": label, "tenant": tenant, "limit": page_size,
                 "state": state}
        return _pages(self.transport, "/v1/sessions", "sessions", query, request_id)

    def renew_shorter(self, session_id, token, lease_ms, request_id=None):
        """Renews to lease_ms from now even when that ends the lease sooner
        (a plain renew never shortens it)."""
        body = {"token": token, "lease_ms": lease_ms, "shorten": True}
        return self.transport.request("POST", "/v1/sessions/%s/renew" % _quoted(session_id), body=body,
                                      request_id=request_id)

    def events(self, after=None, type=None, wait_ms=25000, retry_s=1.0, stop=None):
        """Iterates over the events (docs/api.md "Events") after the cursor
        `after` (None: the oldest kept), as they commit, for ever (or until
        stop(), a callable, says so between pages). Long-polls with wait_ms;
        after a dropped connection or a 5xx it waits retry_s and resumes
        after the last event it yielded, so none is skipped or repeated.
        Each event is a dict; event["cursor"] if present (SQLite in shard
        files), else event["seq"], is where to resume after it. A cursor past
        the retention raises EventsExpired (its resume_after says where)."""
        while stop is None or not stop():
            query = {"after": after, "type": type, "wait_ms": wait_ms, "limit": 1000}
            try:
                page = self.transport.request("GET", "/v1/events", query=query,
                                              extra_timeout=wait_ms / 1000.0)
            except (errors.ConnectionFailed, errors.Unavailable, errors.Overloaded,
                    errors.InternalError):
                time.sleep(retry_s)
                continue
            for event in page["events"]:
                yield event
                after = event.get("cursor", event["seq"])
            after = page["next"]

    def limits(self, tenant=None, request_id=None):
        """The tenant's limits and their use now."""
        return self.transport.request("GET", "/v1/limits", query={"tenant": tenant}, request_id=request_id)

    def pressure(self, region, pool=None, request_id=None):
        """One pool's pressure (GET /v1/pressure): its containers by state,
        slots, slots_used and slots_free, the claims waiting for it,
        claims_per_s and no_capacity_per_s (None until the server has two
        reads of the fleet's claim counts), heartbeat_lag_ms, age_ms and
        version of the capacity snapshot every count comes from (the same
        as GET /v1/capacity's of that version), warm_buffer, buffer_slots
        and recommended_buffer: the containers to add so that its free slots
        stay at least its buffer once the waiting claims took theirs. Raises
        UnknownPool for a pool the server's snapshot does not know."""
        return self.transport.request("GET", "/v1/pressure", query={"region": region, "pool": pool},
                                      request_id=request_id)

    def session(self, region, pool=None, lease_ms=None, retries=3, renew_fraction=1 / 3, on_lost=None,
                **claim_args):
        """A context manager: claims at entry (with claim's retries), renews in
        a background thread every renew_fraction of the lease, releases at
        exit. See session.py."""
        return Session(self, region, pool=pool, lease_ms=lease_ms, retries=retries,
                       renew_fraction=renew_fraction, on_lost=on_lost, claim_args=claim_args)

    # ---- containers' side ----

    def heartbeats(self, items, request_id=None):
        """Reports liveness: items are {"container_id", "state", "load",
        "ts_ms"} dicts. The reply's "accepted" counts them."""
        return self.transport.request("POST", "/v1/heartbeats", body={"heartbeats": list(items)},
                                      request_id=request_id)


class Containers:
    """The containers of the fleet (an admin key)."""

    def __init__(self, transport):
        self.transport = transport

    def list(self, region=None, pool=None, status=None, page_size=None, request_id=None, attribute=None):
        """Iterates over the containers, in id order, page after page.
        attribute: "KEY:VALUE", only containers with that attribute."""
        query = {"region": region, "pool": pool, "status": status, "limit": page_size,
                 "attribute": attribute}
        return _pages(self.transport, "/v1/containers", "containers", query, request_id)

    def get(self, container_id, request_id=None):
        return self.transport.request("GET", "/v1/containers/" + _quoted(container_id), request_id=request_id)

    def register(self, containers, request_id=None):
        """Registers or updates containers: dicts of id, region, pool,
        latency_ms, data, slots (sessions it holds at once, default 1),
        attributes (a string map a claim's selector matches; left out, a
        re-registration keeps the stored ones). The reply's "registered"
        counts them."""
        return self.transport.request("POST", "/v1/containers", body={"containers": list(containers)},
                                      request_id=request_id)

    def drain(self, container_id, request_id=None):
        """No new claims for it (at once if available, when released if
        picked); the container after the request."""
        return self.transport.request("POST", "/v1/containers/%s/drain" % _quoted(container_id),
                                      request_id=request_id)

    def undrain(self, container_id, request_id=None):
        """Takes back a drain; NotFound from a server that has no undrain."""
        return self.transport.request("POST", "/v1/containers/%s/undrain" % _quoted(container_id),
                                      request_id=request_id)

    def delete(self, container_id, request_id=None):
        """Removes a container that is not picked (Conflict if it is)."""
        self.transport.request("DELETE", "/v1/containers/" + _quoted(container_id), request_id=request_id)
