"""Python client for edgealloc's HTTP API (docs/api.md of the edgealloc
repository). Standard library only.

    from edgealloc_client import Client
    client = Client("http://127.0.0.1:8080")
    with client.session("weur", "chrome", lease_ms=30000) as s:
        use(s.data["endpoint"])
"""

from .client import DEFAULT_SERVER, Client, Containers
from .errors import (BodyTooLarge, Conflict, ConnectionFailed, EdgeallocError, EventsExpired, Forbidden, HeadersTooLarge,
                     InternalError, InvalidRequest, MethodNotAllowed, NoCapacity, NoMatch, NotFound, NotReady, Overloaded,
                     QuotaExceeded, RateLimited, ServerNotImplemented, SessionEnded, SessionLost, StaleToken,
                     Unauthorized, Unavailable, UnknownPool)
from .session import Session
from .transport import Reply

__version__ = "0.1.0"

__all__ = [
    "BodyTooLarge", "Client", "Conflict", "ConnectionFailed", "Containers", "DEFAULT_SERVER", "EdgeallocError", "EventsExpired",
    "Forbidden", "HeadersTooLarge", "InternalError", "InvalidRequest", "MethodNotAllowed", "NoCapacity",
    "NoMatch", "NotFound", "NotReady", "Overloaded", "QuotaExceeded", "RateLimited", "Reply",
    "ServerNotImplemented", "Session", "SessionEnded", "SessionLost", "StaleToken", "Unauthorized",
    "Unavailable", "UnknownPool", "__version__",
]
