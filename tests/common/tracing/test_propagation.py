"""Trace context crosses real grpc.aio hops on 127.0.0.1 (servers and channels built by ``common.grpcutil``):
the caller's span is the parent of the CLIENT span, which is the parent of the SERVER span on the other
side, through two hops, all in one trace. WAL messages carry their appender's context the same way."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from common import tracing
from common.grpcutil import Health, internal_channel, start_server
from common.ports import free_port
from protos import common_pb2

SERVICE = "strata.test.Hop"
METHOD = f"/{SERVICE}/Call"


def _handlers(behavior: Callable[[bytes, grpc.aio.ServicerContext], Any]) -> Callable[[Any], None]:
    def add(server: Any) -> None:
        handler = grpc.unary_unary_rpc_method_handler(
            behavior, request_deserializer=lambda b: b, response_serializer=lambda b: b
        )
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {"Call": handler}),))

    return add


def _call(channel: grpc.aio.Channel) -> Any:
    return channel.unary_unary(METHOD, request_serializer=lambda b: b, response_deserializer=lambda b: b)


@pytest.fixture
async def two_hops(spans: InMemorySpanExporter) -> AsyncIterator[grpc.aio.Channel]:
    """A channel to server A, whose handler calls server B, whose handler opens an inner span."""

    async def at_b(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        with tracing.span("b.inner", hop="b"):
            return request + b"b"

    server_b, port_b = await start_server(_handlers(at_b), port=free_port())
    to_b = internal_channel(f"127.0.0.1:{port_b}")

    async def at_a(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        answer: bytes = await _call(to_b)(request + b"a", timeout=10)
        return answer

    server_a, port_a = await start_server(_handlers(at_a), port=free_port(), health=Health())
    to_a = internal_channel(f"127.0.0.1:{port_a}")
    try:
        yield to_a
    finally:
        await to_a.close()
        await to_b.close()
        await server_a.stop(None)
        await server_b.stop(None)


def _one(finished: list[ReadableSpan], name: str, kind: SpanKind) -> ReadableSpan:
    found = [s for s in finished if s.name == name and s.kind == kind]
    assert len(found) == 1, [(s.name, s.kind) for s in finished]
    return found[0]


def _parent_of(child: ReadableSpan, parent: ReadableSpan) -> None:
    assert child.parent is not None, child.name
    assert parent.context is not None and child.context is not None
    assert child.parent.span_id == parent.context.span_id, (child.name, parent.name)
    assert child.context.trace_id == parent.context.trace_id


async def test_spans_connect_across_two_grpc_hops(two_hops: grpc.aio.Channel, spans: InMemorySpanExporter) -> None:
    with tracing.span("caller"):
        assert await _call(two_hops)(b"x", timeout=10) == b"xab"
    finished = list(spans.get_finished_spans())
    caller = _one(finished, "caller", SpanKind.INTERNAL)
    clients = sorted((s for s in finished if s.kind == SpanKind.CLIENT), key=lambda s: s.start_time or 0)
    servers = sorted((s for s in finished if s.kind == SpanKind.SERVER), key=lambda s: s.start_time or 0)
    assert [s.name for s in clients] == [METHOD, METHOD] and [s.name for s in servers] == [METHOD, METHOD]
    inner = _one(finished, "b.inner", SpanKind.INTERNAL)
    _parent_of(clients[0], caller)  # caller -> A's client span
    _parent_of(servers[0], clients[0])  # -> server A
    _parent_of(clients[1], servers[0])  # -> A calling B
    _parent_of(servers[1], clients[1])  # -> server B
    _parent_of(inner, servers[1])  # -> B's own span
    assert servers[0].attributes is not None and servers[0].attributes["rpc.method"] == "Call"
    assert inner.attributes is not None and inner.attributes["hop"] == "b"


async def test_a_call_outside_any_span_starts_a_trace_at_the_server(
    two_hops: grpc.aio.Channel, spans: InMemorySpanExporter
) -> None:
    await _call(two_hops)(b"x", timeout=10)
    finished = list(spans.get_finished_spans())
    servers = sorted((s for s in finished if s.kind == SpanKind.SERVER), key=lambda s: s.start_time or 0)
    assert len(servers) == 2
    assert servers[0].parent is None  # no client span on this side: the trace starts at server A
    _parent_of(_one(finished, METHOD, SpanKind.CLIENT), servers[0])


async def test_health_checks_make_no_spans(two_hops: grpc.aio.Channel, spans: InMemorySpanExporter) -> None:
    with tracing.span("probe"):
        await health_pb2_grpc.HealthStub(two_hops).Check(health_pb2.HealthCheckRequest(), timeout=10)
    assert [s.name for s in spans.get_finished_spans() if s.kind == SpanKind.SERVER] == []


async def test_off_adds_no_interceptor_and_no_span() -> None:
    assert not tracing.enabled()
    assert tracing.server_interceptors() == [] and tracing.client_interceptors() is None
    seen: list[tuple[str, str]] = []

    async def echo(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        seen.extend((k, v) for k, v in context.invocation_metadata() or () if isinstance(v, str))
        return request

    server, port = await start_server(_handlers(echo), port=free_port())
    channel = internal_channel(f"127.0.0.1:{port}")
    try:
        with tracing.span("not traced"):
            assert await _call(channel)(b"x", timeout=10) == b"x"
    finally:
        await channel.close()
        await server.stop(None)
    assert not [k for k, _ in seen if k == "traceparent"]


def test_wal_messages_carry_their_appenders_context(spans: InMemorySpanExporter) -> None:
    first, second, untraced = common_pb2.Message(), common_pb2.Message(), common_pb2.Message()
    with tracing.span("insert one"):
        tracing.stamp_messages([first])
    with tracing.span("insert two"):
        tracing.stamp_messages([second])
    tracing.stamp_messages([untraced])  # outside a span: nothing to carry
    assert tracing.MESSAGE_TRACE_KEY not in untraced.properties
    with tracing.message_spans("append", [first, second, untraced], pchannel="p0"):
        pass
    finished = list(spans.get_finished_spans())
    appends = [s for s in finished if s.name == "append"]
    assert len(appends) == 2  # one per appender; the untraced message adds none
    parents = {_one(finished, "insert one", SpanKind.INTERNAL), _one(finished, "insert two", SpanKind.INTERNAL)}
    assert {a.parent.span_id for a in appends if a.parent} == {p.context.span_id for p in parents if p.context}


def test_a_wal_batch_write_links_to_every_appender(spans: InMemorySpanExporter) -> None:
    first, second, tick = common_pb2.Message(), common_pb2.Message(), common_pb2.Message()
    with tracing.span("insert one"):
        tracing.stamp_messages([first])
    with tracing.span("insert two"), tracing.span("nested"):
        tracing.stamp_messages([second])
    with tracing.linked_span("wal.write", [tick]):  # a batch of TimeTicks only: no span
        pass
    with tracing.span("unrelated caller"), tracing.linked_span("wal.write", [first, second, tick], pchannel="p0"):
        pass
    finished = list(spans.get_finished_spans())
    [write] = [s for s in finished if s.name == "wal.write"]
    assert write.parent is None  # its own trace, not the caller's that happened to be current
    linked = {link.context.span_id for link in write.links}
    expected = [_one(finished, name, SpanKind.INTERNAL).context for name in ("insert one", "nested")]
    assert linked == {c.span_id for c in expected if c is not None}
