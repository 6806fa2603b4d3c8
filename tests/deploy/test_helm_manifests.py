"""Every manifest the Helm chart renders, in each scenario (defaults, every dependency external, the local WAL
on a shared volume, a NATS cluster, security, monitoring), rendered with ``helm template`` (or the repo's renderer
where no helm binary exists, ``tests/deploy/helmchart.py``): it lints, validates strictly against the schemas of the
oldest and the newest Kubernetes release the chart supports (``kubernetes-validate``), names are unique and
selectors match pods."""

from __future__ import annotations

import kubernetes_validate
import pytest

from tests.deploy.helmchart import Renderer, by_kind
from tests.deploy.helmdocs import SCENARIOS, Doc, containers, workloads

# Custom resources Kubernetes' own schemas do not describe (prometheus-operator's), checked by their own test.
CUSTOM_KINDS = {"PodMonitor"}
# The oldest release with GA gRPC probes, and the newest kubernetes-validate knows.
KUBERNETES_VERSIONS = ("1.27.0", "1.37.0")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_lint(renderer: Renderer, scenario: str) -> None:
    renderer.lint(values=SCENARIOS[scenario])


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_manifest_validates_against_the_kubernetes_schemas(
    rendered: dict[str, list[Doc]], scenario: str, version: str
) -> None:
    docs = rendered[scenario]
    assert docs
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']} (k8s {version}): {err.message} at {list(err.path)}")


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_names_are_unique_and_selectors_match_pods(rendered: dict[str, list[Doc]], scenario: str) -> None:
    docs = rendered[scenario]
    ids = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(ids) == len(set(ids)), ids
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in workloads(docs)}
    for d in docs:
        if d["kind"] in ("Deployment", "StatefulSet"):
            assert d["spec"]["selector"]["matchLabels"].items() <= pods[d["metadata"]["name"]].items()
        if d["kind"] == "StatefulSet":
            assert d["spec"]["serviceName"] in by_kind(docs, "Service"), d["metadata"]["name"]
        if d["kind"] == "PodDisruptionBudget":
            selected = [n for n, labels in pods.items() if d["spec"]["selector"]["matchLabels"].items() <= labels.items()]
            assert len(selected) == 1, (d["metadata"]["name"], selected)
        if d["kind"] == "Service":
            selected = [
                w for w in workloads(docs)
                if d["spec"]["selector"].items() <= w["spec"]["template"]["metadata"]["labels"].items()
            ]
            assert selected, f"Service {d['metadata']['name']} selects no pod"
            ports = {p["name"] for w in selected for c in containers(w) for p in c.get("ports", [])}
            for p in d["spec"]["ports"]:
                assert p["targetPort"] in ports, (d["metadata"]["name"], p)
