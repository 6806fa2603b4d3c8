"""Extra routes of the operations port (``common/opsserver.py``), such as the web console.

A route set answers the requests it knows and returns None for the others, so
the server tries the next one and finally answers 404.
"""

from __future__ import annotations

from typing import Protocol

#: HTTP status, content type and body of an answer.
OpsAnswer = tuple[int, str, bytes]


class OpsRoutes(Protocol):
    async def answer(self, method: str, target: str) -> OpsAnswer | None:
        """The answer to ``method target`` (the request line's path with its query), or None when
        the path is not one of these routes. Must not raise for bad input: a 4xx answer says why."""
        ...
