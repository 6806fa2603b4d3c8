"""The proxy's RPC boundary: every error becomes a Milvus status in the method's response."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import structlog
from pymilvus.grpc_gen import common_pb2

from common.errors import StrataError
from proxy.status import milvus_status

log = structlog.get_logger().bind(component="proxy")


def milvus_rpc(response_type: type[Any]) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Answer a ``StrataError`` (or any crash) with a Milvus status in ``response_type``."""

    def wrap(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)
        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await fn(self, request, context)
            except StrataError as err:
                status = milvus_status(err)
            except Exception as err:  # RPC boundary: log, answer, keep serving
                log.exception("rpc failed", method=fn.__name__)
                status = milvus_status(StrataError(f"internal error in {fn.__name__}: {type(err).__name__}: {err}"))
            if response_type is common_pb2.Status:
                return status
            return response_type(status=status)

        return handler

    return wrap
