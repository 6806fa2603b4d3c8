"""The proxy's last slow requests, in memory, for the web console (``common/webui/``).

The access interceptor (``access.py``) offers every finished unary request;
one that took at least ``threshold_ms`` (``proxy.slow_request_ms``, Milvus's
``proxy.slowQuerySpanInSeconds``) is kept, the newest ``capacity`` of them. A
record carries what the access log line does (method, database, collection,
status, code, latency, client address), never the request's body.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_CAPACITY = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class SlowRequest:
    at: float  # wall-clock seconds when it finished
    method: str
    db: str
    collection: str
    status: str  # "success" or "fail", as the access log says
    code: str  # the Milvus status code, or the gRPC status name of a refused call
    latency_ms: float
    peer: str


class SlowRequests:
    """A bounded log of the slow requests; not thread-safe (used on the proxy's event loop)."""

    def __init__(self, *, threshold_ms: float, capacity: int = DEFAULT_CAPACITY) -> None:
        if threshold_ms < 0 or capacity <= 0:
            raise ValueError("threshold_ms must be >= 0 and capacity > 0")
        self.threshold_ms = threshold_ms
        self._kept: deque[SlowRequest] = deque(maxlen=capacity)

    def offer(
        self, *, method: str, db: str, collection: str, ok: bool, code: object, latency_ms: float, peer: str
    ) -> None:
        """Keep the request if it was slow (evicting the oldest kept one when full)."""
        if latency_ms < self.threshold_ms:
            return
        self._kept.append(SlowRequest(
            at=time.time(), method=method, db=db, collection=collection, status="success" if ok else "fail",
            code=str(code), latency_ms=round(latency_ms, 3), peer=peer,
        ))

    def recent(self) -> list[SlowRequest]:
        """The kept requests, newest first."""
        return list(reversed(self._kept))

    def view(self) -> dict[str, Any]:
        """The console's ``slow_requests`` view."""
        return {
            "threshold_ms": self.threshold_ms,
            "capacity": self._kept.maxlen,
            "requests": [asdict(r) for r in self.recent()],
        }
