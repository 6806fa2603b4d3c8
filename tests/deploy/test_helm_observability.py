"""The Helm chart's metrics and tracing: every role serves metrics where the PodMonitor and the Prometheus
annotations point, metrics can be turned off, and the tracing values reach every role."""

from __future__ import annotations

from pathlib import Path

from common.configfile import ROLES, load
from tests.deploy.helmchart import Renderer, by_kind, one
from tests.deploy.helmdocs import RELEASE, Doc, environment, role_deployments, workloads


def _selects(selector: Doc, labels: dict[str, str]) -> bool:
    for e in selector.get("matchExpressions", []):
        assert e["operator"] == "In", e
        if labels.get(e["key"]) not in e["values"]:
            return False
    return selector.get("matchLabels", {}).items() <= labels.items()


def test_every_role_serves_metrics_where_the_pod_monitor_and_annotations_point(
    rendered: dict[str, list[Doc]], tmp_path: Path
) -> None:
    docs = rendered["monitoring"]
    monitor = one(docs, "PodMonitor", RELEASE)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    assert (endpoint["port"], endpoint["path"], endpoint["interval"]) == ("metrics", "/metrics", "15s")
    selected = {d["metadata"]["name"] for d in workloads(docs)
                if _selects(monitor["spec"]["selector"], d["spec"]["template"]["metadata"]["labels"])}
    assert selected == {f"{RELEASE}-{role}" for role in ROLES}
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (deployment, container) in role_deployments(docs).items():
        env = environment(container, docs)
        assert env["STRATA_LOG_FORMAT"] == "json"
        config = load(role, flags={}, config_file=str(config_file), environ=env)
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert config.common.metrics_port == 9100
        assert annotations["prometheus.io/port"] == "9100" and annotations["prometheus.io/scrape"] == "true"
        assert {"name": "metrics", "containerPort": 9100, "protocol": "TCP"} in container["ports"]
    # The defaults: Milvus's port, annotations, no PodMonitor (it needs the operator's CRDs).
    defaults = rendered["defaults"]
    assert not by_kind(defaults, "PodMonitor")
    _, container = role_deployments(defaults)["proxy"]
    assert {"name": "metrics", "containerPort": 9091, "protocol": "TCP"} in container["ports"]


def test_metrics_can_be_turned_off(renderer: Renderer, tmp_path: Path) -> None:
    docs = renderer.template(sets=["metrics.enabled=false", "metrics.podMonitor.enabled=true"])
    assert not by_kind(docs, "PodMonitor")
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (deployment, container) in role_deployments(docs).items():
        config = load(role, flags={}, config_file=str(config_file), environ=environment(container, docs))
        assert config.common.metrics_port is None
        assert [p["name"] for p in container["ports"]] == ["grpc"]
        assert "prometheus.io/scrape" not in deployment["spec"]["template"]["metadata"]["annotations"]


def test_tracing_values_reach_every_role(renderer: Renderer, tmp_path: Path) -> None:
    docs = renderer.template(sets=["trace.exporter=otlp", "trace.otlpEndpoint=otel-collector:4317",
                                   "trace.sampleFraction=0.25"])
    config_file = tmp_path / "strata.yaml"
    config_file.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    for role, (_deployment, container) in role_deployments(docs).items():
        config = load(role, flags={}, config_file=str(config_file), environ=environment(container, docs))
        trace = config.common.trace
        assert (trace.exporter, trace.otlp_endpoint, trace.sample_fraction, trace.otlp_secure) == (
            "otlp", "otel-collector:4317", 0.25, False), role
