"""Requests whose bytes do not decode are answered INVALID_ARGUMENT, on every gRPC server.

grpc.aio deserialises a request before the servicer sees it; when protobuf
raises ``DecodeError`` there, grpc answers ``UNKNOWN`` ("Unexpected <class
'google.protobuf.message.DecodeError'>") and logs a traceback, as for a bug.
Bad bytes are the client's fault, so :class:`DecodeGuard` registers every
method handler with a deserialiser that turns ``DecodeError`` into an
:class:`Undecodable` marker, and a behaviour that aborts the call with
``INVALID_ARGUMENT: cannot decode the request: ...`` when it receives one
(for a request stream, when the stream yields one). A request that decodes
costs one extra function call to deserialise and one ``isinstance`` check.

The guard stands in for the server while the generated
``add_*Servicer_to_server`` functions register their handlers
(``common.grpcutil.start_server`` does this for every role), so no servicer
changes. It registers them as generic handlers only, never as grpc's
"registered methods" (see ``DecodeGuard.add_registered_method_handlers``).
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc
from google.protobuf.message import DecodeError

Behavior = Callable[..., Any]


class Undecodable:
    """What the guarded deserialiser returns for bytes that are not a valid request."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _deserializer(deserialize: Callable[[bytes], Any]) -> Callable[[bytes], Any]:
    def guarded(data: bytes) -> Any:
        try:
            return deserialize(data)
        except DecodeError as err:
            return Undecodable(f"cannot decode the request: {err}")

    return guarded


async def _abort(context: grpc.aio.ServicerContext, request: Undecodable) -> None:
    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)


async def _checked(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
    async for request in requests:
        if isinstance(request, Undecodable):
            await _abort(context, request)
        yield request


def _unary_request(behavior: Behavior) -> Behavior:
    """The behaviour of a unary-request method, aborting on an undecodable request."""
    if inspect.isasyncgenfunction(behavior):

        async def responses(request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            if isinstance(request, Undecodable):
                await _abort(context, request)
            async for response in behavior(request, context):
                yield response

        return responses

    async def answer(request: Any, context: grpc.aio.ServicerContext) -> Any:
        if isinstance(request, Undecodable):
            await _abort(context, request)
        return await behavior(request, context)

    return answer


def _stream_request(behavior: Behavior) -> Behavior:
    """The behaviour of a request-streaming method, aborting at the first undecodable request."""
    if inspect.isasyncgenfunction(behavior):

        async def responses(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
            async for response in behavior(_checked(requests, context), context):
                yield response

        return responses

    async def answer(requests: AsyncIterator[Any], context: grpc.aio.ServicerContext) -> Any:
        return await behavior(_checked(requests, context), context)

    return answer


def guard_handler(handler: grpc.RpcMethodHandler) -> grpc.RpcMethodHandler:
    """``handler`` answering INVALID_ARGUMENT for requests that do not decode.

    Only asyncio behaviours (``async def``, async generators) are guarded; a
    synchronous one (which grpc.aio also runs) is returned as it is.
    """
    kinds = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
    behaviors = {name: getattr(handler, name) for name in kinds if getattr(handler, name) is not None}
    asynchronous = all(inspect.iscoroutinefunction(b) or inspect.isasyncgenfunction(b) for b in behaviors.values())
    if handler.request_deserializer is None or not behaviors or not asynchronous:
        return handler
    wrap = _stream_request if handler.request_streaming else _unary_request
    fields = {name: wrap(b) for name, b in behaviors.items()}
    fields["request_deserializer"] = _deserializer(handler.request_deserializer)
    return handler._replace(**fields)  # grpc's handlers are namedtuples


class _GuardedGenericHandler(grpc.GenericRpcHandler):
    """A generic handler whose method handlers are guarded (each wrapped once, on first use)."""

    def __init__(self, inner: grpc.GenericRpcHandler) -> None:
        self._inner = inner
        self._guarded: dict[int, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        found = self._inner.service(handler_call_details)
        if found is None:
            return None
        entry = self._guarded.get(id(found))
        if entry is None or entry[0] is not found:
            entry = self._guarded[id(found)] = (found, guard_handler(found))
        return entry[1]


class DecodeGuard:
    """Stands in for a ``grpc.aio.Server`` while servicers register; registers them guarded."""

    def __init__(self, server: grpc.aio.Server) -> None:
        self._server = server

    def add_generic_rpc_handlers(self, handlers: Sequence[grpc.GenericRpcHandler]) -> None:
        self._server.add_generic_rpc_handlers(tuple(_GuardedGenericHandler(h) for h in handlers))

    def add_registered_method_handlers(self, service_name: str, handlers: Mapping[str, grpc.RpcMethodHandler]) -> None:
        """Not passed on: the generic handler the same generated function adds serves these methods.

        grpc.aio (1.6x-1.85) keeps one pending request task per registered method and, for every
        call, ``asyncio.wait``s on all of them (``FIRST_COMPLETED``): with MilvusService's ~120
        methods that was ~14% of a standalone's event loop at nq=1 (cProfile, 16 clients). Served
        through the generic handler alone, a bare grpc.aio server's CPU per call fell 0.33-0.36 ->
        0.28-0.29 ms (``benchmarks/grpc_floor.py``, 2026-11-27)."""
        del service_name, handlers
