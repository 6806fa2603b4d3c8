"""gRPC bootstrap: servers, channels, stubs, health; the status rules are in ``common/rpcstatus.py``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

import grpc
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_health.v1.health import aio as health_aio

from common import internaltls, tracing
from common.grpcdecode import DecodeGuard
from common.rpcstatus import (
    Handler,
    checked_stub,
    error_boundary,
    error_status,
    ok_status,
    raise_for_status,
    type_and_message,
)

log = structlog.get_logger().bind(component="rpc")

# Messages between roles: large (a query node's answer carries up to the proxy's maxOutputSize,
# an insert batch up to its serverMaxRecvSize) but bounded, since anyone who reaches a role's port
# can send to it. The proxy's own server takes its limits from ProxyLimits (message_size_options).
INTERNAL_MAX_MESSAGE = 1 << 30
CHANNEL_OPTIONS = [
    ("grpc.max_send_message_length", INTERNAL_MAX_MESSAGE),
    ("grpc.max_receive_message_length", INTERNAL_MAX_MESSAGE),
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]
SERVER_OPTIONS = [
    ("grpc.max_send_message_length", INTERNAL_MAX_MESSAGE),
    ("grpc.max_receive_message_length", INTERNAL_MAX_MESSAGE),
    ("grpc.http2.min_ping_interval_without_data_ms", 5_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.so_reuseport", 0),
]


def message_size_options(*, max_receive: int, max_send: int) -> list[tuple[str, int]]:
    """Server options: ``SERVER_OPTIONS`` with these message size limits. A larger request is refused
    by gRPC with RESOURCE_EXHAUSTED before it is read into memory; a larger answer fails likewise."""
    sizes = {"grpc.max_receive_message_length": max_receive, "grpc.max_send_message_length": max_send}
    return [(key, sizes.get(key, value)) for key, value in SERVER_OPTIONS]


def rpc_method(response_type: type[Any]) -> Callable[[Handler], Handler]:
    """Decorate a unary servicer method: a ``StrataError`` becomes ``response_type(status=...)``.

    Any other exception is logged and answered as UNEXPECTED; the server keeps running
    (``common.rpcstatus.error_boundary``).
    """
    return error_boundary(response_type, error_status, lambda method: type_and_message, log)


OVERALL = ""  # the health-check name of the whole server (grpc.health.v1)


class Health:
    """The ``grpc.health.v1.Health`` service of one role's gRPC server.

    It reports the whole server (``""``, what probes ask by default) and each
    name in ``common`` (fully qualified gRPC service names). Every status
    starts NOT_SERVING when the server starts; the role marks them SERVING
    with ``serving()`` once it can do its work, and ``stopping()`` turns all
    of them NOT_SERVING for good when it begins to stop, so a load balancer
    or probe stops sending it work before its server goes away.

    Legal transitions, per name: NOT_SERVING -> SERVING -> NOT_SERVING (stopping,
    final); a name may also go back from SERVING to NOT_SERVING before stopping.
    """

    def __init__(self, services: Sequence[str] = ()) -> None:
        self._servicer = health_aio.HealthServicer()
        self._names = (OVERALL, *services)
        self._serving: set[str] = set()
        self._stopping = False

    def is_serving(self, name: str = OVERALL) -> bool:
        """Whether ``name`` answers SERVING now."""
        return not self._stopping and name in self._serving

    async def attach(self, server: grpc.aio.Server) -> None:
        """Mark every name NOT_SERVING and register the service; before ``server.start()``."""
        for name in self._names:
            await self._servicer.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(self._servicer, server)

    async def serving(self, *names: str) -> None:
        """Mark ``names`` (default: every name) SERVING; ignored once ``stopping()`` ran."""
        for name in names or self._names:
            if name not in self._names:
                raise ValueError(f"unknown health-check name {name!r}")
            await self._servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
            self._serving.add(name)

    async def stopping(self) -> None:
        """Mark every name NOT_SERVING, permanently (later ``serving()`` calls are ignored)."""
        self._stopping = True
        await self._servicer.enter_graceful_shutdown()


class _HandlerCollector:
    """Stands in for a server when a generated ``add_*Servicer_to_server`` registers its handlers."""

    def __init__(self) -> None:
        self.handlers: list[grpc.GenericRpcHandler] = []

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self.handlers.extend(handlers)

    def add_registered_method_handlers(self, service_name: str, method_handlers: dict[str, Any]) -> None:
        # The generic handlers collected above serve the same methods.
        pass


class LateServicers(grpc.GenericRpcHandler):
    """Servicers that a started server takes on later; until then their methods answer UNIMPLEMENTED.

    grpc.aio accepts handlers only before ``start()``. A standby coordinator
    must answer health checks while it waits for the election, and serves its
    own service only once elected: its server registers this handler before
    starting and ``add()``s the coordinator servicer when it wins.
    """

    def __init__(self) -> None:
        self._handlers: tuple[grpc.GenericRpcHandler, ...] = ()

    def add(self, add_servicers: Callable[[Any], None]) -> None:
        """Serve what ``add_servicers`` (a generated ``add_*Servicer_to_server`` call) registers."""
        collector = _HandlerCollector()
        add_servicers(collector)
        self._handlers = (*self._handlers, *collector.handlers)

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        for handler in self._handlers:
            found = handler.service(handler_call_details)
            if found is not None:
                return found
        return None


async def start_server(
    add_servicers: Callable[[grpc.aio.Server], None],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    health: Health | None = None,
    options: Sequence[tuple[str, int]] = tuple(SERVER_OPTIONS),
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    credentials: grpc.ServerCredentials | None = None,
    internal: bool = True,
) -> tuple[grpc.aio.Server, int]:
    """Start a grpc.aio server on ``host:port`` (0 = a free port); returns it and its port.

    With ``health``, the server also answers ``grpc.health.v1.Health`` (NOT_SERVING until the role says so).
    Every method answers INVALID_ARGUMENT to a request whose bytes do not decode.
    ``options``: the server's channel options (default ``SERVER_OPTIONS``); ``interceptors`` run
    before every handler; with ``credentials`` the port speaks TLS only. An ``internal`` port (one
    other roles call) without ``credentials`` speaks the process's internal TLS if installed
    (``common/internaltls.py``); the proxy's client port passes ``internal=False``.
    """
    # Tracing (when on) runs first, so a span covers the other interceptors too (common/tracing).
    interceptors = [*tracing.server_interceptors(), *interceptors]
    server = grpc.aio.server(options=list(options), interceptors=interceptors or None)
    # Servicers register through a guard: undecodable requests answer INVALID_ARGUMENT (grpcdecode.py).
    registrar = cast(grpc.aio.Server, DecodeGuard(server))
    add_servicers(registrar)
    if health is not None:
        await health.attach(registrar)
    address = f"{host}:{port}"
    if credentials is None and internal:
        credentials = internaltls.server_credentials()
    bound = server.add_insecure_port(address) if credentials is None else server.add_secure_port(address, credentials)
    if bound == 0:
        raise OSError(f"cannot bind {host}:{port}")
    await server.start()
    return server, bound


def internal_channel(address: str) -> grpc.aio.Channel:
    """A channel to another role's port: the process's internal TLS if installed, else plaintext."""
    return internaltls.secure_channel(address, CHANNEL_OPTIONS, interceptors=tracing.client_interceptors())


Stub = TypeVar("Stub")


class StubCache(Generic[Stub]):
    """One channel and stub per address, kept for reuse; ``close()`` closes every channel.

    The stubs are checked (``common.rpcstatus.checked_stub``): a unary call whose response
    carries a non-OK status raises its typed error.
    """

    def __init__(self, stub_type: Callable[[grpc.aio.Channel], Stub]) -> None:
        self._stub_type = stub_type
        self._entries: dict[str, tuple[grpc.aio.Channel, Stub]] = {}

    def get(self, address: str) -> Stub:
        entry = self._entries.get(address)
        if entry is None:
            channel = internal_channel(address)
            entry = self._entries[address] = (channel, checked_stub(self._stub_type(channel)))
        return entry[1]

    async def close(self) -> None:
        for channel, _ in self._entries.values():
            await channel.close()
        self._entries.clear()


__all__ = [
    "CHANNEL_OPTIONS",
    "OVERALL",
    "SERVER_OPTIONS",
    "Health",
    "LateServicers",
    "StubCache",
    "error_status",
    "internal_channel",
    "message_size_options",
    "ok_status",
    "raise_for_status",
    "rpc_method",
    "start_server",
]
