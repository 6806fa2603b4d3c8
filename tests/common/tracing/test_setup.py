"""The ``trace`` settings (Milvus's names: file, STRATA_TRACE_* variables, refusals) and what each
exporter does: ``noop`` installs nothing, ``stdout`` writes one JSON span a line, ``otlp`` sends the
spans to a real OTLP/gRPC collector endpoint (a TraceService on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from opentelemetry import context as otel_context
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from common import tracing
from common.config import QueryNodeConfig, TraceConfig
from common.configfile import ConfigError, load
from common.ports import free_port

ETCD = {"STRATA_ETCD": "127.0.0.1:2379"}


def test_trace_keys_from_nested_yaml(tmp_path: Path) -> None:
    f = tmp_path / "c.yaml"
    f.write_text(
        "common: {etcd: '127.0.0.1:2379'}\n"
        "querynode: {storage: 'file:///tmp/s'}\n"
        "trace: {exporter: otlp, sampleFraction: 0.5, otlp: {endpoint: 'collector:4317', secure: true}}\n"
    )
    config = load("querynode", flags={}, config_file=str(f), environ={})
    assert isinstance(config, QueryNodeConfig)
    assert config.common.trace == TraceConfig(
        exporter="otlp", sample_fraction=0.5, otlp_endpoint="collector:4317", otlp_secure=True
    )


def test_trace_keys_from_the_environment_and_the_default() -> None:
    assert load("proxy", flags={}, config_file=None, environ=ETCD).common.trace == TraceConfig()
    env = {**ETCD, "STRATA_TRACE_EXPORTER": "stdout", "STRATA_TRACE_SAMPLEFRACTION": "0.1"}
    trace = load("proxy", flags={}, config_file=None, environ=env).common.trace
    assert (trace.exporter, trace.sample_fraction) == ("stdout", 0.1)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"STRATA_TRACE_EXPORTER": "otlp"}, "trace.otlp.endpoint"),
        ({"STRATA_TRACE_EXPORTER": "jaeger"}, "noop, stdout, otlp"),
        ({"STRATA_TRACE_SAMPLEFRACTION": "1.5"}, "[0, 1]"),
        ({"STRATA_TRACE_SAMPLEFRACTION": "some"}, "expected a number"),
        ({"STRATA_TRACE_OTLP_ENDPOINTS": "x:1"}, "unknown key"),
    ],
)
def test_bad_trace_settings_are_refused(env: dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigError) as info:
        load("proxy", flags={}, config_file=None, environ={**ETCD, **env})
    assert needle in str(info.value)


def _json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]  # not the log lines


def test_noop_installs_nothing() -> None:
    tracing.install(TraceConfig(), service="strata-test")
    try:
        assert not tracing.enabled()
        assert tracing.server_interceptors() == [] and tracing.client_interceptors() is None
    finally:
        tracing.uninstall()


def test_stdout_writes_one_json_span_a_line(capsys: pytest.CaptureFixture[str]) -> None:
    tracing.install(TraceConfig(exporter="stdout"), service="strata-test")
    try:
        with tracing.span("outer", collection="c"), tracing.span("inner"):
            pass
    finally:
        tracing.uninstall()
    lines = _json_lines(capsys.readouterr().out)
    spans = {s["name"]: s for s in lines}
    assert len(lines) == 2 and set(spans) == {"outer", "inner"}
    assert spans["inner"]["parent_id"] == spans["outer"]["context"]["span_id"]
    assert spans["outer"]["attributes"] == {"collection": "c"}
    assert spans["outer"]["resource"]["attributes"]["service.name"] == "strata-test"


def test_a_zero_sample_fraction_records_only_sampled_parents(capsys: pytest.CaptureFixture[str]) -> None:
    tracing.install(TraceConfig(exporter="stdout", sample_fraction=0.0), service="strata-test")
    try:
        with tracing.span("new trace"):
            pass
        sampled = tracing.extract({"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
        token = otel_context.attach(sampled)  # as the server interceptor does with a call's traceparent
        try:
            with tracing.span("continued"):
                pass
        finally:
            otel_context.detach(token)
    finally:
        tracing.uninstall()
    names = [span["name"] for span in _json_lines(capsys.readouterr().out)]
    assert names == ["continued"]


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []

    def Export(self, request: trace_service_pb2.ExportTraceServiceRequest, context: Any) -> Any:
        self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()


@pytest.fixture
def collector() -> Iterator[tuple[_Collector, int]]:
    """An OTLP/gRPC TraceService on 127.0.0.1 (a synchronous server: the exporter's flush blocks)."""
    servicer = _Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port(f"127.0.0.1:{free_port()}")
    server.start()
    try:
        yield servicer, port
    finally:
        server.stop(None)


def test_otlp_sends_the_spans_to_the_collector(collector: tuple[_Collector, int]) -> None:
    servicer, port = collector
    tracing.install(TraceConfig(exporter="otlp", otlp_endpoint=f"127.0.0.1:{port}"), service="strata-proxy")
    try:
        with tracing.span("proxy.plan"):
            pass
    finally:
        tracing.uninstall()  # flushes the batch
    spans = [
        (resource.resource, span.name)
        for request in servicer.requests
        for resource in request.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    assert [name for _, name in spans] == ["proxy.plan"]
    service = {a.key: a.value.string_value for a in spans[0][0].attributes}["service.name"]
    assert service == "strata-proxy"
