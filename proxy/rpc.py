"""The proxy's RPC boundary: every error becomes a Milvus status in the method's response.

It also sets the database the request works in (``dbcontext``) and, for writes and reads, refuses
a database whose properties deny them (``common/database_properties.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import grpc
import structlog

from common.database_properties import check_reading, check_writing
from common.rpcstatus import Describe, Handler, error_boundary, type_and_message
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


def _internal_error_in(method: str) -> Describe:
    return lambda err: f"internal error in {method}: {type_and_message(err)}"


def _in_database(fn: Handler) -> Handler:
    """Run ``fn`` in the request's database, after the database's access check."""

    @functools.wraps(fn)
    async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
        database = request_database(request, context)
        token = enter_database(database)
        try:
            await _check_access(self, fn.__name__, database)
            return await fn(self, request, context)
        finally:
            leave_database(token)

    return handler


def milvus_rpc(response_type: type[Any]) -> Callable[[Handler], Handler]:
    """Answer a ``StrataError`` (or any crash) with a Milvus status in ``response_type``
    (``common.rpcstatus.error_boundary``; a method answering a bare ``common_pb2.Status`` gets it),
    the method running in the request's database."""
    boundary = error_boundary(response_type, milvus_status, _internal_error_in, log)
    return lambda fn: boundary(_in_database(fn))
