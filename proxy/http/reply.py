"""What a route answers and how routes are named."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from proxy.http.body import Body
from proxy.http.invoke import Call


@dataclass(frozen=True, slots=True)
class Reply:
    """``data`` of ``{"code": 0, "data": ...}``, and keys beside it (search's ``topks``)."""

    data: Any
    extra: dict[str, Any] = field(default_factory=dict)


#: A route: the request's calls and body in, ``data`` (or a ``Reply``) out; raises ``RestError``.
Route = Callable[[Call, Body], Awaitable[Any]]


def kv_list(pairs: Any) -> list[dict[str, str]]:
    return [{"key": p.key, "value": p.value} for p in pairs]
