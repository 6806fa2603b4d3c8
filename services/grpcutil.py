"""gRPC bootstrap and the translation of errors into response statuses."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

import grpc
import structlog

from protos import common_pb2
from services.errors import ErrorCode, StrataError, error_from_code

log = structlog.get_logger().bind(component="rpc")

# Unlimited message sizes, like pymilvus' own channel options.
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
SERVER_OPTIONS = [
    ("grpc.max_send_message_length", -1),
    ("grpc.max_receive_message_length", -1),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.so_reuseport", 0),
]


def ok_status() -> common_pb2.Status:
    return common_pb2.Status(code=ErrorCode.OK, reason="")


def error_status(err: StrataError) -> common_pb2.Status:
    return common_pb2.Status(code=int(err.code), reason=err.message)


def raise_for_status(status: common_pb2.Status) -> None:
    """Turn a non-OK status received from another component back into its typed error."""
    if status.code != ErrorCode.OK:
        raise error_from_code(status.code, status.reason)


Resp = TypeVar("Resp")


def rpc_method(
    response_type: type[Any],
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Decorate a unary servicer method: a ``StrataError`` becomes ``response_type(status=...)``.

    Any other exception is logged and answered as UNEXPECTED; the server keeps running.
    """

    def wrap(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(fn)
        async def handler(self: Any, request: Any, context: grpc.aio.ServicerContext) -> Any:
            try:
                return await fn(self, request, context)
            except StrataError as err:
                return response_type(status=error_status(err))
            except Exception as err:  # RPC boundary: log, answer, keep serving
                log.exception("rpc failed", method=fn.__name__)
                return response_type(
                    status=common_pb2.Status(code=ErrorCode.UNEXPECTED, reason=f"{type(err).__name__}: {err}")
                )

        return handler

    return wrap


async def start_server(
    add_servicers: Callable[[grpc.aio.Server], None], *, host: str = "127.0.0.1", port: int = 0
) -> tuple[grpc.aio.Server, int]:
    """Start a grpc.aio server on ``host:port`` (0 = a free port); returns it and its port."""
    server = grpc.aio.server(options=SERVER_OPTIONS)
    add_servicers(server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"cannot bind {host}:{port}")
    await server.start()
    return server, bound


def insecure_channel(address: str) -> grpc.aio.Channel:
    return grpc.aio.insecure_channel(address, options=CHANNEL_OPTIONS)


Stub = TypeVar("Stub")


class StubCache(Generic[Stub]):
    """One channel and stub per address, kept for reuse; ``close()`` closes every channel."""

    def __init__(self, stub_type: Callable[[grpc.aio.Channel], Stub]) -> None:
        self._stub_type = stub_type
        self._entries: dict[str, tuple[grpc.aio.Channel, Stub]] = {}

    def get(self, address: str) -> Stub:
        entry = self._entries.get(address)
        if entry is None:
            channel = insecure_channel(address)
            entry = self._entries[address] = (channel, self._stub_type(channel))
        return entry[1]

    async def close(self) -> None:
        for channel, _ in self._entries.values():
            await channel.close()
        self._entries.clear()
