"""gRPC propagation: a server interceptor that opens a span per call, a client one that sends the context.

Only unary calls are traced. The streams between roles live as long as a connection (``Produce``,
``Consume``, ``AssignmentDiscover``): a span over one would say nothing about any request, so
appends carry their context in each WAL message instead (``spans.stamp_messages``). Health checks
are left out: probes ask every few seconds and would bury the traces of real requests.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from common.tracing.spans import extract

_UNTRACED_PREFIXES = ("/grpc.health.v1.Health/",)
_PROPAGATOR = TraceContextTextMapPropagator()


def _rpc_attributes(method: str) -> dict[str, str]:
    service, _, name = method.lstrip("/").rpartition("/")
    return {"rpc.system": "grpc", "rpc.service": service, "rpc.method": name}


class ServerTracing(grpc.aio.ServerInterceptor):
    """A SERVER span named after the full method (``/milvus.proto.milvus.MilvusService/Search``) around
    each unary call, child of the ``traceparent`` in the call's metadata (a new trace without one)."""

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler | None]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = await continuation(handler_call_details)
        method: str = handler_call_details.method  # set by grpc on every call
        if (
            handler is None
            or handler.request_streaming
            or handler.response_streaming
            or not inspect.iscoroutinefunction(handler.unary_unary)
            or method.startswith(_UNTRACED_PREFIXES)
        ):
            return handler
        behavior = handler.unary_unary
        metadata = handler_call_details.invocation_metadata
        tracer = self._tracer
        attributes = _rpc_attributes(method)

        async def traced(request: Any, context: grpc.aio.ServicerContext) -> Any:
            with tracer.start_as_current_span(
                method, context=extract(metadata), kind=trace.SpanKind.SERVER, attributes=attributes
            ):
                return await behavior(request, context)

        return handler._replace(unary_unary=traced)  # a namedtuple


class ClientTracing(grpc.aio.UnaryUnaryClientInterceptor):
    """A CLIENT span per unary call made inside a span, its ``traceparent`` added to the call's metadata.

    A call made outside any span (a heartbeat, a background task) goes out untouched: it would
    only start a trace of its own per call.
    """

    def __init__(self, tracer: trace.Tracer) -> None:
        self._tracer = tracer

    async def intercept_unary_unary(
        self,
        continuation: Callable[[grpc.aio.ClientCallDetails, Any], Awaitable[Any]],
        client_call_details: grpc.aio.ClientCallDetails,
        request: Any,
    ) -> Any:
        if not trace.get_current_span().get_span_context().is_valid:
            return await continuation(client_call_details, request)
        raw = client_call_details.method
        method = raw.decode() if isinstance(raw, bytes) else str(raw)
        span = self._tracer.start_span(method, kind=trace.SpanKind.CLIENT, attributes=_rpc_attributes(method))
        metadata = grpc.aio.Metadata(*tuple(client_call_details.metadata or ()))
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        for key, value in carrier.items():
            metadata.add(key, value)
        details = grpc.aio.ClientCallDetails(
            client_call_details.method,
            client_call_details.timeout,
            metadata,
            client_call_details.credentials,
            client_call_details.wait_for_ready,
        )
        try:
            call = await continuation(details, request)
        except BaseException:
            span.end()
            raise
        call.add_done_callback(lambda _call: span.end())
        return call
