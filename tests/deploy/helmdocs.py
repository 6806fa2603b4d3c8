"""What the Helm chart's tests read in rendered manifests: the scenarios rendered, a role's Deployment and
container, a container's environment as the kubelet fills it, mounted volumes, the chart's ``strata.yaml``.

The fixtures ``renderer`` and ``rendered`` (every scenario rendered once per session) are in ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from common.configfile import ROLES, resolve
from tests.deploy.helmchart import by_kind, one

VALUES = Path(__file__).parent / "values"
SCENARIOS = {
    "defaults": [],
    "external": [VALUES / "external.yaml"],
    "local-wal": [VALUES / "local-wal.yaml"],
    "nats-cluster": [VALUES / "nats-cluster.yaml"],
    "security": [VALUES / "security.yaml"],
    "monitoring": [VALUES / "monitoring.yaml"],
}
RELEASE, NAMESPACE = "strata", "vectors"
POD_IP = "10.42.0.7"

Doc = dict[str, Any]


def containers(doc: Doc) -> list[Doc]:
    spec = doc["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def workloads(docs: list[Doc]) -> Iterator[Doc]:
    return (d for d in docs if d["kind"] in ("Deployment", "StatefulSet", "Job"))


def config_map_files(docs: list[Doc]) -> dict[str, dict[str, str]]:
    return {name: cm["data"] for name, cm in by_kind(docs, "ConfigMap").items()}


def environment(container: Doc, docs: list[Doc]) -> dict[str, str]:
    """The container's environment as the kubelet would fill it (pod IP, Secret keys)."""
    secrets = by_kind(docs, "Secret")
    env: dict[str, str] = {}
    for var in container.get("env", []):
        if "value" in var:
            env[var["name"]] = var["value"]
            continue
        source = var["valueFrom"]
        if "fieldRef" in source:
            assert source["fieldRef"]["fieldPath"] in ("status.podIP", "metadata.name"), var
            env[var["name"]] = POD_IP if source["fieldRef"]["fieldPath"] == "status.podIP" else "pod-0"
        else:
            ref = source["secretKeyRef"]
            if ref["name"] in secrets:
                assert ref["key"] in secrets[ref["name"]]["data"], var
            env[var["name"]] = f"secret:{ref['name']}/{ref['key']}"
    return env


def mounts_of(workload: Doc, container: Doc) -> dict[str, Doc]:
    """mountPath -> the volume mounted there."""
    volumes = {v["name"]: v for v in workload["spec"]["template"]["spec"].get("volumes", [])}
    return {m["mountPath"]: volumes[m["name"]] for m in container.get("volumeMounts", [])}


def volume_of(path: str, mounts: dict[str, Doc]) -> Doc:
    best = max((m for m in mounts if path == m or path.startswith(m.rstrip("/") + "/")), key=len, default=None)
    assert best is not None, f"{path} is on no mounted volume: {sorted(mounts)}"
    return mounts[best]


def role_deployments(docs: list[Doc]) -> dict[str, tuple[Doc, Doc]]:
    """role -> (its Deployment, its Strata container)."""
    out = {}
    for name, d in by_kind(docs, "Deployment").items():
        for c in d["spec"]["template"]["spec"]["containers"]:
            if c.get("args") and c["args"][0] in ROLES and "command" not in c:
                out[c["args"][0]] = (d, c)
                assert name == f"{RELEASE}-{c['args'][0]}"
    return out


def strata_config(docs: list[Doc], tmp_path: Path) -> dict[str, object]:
    path = tmp_path / "strata.yaml"
    path.write_text(one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"])
    return resolve(flags={}, config_file=str(path), environ={})


def env_of(docs: list[Doc], role: str) -> dict[str, str]:
    deployment, container = role_deployments(docs)[role]
    return environment(container, docs)

