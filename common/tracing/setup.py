"""Tracing of a role process from its ``trace`` settings: the provider, its sampler and its exporter.

``install`` is called once by the process's entry point (``launch/cli.py``) before any gRPC server
or channel is built (they take their interceptors when built), and ``uninstall`` when the role has
stopped, which flushes spans still batched for the collector. With ``exporter: noop`` nothing is
installed at all.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import grpc
import structlog
from opentelemetry import trace

from common.config import TraceConfig
from common.tracing.interceptors import ClientTracing, ServerTracing
from common.tracing.spans import _state, set_provider

if TYPE_CHECKING:  # the SDK is imported only when tracing is on (it adds ~25 ms to every start)
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanProcessor

log = structlog.get_logger().bind(component="tracing")


def _json_line(span: ReadableSpan) -> str:
    return span.to_json(indent=None) + "\n"


def _processor(config: TraceConfig) -> SpanProcessor:
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor

    match config.exporter:
        case "stdout":
            # Written as each span ends: a debugging aid, read by people and by tests.
            return SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout, formatter=_json_line))
        case "otlp":
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            return BatchSpanProcessor(OTLPSpanExporter(endpoint=config.otlp_endpoint, insecure=not config.otlp_secure))
        case _:
            raise ValueError(f"trace exporter {config.exporter!r} has no processor")


def provider_for(config: TraceConfig, *, service: str) -> TracerProvider | None:
    """A provider exporting as ``config`` says, its spans tagged ``service.name`` = ``service``;
    None for ``noop``."""
    config.validate()
    if config.exporter == "noop":
        return None
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    provider = TracerProvider(
        sampler=ParentBased(TraceIdRatioBased(config.sample_fraction)),
        resource=Resource.create({"service.name": service}),
        shutdown_on_exit=False,  # uninstall() flushes; an exit hook would race the event loop's end
    )
    provider.add_span_processor(_processor(config))
    return provider


def install(config: TraceConfig, *, service: str) -> None:
    """Trace this process as ``config`` says (nothing for ``noop``)."""
    provider = provider_for(config, service=service)
    use_provider(provider)
    if provider is not None:
        log.info("tracing on", exporter=config.exporter, sample_fraction=config.sample_fraction, service=service)


def use_provider(provider: trace.TracerProvider | None) -> None:
    """Trace with ``provider`` (a test's, with an in-memory exporter), or stop tracing with None.

    The provider is not shut down here; ``uninstall`` does that.
    """
    set_provider(provider)


def uninstall() -> None:
    """Stop tracing; export what is batched and shut the provider down."""
    provider = _state.provider
    set_provider(None)
    shutdown = getattr(provider, "shutdown", None)  # the SDK's providers have one, the API's need none
    if shutdown is not None:
        shutdown()


def server_interceptors() -> list[grpc.aio.ServerInterceptor]:
    """What a gRPC server built now adds to its interceptors: the tracing one, or nothing when off."""
    tracer = _state.tracer
    return [] if tracer is None else [ServerTracing(tracer)]


def client_interceptors() -> list[grpc.aio.ClientInterceptor] | None:
    """The interceptors of a channel built now: the tracing one, or None when off."""
    tracer = _state.tracer
    return None if tracer is None else [ClientTracing(tracer)]
