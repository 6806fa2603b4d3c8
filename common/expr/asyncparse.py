"""``parse_filter`` for event-loop code: a long filter is parsed in a worker thread.

Parsing and binding cost roughly a microsecond per character of filter text
(long literal lists included, ``literal_lists.py``) and per element of a list
parameter. A short filter is parsed inline (a thread hand-off would cost
more); a long one in a thread, so the loop keeps answering other requests
while a 200,000-id ``in`` list is bound. A short filter without parameters comes from
``parsecache.py`` when it was parsed before.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from common.expr.ast import Expr
from common.expr.parsecache import PARSED
from common.expr.parser import parse_filter
from common.schema import CollectionSchema

#: Filter characters plus list-parameter elements parsed inline, on the loop: well under a millisecond.
INLINE_SIZE = 2048


def filter_size(text: str, params: Mapping[str, Any] | None) -> int:
    """Characters of ``text`` plus the elements of its list parameters: what parsing costs."""
    return len(text) + sum(len(v) for v in (params or {}).values() if isinstance(v, list | tuple))


async def parse_filter_async(text: str, schema: CollectionSchema, params: Mapping[str, Any] | None = None) -> Expr:
    """``parse_filter(text, schema, params)``; in a worker thread when the filter is long.

    Raises ``IllegalFilter`` as ``parse_filter`` does. Cancelling the caller leaves the thread to finish.
    """
    if not params and len(text) <= INLINE_SIZE:
        return PARSED.parse(text, schema)  # the same filter, request after request: bound once
    if filter_size(text, params) <= INLINE_SIZE:
        return parse_filter(text, schema, params)
    return await asyncio.to_thread(parse_filter, text, schema, params)
