"""The process's tracer and the few calls the rest of the code makes: spans, and context in carriers.

OpenTelemetry's own API keeps its tracer provider in a process-wide global; this module does
the same with one small ``_Tracing`` state (set by ``common.tracing.setup.install``, cleared by
``uninstall``) so that code deep in a role (a delegator's tsafe wait, a worker's segment search)
opens a span without a tracer being handed down every constructor. While nothing is installed
(``trace.exporter: noop``, the default) every call here costs one attribute check: no span
object, no context switch, no metadata.

Context crosses processes as a W3C ``traceparent`` (and ``tracestate``): in gRPC metadata
(``interceptors.py``) and, for appends that travel on a long-lived ``Produce`` stream shared by
many callers, in each WAL message's properties under ``MESSAGE_TRACE_KEY``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any, TypeVar, cast

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

F = TypeVar("F", bound=Callable[..., Any])

#: The property of a WAL message that carries the appender's ``traceparent``.
MESSAGE_TRACE_KEY = "_tc"
_PROPAGATOR = TraceContextTextMapPropagator()


class _Tracing:
    """The installed tracer and the provider it came from, or None (the default: tracing off)."""

    __slots__ = ("provider", "tracer")

    def __init__(self) -> None:
        self.tracer: trace.Tracer | None = None
        self.provider: trace.TracerProvider | None = None


_state = _Tracing()


def set_provider(provider: trace.TracerProvider | None, name: str = "strata") -> None:
    """Trace this process with ``provider`` (None turns tracing off). ``setup.py`` calls this."""
    _state.provider = provider
    _state.tracer = provider.get_tracer(name) if provider is not None else None


def enabled() -> bool:
    """Whether a tracer is installed (spans are made; gRPC servers and channels built now propagate)."""
    return _state.tracer is not None


def span(name: str, **attributes: str | int | float | bool) -> contextlib.AbstractContextManager[Any]:
    """A span named ``name`` around a ``with`` block, child of the current one; a no-op when off."""
    tracer = _state.tracer
    if tracer is None:
        return contextlib.nullcontext()
    return tracer.start_as_current_span(name, attributes=attributes or None)


def traced(name: str) -> Callable[[F], F]:
    """Decorate a coroutine function (or a plain one) to run in a span named ``name`` when tracing is on."""

    def wrap(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                tracer = _state.tracer
                if tracer is None:
                    return await fn(*args, **kwargs)
                with tracer.start_as_current_span(name):
                    return await fn(*args, **kwargs)

            return cast(F, run_async)

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            tracer = _state.tracer
            if tracer is None:
                return fn(*args, **kwargs)
            with tracer.start_as_current_span(name):
                return fn(*args, **kwargs)

        return cast(F, run)

    return wrap


def inject(carrier: MutableMapping[str, str]) -> None:
    """Write the current span's ``traceparent`` (and ``tracestate``) into ``carrier``; nothing when off
    or outside a span."""
    if _state.tracer is not None and trace.get_current_span().get_span_context().is_valid:
        _PROPAGATOR.inject(carrier)


def extract(carrier: Any) -> otel_context.Context:
    """The context a ``traceparent`` in ``carrier`` (a mapping, or gRPC metadata pairs) names."""
    if not isinstance(carrier, dict):
        carrier = {key: value for key, value in (carrier or ()) if isinstance(value, str)}
    return _PROPAGATOR.extract(carrier)


def stamp_messages(messages: Iterable[Any]) -> None:
    """Carry the current span's context in each WAL message's properties (``MESSAGE_TRACE_KEY``)."""
    if _state.tracer is None or not trace.get_current_span().get_span_context().is_valid:
        return
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    parent = carrier.get("traceparent")
    if parent is None:
        return
    for message in messages:
        message.properties[MESSAGE_TRACE_KEY] = parent


def linked_span(name: str, messages: Iterable[Any], **attributes: str | int | float | bool) -> Any:
    """A span named ``name`` linked to the span of every appender among ``messages``, for work done for
    all of them at once (a WAL batch's write and fsync). It starts a trace of its own, since it
    belongs to no one request; a no-op when off or when no message carries a context (TimeTicks)."""
    tracer = _state.tracer
    if tracer is None:
        return contextlib.nullcontext()
    parents = {m.properties.get(MESSAGE_TRACE_KEY) for m in messages}
    parents.discard(None)
    if not parents:
        return contextlib.nullcontext()
    links = [trace.Link(trace.get_current_span(extract({"traceparent": p})).get_span_context()) for p in sorted(parents)]
    return tracer.start_as_current_span(name, context=otel_context.Context(), links=links, attributes=attributes or None)


@contextlib.contextmanager
def message_spans(name: str, messages: Iterable[Any], **attributes: str | int | float | bool) -> Iterator[None]:
    """One span named ``name`` per distinct appender among ``messages`` (their ``MESSAGE_TRACE_KEY``),
    each a child of that appender's span, all open for the block. Messages without the property
    get no span; a no-op when off. The spans are not made current: a Produce request coalesces
    the appends of many callers, and the block's work is theirs together.
    """
    tracer = _state.tracer
    if tracer is None:
        yield
        return
    parents = {m.properties.get(MESSAGE_TRACE_KEY) for m in messages}
    parents.discard(None)
    opened = [
        tracer.start_span(name, context=extract({"traceparent": p}), kind=trace.SpanKind.CONSUMER,
                          attributes=attributes or None)
        for p in sorted(parents)
    ]
    try:
        yield
    except BaseException as err:
        for s in opened:
            s.record_exception(err)
            s.set_status(trace.Status(trace.StatusCode.ERROR, str(err)))
        raise
    finally:
        for s in opened:
            s.end()
