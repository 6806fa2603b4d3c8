"""Undecodable request bytes answer INVALID_ARGUMENT on a real grpc.aio server (``start_server``),
for every kind of method and both ways of registering one; decodable requests are served as before."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import grpc
import pytest
from grpc_health.v1.health_pb2 import HealthCheckRequest as Request
from grpc_health.v1.health_pb2 import HealthCheckResponse as Response

from common.grpcdecode import DecodeGuard
from common.grpcutil import Health, LateServicers, internal_channel, start_server

SERVICE = "strata.test.Echo"
GARBAGE = b"\xff\xff\xff\xff\x0f\x01\x02"  # a field with an invalid wire type: no message decodes it
GOOD = Request(service="ok").SerializeToString()
SERVING = Response(status=Response.SERVING)


class Echo:
    """One behaviour per kind of method; each answers SERVING once per request it received."""

    async def unary(self, request: Request, context: grpc.aio.ServicerContext) -> Response:
        assert isinstance(request, Request)
        return SERVING

    async def stream_out(self, request: Request, context: grpc.aio.ServicerContext) -> AsyncIterator[Response]:
        assert isinstance(request, Request)
        for _ in range(2):
            yield SERVING

    async def stream_out_by_writes(self, request: Request, context: grpc.aio.ServicerContext) -> None:
        assert isinstance(request, Request)
        await context.write(SERVING)

    async def stream_in(self, requests: AsyncIterator[Request], context: grpc.aio.ServicerContext) -> Response:
        async for request in requests:
            assert isinstance(request, Request)
        return SERVING

    async def both(
        self, requests: AsyncIterator[Request], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Response]:
        async for request in requests:
            assert isinstance(request, Request)
            yield SERVING

    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        kw: dict[str, Any] = {
            "request_deserializer": Request.FromString,
            "response_serializer": Response.SerializeToString,
        }
        return {
            "Unary": grpc.unary_unary_rpc_method_handler(self.unary, **kw),
            "StreamOut": grpc.unary_stream_rpc_method_handler(self.stream_out, **kw),
            "StreamOutByWrites": grpc.unary_stream_rpc_method_handler(self.stream_out_by_writes, **kw),
            "StreamIn": grpc.stream_unary_rpc_method_handler(self.stream_in, **kw),
            "Both": grpc.stream_stream_rpc_method_handler(self.both, **kw),
        }


def _register(server: Any, *, registered: bool) -> None:
    handlers = Echo().handlers()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
    if registered:  # as generated add_*Servicer_to_server functions do
        server.add_registered_method_handlers(SERVICE, handlers)


@pytest.fixture(params=["registered", "generic", "late"])
async def channel(request: pytest.FixtureRequest) -> AsyncIterator[grpc.aio.Channel]:
    late = LateServicers()
    if request.param == "late":
        server, port = await start_server(lambda s: s.add_generic_rpc_handlers((late,)), health=Health())
        late.add(lambda s: _register(s, registered=True))
    else:
        server, port = await start_server(lambda s: _register(s, registered=request.param == "registered"))
    ch = internal_channel(f"127.0.0.1:{port}")
    try:
        yield ch
    finally:
        await ch.close()
        await server.stop(None)


def _raw(channel: grpc.aio.Channel, kind: str, method: str) -> Any:
    make = getattr(channel, kind)
    return make(f"/{SERVICE}/{method}", request_serializer=lambda b: b, response_deserializer=Response.FromString)


async def _refused(call: Any) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call
    return info.value


def _assert_invalid_argument(err: grpc.aio.AioRpcError) -> None:
    assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, (err.code(), err.details())
    details = err.details() or ""
    assert details.startswith("cannot decode the request: Error parsing message"), details
    assert "grpc.health.v1.HealthCheckRequest" in details and "Traceback" not in details


async def test_unary_request_methods(channel: grpc.aio.Channel) -> None:
    unary = _raw(channel, "unary_unary", "Unary")
    _assert_invalid_argument(await _refused(unary(GARBAGE, timeout=5)))
    assert await unary(GOOD, timeout=5) == SERVING
    for method in ("StreamOut", "StreamOutByWrites"):
        stream = _raw(channel, "unary_stream", method)
        _assert_invalid_argument(await _refused(_collect(stream(GARBAGE, timeout=5))))
        assert all(r == SERVING for r in await _collect(stream(GOOD, timeout=5)))


async def _collect(call: Any) -> list[Response]:
    return [r async for r in call]


async def _requests(*blobs: bytes) -> AsyncIterator[bytes]:
    for blob in blobs:
        yield blob


async def test_request_streaming_methods(channel: grpc.aio.Channel) -> None:
    stream_in = _raw(channel, "stream_unary", "StreamIn")
    _assert_invalid_argument(await _refused(stream_in(_requests(GOOD, GARBAGE, GOOD), timeout=5)))
    assert await stream_in(_requests(GOOD, GOOD), timeout=5) == SERVING
    both = _raw(channel, "stream_stream", "Both")
    call = both(_requests(GOOD, GARBAGE), timeout=5)
    answers = []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        async for answer in call:
            answers.append(answer)
    _assert_invalid_argument(info.value)
    assert answers == [SERVING]  # the good request before the bad one was answered
    assert await _collect(both(_requests(GOOD, GOOD, GOOD), timeout=5)) == [SERVING] * 3


async def test_the_health_service_is_guarded_too() -> None:
    server, port = await start_server(lambda s: None, health=Health())
    channel = internal_channel(f"127.0.0.1:{port}")
    try:
        check = channel.unary_unary(
            "/grpc.health.v1.Health/Check", request_serializer=lambda b: b, response_deserializer=Response.FromString
        )
        _assert_invalid_argument(await _refused(check(GARBAGE, timeout=5)))
        assert (await check(b"", timeout=5)).status == Response.NOT_SERVING
    finally:
        await channel.close()
        await server.stop(None)


class _RecordingServer:
    """Records what a servicer's registration hands to the server."""

    def __init__(self) -> None:
        self.generic: list[grpc.GenericRpcHandler] = []
        self.registered: list[str] = []

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        self.generic.extend(handlers)

    def add_registered_method_handlers(self, service_name: str, handlers: Any) -> None:
        self.registered.append(service_name)


def test_methods_are_registered_as_generic_handlers_only() -> None:
    # grpc.aio waits on one pending task per registered method on every call (grpcdecode.py).
    server = _RecordingServer()
    _register(DecodeGuard(server), registered=True)  # type: ignore[arg-type]  # a recording stand-in
    assert server.registered == []
    assert len(server.generic) == 1
    details = SimpleNamespace(method=f"/{SERVICE}/Unary", invocation_metadata=())
    assert server.generic[0].service(details) is not None  # type: ignore[arg-type]
