"""Typed errors: one class per error code of docs/api.md's error table, all
under EdgeallocError, so that a caller catches what it can act on (NoCapacity,
StaleToken, ...) and lets the rest through."""

import email.utils
import json
import time


class EdgeallocError(Exception):
    """A request that did not succeed. status is the HTTP status (None when no
    answer came), code the error's code ("no_capacity", ...; None when the
    body was not an edgealloc error), message its text, request_id the
    reply's X-Request-Id, retry_after the Retry-After in seconds (or None),
    body the whole decoded error body."""

    def __init__(self, message, status=None, code=None, request_id=None, retry_after=None, body=None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.request_id = request_id
        self.retry_after = retry_after
        self.body = body if body is not None else {}

    def detail(self, field):
        """A field of the body's error object beside code and message (an
        ended session's end_reason, ...); None when the body lacks it."""
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get(field) if isinstance(error, dict) else None

    def __str__(self):
        parts = [str(self.status) if self.status is not None else "no answer"]
        if self.code:
            parts.append(self.code)
        text = "%s: %s" % (" ".join(parts), self.message)
        if self.request_id:
            text += " (request id %s)" % self.request_id
        return text


class ConnectionFailed(EdgeallocError):
    """No HTTP answer: the connection was refused, reset or timed out. The
    request may or may not have been done by the server."""


class InvalidRequest(EdgeallocError):
    """400: bad_request, invalid_json, invalid_field or invalid_request (an
    unknown field; the message names the field). Retrying the same request
    cannot help."""


class BodyTooLarge(InvalidRequest):
    """413 body_too_large."""


class HeadersTooLarge(InvalidRequest):
    """431 headers_too_large."""


class Unauthorized(EdgeallocError):
    """401: no key, or one the server does not know."""


class Forbidden(EdgeallocError):
    """403: the key's role may not do this, or the session is another tenant's."""


class NotFound(EdgeallocError):
    """404: unknown path, session or container (a session released or expired
    is unknown too)."""


class UnknownPool(NotFound):
    """404 unknown_pool: no container of the claim's pool was ever registered
    in any region it names (or all were deleted): a retry cannot succeed until
    one registers. The message names the pools the region has."""


class NoMatch(NotFound):
    """404 no_match: the claim's selector matches no container registered in
    its pool (in its region or any fallback region), whatever their state;
    answered at once, never after wait_ms. Retrying will not help until a
    matching container is registered."""


class MethodNotAllowed(EdgeallocError):
    """405."""


class StaleToken(EdgeallocError):
    """409: the fencing token is no longer the session's."""


class Conflict(EdgeallocError):
    """409: the operation contradicts the current state (removing a picked
    container)."""


class SessionEnded(EdgeallocError):
    """410: the session was ended by the server; end_reason and ended_at_ms
    say why and when (None when the body does not carry them)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.end_reason = self.detail("end_reason")
        self.ended_at_ms = self.detail("ended_at_ms")


class EventsExpired(EdgeallocError):
    """410: the events after the cursor were pruned (--event-retention-ms);
    resume_after is the cursor to resume after, oldest_seq the oldest kept."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.resume_after = self.detail("resume_after")
        self.oldest_seq = self.detail("oldest_seq")


class QuotaExceeded(EdgeallocError):
    """429: the tenant holds its maximum of concurrent sessions."""


class RateLimited(EdgeallocError):
    """429: the tenant's claims came faster than its rate; retry_after says
    when to come back. Nothing was claimed."""


class InternalError(EdgeallocError):
    """500: a bug in the server; the request id finds its log line."""


class ServerNotImplemented(EdgeallocError):
    """501 not_implemented: a transfer coding the server does not speak."""


class NoCapacity(EdgeallocError):
    """503: no container fits the claim (now, or within its wait_ms)."""


class Overloaded(EdgeallocError):
    """503: the server shed this request; nothing of it was taken."""


class Unavailable(EdgeallocError):
    """503: the database could not be reached, or the server is starting or
    stopping."""


class NotReady(EdgeallocError):
    """503 not_ready, from GET /readyz."""


class SessionLost(EdgeallocError):
    """Raised by Session.check() and at the end of a `with client.session()`
    block: the session is no longer held (a renew was refused, or no renew
    succeeded before the lease ran out). cause is the error that showed it."""

    def __init__(self, message, cause=None):
        super().__init__(message,
                         status=getattr(cause, "status", None),
                         code=getattr(cause, "code", None),
                         request_id=getattr(cause, "request_id", None),
                         body=getattr(cause, "body", None))
        self.cause = cause


BY_CODE = {
    "bad_request": InvalidRequest,
    "invalid_json": InvalidRequest,
    "invalid_field": InvalidRequest,
    "invalid_request": InvalidRequest,
    "body_too_large": BodyTooLarge,
    "headers_too_large": HeadersTooLarge,
    "unauthorized": Unauthorized,
    "forbidden": Forbidden,
    "not_found": NotFound,
    "unknown_pool": UnknownPool,
    "no_match": NoMatch,
    "method_not_allowed": MethodNotAllowed,
    "stale_token": StaleToken,
    "conflict": Conflict,
    "session_ended": SessionEnded,
    "events_expired": EventsExpired,
    "quota_exceeded": QuotaExceeded,
    "rate_limited": RateLimited,
    "internal": InternalError,
    "not_implemented": ServerNotImplemented,
    "no_capacity": NoCapacity,
    "overloaded": Overloaded,
    "unavailable": Unavailable,
    "not_ready": NotReady,
}

# What says "this session is no longer there" when renewing or releasing it.
SESSION_GONE = (NotFound, SessionEnded, StaleToken)


def parse_retry_after(value, now=None):
    """Retry-After in seconds: whole seconds, or an HTTP date; None when
    absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def from_reply(status, headers, raw):
    """The error for a non-2xx reply: its code's class, or EdgeallocError itself
    for a code this client does not know (and for a body that is not an
    edgealloc error, such as a proxy's HTML page)."""
    request_id = headers.get("X-Request-Id")
    retry_after = parse_retry_after(headers.get("Retry-After"))
    body, code, message = {}, None, None
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except (UnicodeDecodeError, ValueError):
        body = {}
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        code = error.get("code") if isinstance(error.get("code"), str) else None
        message = error.get("message") if isinstance(error.get("message"), str) else None
    else:
        body = body if isinstance(body, dict) else {}
    if message is None:
        message = raw[:200].decode("utf-8", "replace").strip() or "HTTP %d" % status
    cls = BY_CODE.get(code, EdgeallocError)
    return cls(message, status=status, code=code, request_id=request_id, retry_after=retry_after, body=body)
