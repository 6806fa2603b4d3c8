"""The Helm chart's values: ``--set`` overrides them, a missing required value fails the render with a message
saying which, and every key of values.yaml is documented and used."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from common.configfile import ROLES
from tests.deploy.helmchart import CHART, Renderer, RenderError, one
from tests.deploy.helmdocs import RELEASE, role_deployments


def test_set_overrides_values(renderer: Renderer) -> None:
    docs = renderer.template(sets=["querynode.replicas=5", "cluster.pchannels=32,image.tag=1.2.3", "spark.enabled=false"])
    querynode, container = role_deployments(docs)["querynode"]
    assert querynode["spec"]["replicas"] == 5
    assert container["image"] == "strata:1.2.3"
    assert "pchannels: 32" in one(docs, "ConfigMap", f"{RELEASE}-config")["data"]["strata.yaml"]
    assert not any("spark" in d["metadata"]["name"] for d in docs)


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        (["etcd.external.enabled=true"], "etcd.external.endpoint is required"),
        (["wal.nats.external.enabled=true"], "wal.nats.external.servers is required"),
        (["spark.external.enabled=true"], "spark.external.masterUrl is required"),
        (["wal.backend=kafka"], "wal.backend must be nats or local"),
        (["s3.external.enabled=true", "s3.secretAccessKey="], "s3.secretAccessKey (or s3.existingSecret) is required"),
        (["security.tlsMode=1"], "security.tlsSecret is required with security.tlsMode 1 or 2"),
        (["security.internalTls.enabled=true"], "security.internalTls.secret is required with security.internalTls.enabled"),
    ],
)
def test_missing_required_values_fail_the_render(renderer: Renderer, sets: list[str], message: str) -> None:
    with pytest.raises(RenderError, match=re.escape(message)):
        renderer.template(sets=sets)


# The keys whose values are Kubernetes structures passed through as they are (documented by Kubernetes).
_PASSTHROUGH = {"resources", "podSecurityContext", "securityContext", "nodeSelector", "tolerations", "affinity",
                "annotations", "imagePullSecrets", "extraEnv"}


def test_values_are_documented_key_by_key() -> None:
    """Every key of values.yaml has a comment right above it, or is inside a Kubernetes structure."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    parents: list[tuple[int, str]] = []
    undocumented = []
    for i, line in enumerate(lines):
        m = re.match(r"^( *)([A-Za-z][A-Za-z0-9]*):", line)
        if not m:
            continue
        indent, key = len(m.group(1)), m.group(2)
        while parents and parents[-1][0] >= indent:
            parents.pop()
        path = [k for _, k in parents] + [key]
        parents.append((indent, key))
        if any(p in _PASSTHROUGH for p in path[:-1]):
            continue
        if not lines[i - 1].strip().startswith("#"):
            undocumented.append(".".join(path))
    assert not undocumented, f"values.yaml keys without a comment above them: {undocumented}"
    # And every key is one the chart uses.
    text = "\n".join(p.read_text() for p in (CHART / "templates").rglob("*") if p.is_file())
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    unused = [k for k in _leaf_paths(values) if f".Values.{k}" not in text and not _used_by_parent(k, text)]
    assert not unused, f"values.yaml keys no template reads: {unused}"


def _leaf_paths(tree: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value and key not in _PASSTHROUGH:
            yield from _leaf_paths(value, f"{path}.")
        else:
            yield path


def _used_by_parent(path: str, text: str) -> bool:
    # A role's keys are read through `$values := index $root.Values $role` in _helpers.tpl.
    head, _, rest = path.partition(".")
    return head in ROLES and f"$values.{rest}" in text
