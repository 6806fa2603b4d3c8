"""The Grafana dashboard (deploy/grafana/strata.json) charts metrics the roles really export."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import REGISTRY

import coordinator.metrics
import proxy.request_metrics
import querynode.metrics
import streamingnode.metrics
from tests.harness import REPO

DASHBOARD = REPO / "deploy" / "grafana" / "strata.json"
# Where the scrape-time gauges are named (GaugeSample(name=...)).
GAUGE_SOURCES = [Path(m.__file__ or "") for m in (coordinator.metrics, querynode.metrics, streamingnode.metrics)]
GAUGE_SOURCES.append(REPO / "common" / "etcd" / "session.py")
_NAME = re.compile(r"\b((?:milvus|strata)_[a-z0-9_]+)")


def _exported() -> set[str]:
    assert proxy.request_metrics.REQ_COUNT is not None  # imported for its metrics
    names = {m.name for m in REGISTRY.collect()}
    for source in GAUGE_SOURCES:
        names |= set(re.findall(r'name="((?:milvus|strata)_[a-z0-9_]+)"', source.read_text()))
    return names


def _base(series: str) -> str:
    for suffix in ("_bucket", "_sum", "_count", "_total"):
        if series.endswith(suffix):
            return series.removesuffix(suffix)
    return series


def test_every_panel_queries_a_metric_the_roles_export() -> None:
    doc = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in doc["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 15
    exported = _exported()
    used = {_base(name) for e in exprs for name in _NAME.findall(e)}
    assert used and used <= exported, sorted(used - exported)
    # Panels do not overlap on the grid.
    cells = set()
    for p in doc["panels"]:
        g = p["gridPos"]
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                assert (x, y) not in cells, p["title"]
                cells.add((x, y))
