"""The proxy's RPC boundary: every error becomes a Milvus status in the method's response.

It also sets the database the request works in (``dbcontext``) and, for writes and reads, refuses
a database whose properties deny them (``common/database_properties.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog
from pymilvus.grpc_gen import common_pb2

from common.database_properties import check_reading, check_writing
from common.errors import StrataError
from proxy.dbcontext import enter_database, leave_database, request_database
from proxy.status import milvus_status

log = structlog.get_logger().bind(component="proxy")

# The RPCs Milvus counts as DML (refused by database.force.deny.writing) and DQL (by ...reading).
_ACCESS_CHECKS: dict[str, Callable[[Any], None]] = {
    **{name: check_writing for name in ("Insert", "Upsert", "Delete", "Import")},
    **{name: check_reading for name in ("Search", "Query", "HybridSearch")},
}


async def _check_access(proxy: Any, method: str, database: str) -> None:
    check = _ACCESS_CHECKS.get(method)
    cache = getattr(proxy, "_cache", None)
    if check is not None and cache is not None:
        check((await cache.database(database)).properties)


def milvus_rpc(response_type: type[Any]) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Answer a ``StrataError`` (or any crash) with a Milvus status in ``response_type``."""

    def wrap(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)
        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            database = request_database(request, context)
            token = enter_database(database)
            try:
                await _check_access(self, fn.__name__, database)
                return await fn(self, request, context)
            except StrataError as err:
                status = milvus_status(err)
            except Exception as err:  # RPC boundary: log, answer, keep serving
                log.exception("rpc failed", method=fn.__name__)
                status = milvus_status(StrataError(f"internal error in {fn.__name__}: {type(err).__name__}: {err}"))
            finally:
                leave_database(token)
            if response_type is common_pb2.Status:
                return status
            return response_type(status=status)

        return handler

    return wrap
