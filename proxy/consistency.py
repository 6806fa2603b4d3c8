"""Guarantee timestamps for reads (ARCHITECTURE §5.3, MILVUS_NOTES §3)."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from pymilvus.grpc_gen import common_pb2

from common.tsoutil import compose

BOUNDED_STALENESS_MS = 5_000
EVENTUALLY_TS = 1


async def guarantee_timestamp(
    *,
    requested_level: int,
    use_default: bool,
    collection_level: int,
    request_ts: int,
    fresh_ts: Callable[[], Awaitable[int]],
) -> int:
    """The timestamp a delegator's tsafe must reach before it answers.

    ``fresh_ts`` is an async callable returning a new TSO timestamp (only called for Strong).
    """
    level = collection_level if use_default else requested_level
    match level:
        case common_pb2.Strong:
            return await fresh_ts()
        case common_pb2.Bounded:
            return compose(int(time.time() * 1000) - BOUNDED_STALENESS_MS)
        case common_pb2.Eventually:
            return EVENTUALLY_TS
        case _:  # Session and Customized: the client's own last write timestamp
            return max(request_ts, EVENTUALLY_TS)
